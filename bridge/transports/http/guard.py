"""HTTP request checks that come before any MCP: DNS rebinding, media types.

A web page the user visits can make their browser send requests to a server on
127.0.0.1 by pointing an attacker-controlled DNS name at it (DNS rebinding).
Two checks stop that (PROTOCOL.md §5.2; conformance ``dns-rebinding-protection``):

* ``Host`` must name a loopback host (``127.0.0.1``, ``localhost``, ``[::1]``,
  any port) or one the operator allowed; otherwise **421**.
* ``Origin``, when present, must be a loopback origin or one the operator
  allowed; otherwise **403**. Non-browser clients send no Origin.

Also here: the ``Content-Type`` and ``Accept`` checks of a POST. Every function
is pure: headers in, a :class:`Rejection` (or ``None``) out. Nothing here reads
bodies, sessions or MCP messages.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Final, final
from urllib.parse import urlsplit

import attrs

__all__ = ["LOOPBACK_HOSTS", "Guard", "Rejection", "accepts", "json_content_type"]

LOOPBACK_HOSTS: Final = frozenset({"127.0.0.1", "localhost", "::1"})
_HOST_PORT = re.compile(
    r"^(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<name>[^:\[\]]+))(?::\d+)?$"
)


@final
@attrs.frozen
class Rejection:
    """Why a request is refused: the HTTP status and a short reason."""

    status: int
    reason: str


def _hostname(host_header: str) -> str | None:
    found = _HOST_PORT.match(host_header.strip())
    if found is None:
        return None
    return (found["v6"] or found["name"]).lower()


@final
class Guard:
    """The Host and Origin policy of one server.

    Args:
        allowed_hosts: extra host names (no port) to accept in ``Host``.
        allowed_origins: extra origins (``scheme://host[:port]``) to accept.
    """

    def __init__(
        self, *, allowed_hosts: Iterable[str] = (), allowed_origins: Iterable[str] = ()
    ) -> None:
        self.allowed_hosts = frozenset(h.lower().strip("[]") for h in allowed_hosts)
        self.allowed_origins = frozenset(
            o.strip().lower().rstrip("/") for o in allowed_origins
        )

    def check(self, headers: Mapping[str, str]) -> Rejection | None:
        """Refuse a request whose ``Host`` or ``Origin`` is not ours."""
        host = headers.get("host")
        name = _hostname(host) if host is not None else None
        if name is None or not (name in LOOPBACK_HOSTS or name in self.allowed_hosts):
            return Rejection(421, "Invalid Host header")
        origin = headers.get("origin")
        if origin is not None and not self._origin_ok(origin):
            return Rejection(403, "Invalid Origin header")
        return None

    def _origin_ok(self, origin: str) -> bool:
        normalised = origin.strip().lower().rstrip("/")
        if normalised in self.allowed_origins:
            return True
        try:
            parts = urlsplit(normalised)
            parts.port  # noqa: B018 - raises ValueError on a malformed port
        except ValueError:
            return False
        return (
            parts.scheme in ("http", "https")
            and parts.hostname in LOOPBACK_HOSTS
            and not parts.path
            and parts.username is None
        )


def json_content_type(headers: Mapping[str, str]) -> bool:
    """Whether ``Content-Type`` is ``application/json`` (parameters allowed)."""
    value = headers.get("content-type", "")
    return value.split(";", 1)[0].strip().lower() == "application/json"


def accepts(headers: Mapping[str, str], media_type: str) -> bool:
    """Whether ``Accept`` admits ``media_type`` (no header admits anything)."""
    value = headers.get("accept")
    if value is None:
        return True
    kind = media_type.split("/", 1)[0]
    for item in value.split(","):
        offered = item.split(";", 1)[0].strip().lower()
        if offered in (media_type, f"{kind}/*", "*/*"):
            return True
    return False

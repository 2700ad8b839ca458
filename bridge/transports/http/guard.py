"""HTTP request checks that come before any MCP: DNS rebinding, media types.

A web page the user visits can make their browser send requests to a server on
127.0.0.1 by pointing an attacker-controlled DNS name at it (DNS rebinding).
Two checks stop that (PROTOCOL.md §5.2; conformance ``dns-rebinding-protection``):

* ``Host`` must name a loopback host (``127.0.0.1``, ``localhost``, ``[::1]``,
  any port) or one the operator allowed; otherwise **421**.
* ``Origin``, when present, must name this server itself — an ``http`` or
  ``https`` origin whose host the ``Host`` check accepts and whose port is the
  port the server listens on — or be one the operator allowed
  (``--allow-origin``); otherwise **403**. Non-browser clients send no Origin.
  A page served by another local web app (another port) is another origin:
  it cannot drive the server from the user's browser. Until the guard knows
  its port (:meth:`Guard.serve_at`), only allowed origins pass.

An origin the operator allowed is one whose pages may use the server from a
browser, which asks first (a *preflight*: ``OPTIONS`` with
``Access-Control-Request-Method``) and reads an answer only if it names the
origin: :meth:`Guard.cross_origin` is that origin, and :func:`cors_headers`
what each answer to it carries (the ``Mcp-Session-Id`` a 2025-11-25 client
must read back, among them). Without them, ``--allow-origin`` let a page
send nothing a browser sends (a JSON POST always asks first).

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
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}
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
        port: the port the server listens on (its own origins name it); see
            :meth:`serve_at`.
    """

    def __init__(
        self,
        *,
        allowed_hosts: Iterable[str] = (),
        allowed_origins: Iterable[str] = (),
        port: int | None = None,
    ) -> None:
        self.allowed_hosts = frozenset(h.lower().strip("[]") for h in allowed_hosts)
        self.allowed_origins = frozenset(
            o.strip().lower().rstrip("/") for o in allowed_origins
        )
        self.port = port

    def serve_at(self, port: int) -> None:
        """The server listens on ``port`` (known once bound, for port 0)."""
        self.port = port

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

    def cross_origin(self, headers: Mapping[str, str]) -> str | None:
        """The request's ``Origin`` if the operator allowed it (for CORS),
        as the browser sent it; None otherwise."""
        origin = headers.get("origin")
        if origin is None:
            return None
        return origin if _normalised(origin) in self.allowed_origins else None

    def _origin_ok(self, origin: str) -> bool:
        normalised = _normalised(origin)
        if normalised in self.allowed_origins:
            return True
        try:
            parts = urlsplit(normalised)
            port = parts.port  # raises ValueError on a malformed port
        except ValueError:
            return False
        if parts.scheme not in _DEFAULT_PORTS or parts.path or parts.username:
            return False
        host = parts.hostname
        if not (host in LOOPBACK_HOSTS or host in self.allowed_hosts):
            return False
        return (
            self.port is not None
            and (port or _DEFAULT_PORTS[parts.scheme]) == self.port
        )


def _normalised(origin: str) -> str:
    return origin.strip().lower().rstrip("/")


CORS_METHODS: Final = "GET, POST, DELETE"
CORS_HEADERS: Final = (
    "Accept, Authorization, Content-Type, Last-Event-ID, Mcp-Method, Mcp-Name, "
    "Mcp-Protocol-Version, Mcp-Session-Id"
)
"""The request headers an allowed page may send (MCP's and HTTP's own)."""
CORS_EXPOSED: Final = "Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate"
"""The response headers a page reads: the session, its version, a challenge."""
CORS_MAX_AGE: Final = "600"


def cors_headers(origin: str, *, preflight: bool = False) -> list[tuple[str, str]]:
    """The headers an answer to allowed ``origin`` carries; a preflight's
    also say what the page may send."""
    headers = [
        ("access-control-allow-origin", origin),
        ("vary", "Origin"),
    ]
    if preflight:
        return [
            *headers,
            ("access-control-allow-methods", CORS_METHODS),
            ("access-control-allow-headers", CORS_HEADERS),
            ("access-control-max-age", CORS_MAX_AGE),
        ]
    return [*headers, ("access-control-expose-headers", CORS_EXPOSED)]


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

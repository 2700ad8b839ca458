"""What our HTTP client transport knows about its connection. Sans-IO.

:class:`ConnectionState` follows the messages the transport carries and keeps
what decides the headers of the next HTTP request:

* the protocol version: a request's 2026-07-28 ``_meta`` envelope sets it (so
  every modern POST repeats its own envelope's version), an ``initialize``
  result sets the negotiated one, and a new ``initialize`` clears it;
* the 2025-11-25 ``Mcp-Session-Id`` the server issued with that result;
* each listed tool's ``x-mcp-header`` map, from the ``tools/list`` results
  (a tool whose annotations are invalid gets none: clients drop it).

It does no I/O and never waits; ``http_client`` feeds it and sends.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, cast, final

import httpx

from bridge.jsonrpc.messages import Message, Notification, Request
from runtime.errors import RemoteProtocolError

from ._http_wire import JSON, SSE
from .headers import (
    HeaderMap,
    envelope_version,
    header_map,
    invalid_header_reason,
    modern_headers,
    visible_ascii,
)

__all__ = ["HANDSHAKE_VERSIONS", "ConnectionState", "is_cancel", "session_id_of"]

HANDSHAKE_VERSIONS: Final = frozenset(
    {"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}
)


@final
class ConnectionState:
    """The version, session and tool header maps of one client connection.

    Args:
        extra: headers sent with every request (e.g. ``Authorization``).
    """

    def __init__(self, extra: Mapping[str, str] | None = None) -> None:
        self.extra = dict(extra or {})
        self.version: str | None = None
        self.session_id: str | None = None
        self.tools: dict[str, HeaderMap] = {}

    @property
    def modern(self) -> bool:
        """Whether messages go out the 2026-07-28 way."""
        return self.version is not None and self.version not in HANDSHAKE_VERSIONS

    def post_headers(self, message: Message) -> dict[str, str]:
        """The headers of the POST carrying ``message`` (noting its envelope)."""
        headers = {**self.extra, "Content-Type": JSON, "Accept": f"{JSON}, {SSE}"}
        if isinstance(message, Request) and message.method == "initialize":
            self.version = self.session_id = None  # a new handshake
        self.version = envelope_version(message) or self.version
        if self.modern and isinstance(message, Request | Notification):
            assert self.version is not None
            headers.update(modern_headers(message, self.version, self.tools))
            return headers
        return self._session_headers(headers)

    def get_headers(self, last_event_id: str | None = None) -> dict[str, str]:
        """The headers of a GET: the standalone stream, or a resumption."""
        headers = self._session_headers({**self.extra, "Accept": SSE})
        if last_event_id is not None:
            headers["Last-Event-ID"] = last_event_id
        return headers

    def _session_headers(self, headers: dict[str, str]) -> dict[str, str]:
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
        if self.version is not None:
            headers["MCP-Protocol-Version"] = self.version
        return headers

    def answered(self, method: str, result: Any) -> None:
        """Learn from the result of our ``method`` request."""
        if not isinstance(result, dict):
            return
        result = cast(dict[str, Any], result)
        version: Any = result.get("protocolVersion")
        if (
            method == "initialize"
            and isinstance(version, str)
            and visible_ascii(version)
        ):
            # Anything else is no version (the handshake refuses it), and
            # could not go out in a header.
            self.version = version
        elif method == "tools/list" and isinstance(result.get("tools"), list):
            for tool in cast(list[Any], result["tools"]):
                self._learn(tool)

    def _learn(self, tool: Any) -> None:
        if not isinstance(tool, dict):
            return
        name: Any = cast(dict[str, Any], tool).get("name")
        schema: Any = cast(dict[str, Any], tool).get("inputSchema")
        if not isinstance(name, str):
            return
        if invalid_header_reason(schema) is None:
            self.tools[name] = header_map(schema)
        else:
            self.tools.pop(name, None)  # the client drops it; never mirror it


def session_id_of(response: httpx.Response) -> str | None:
    """The ``Mcp-Session-Id`` a server's response gives, if any.

    Raises:
        RemoteProtocolError: it is not visible ASCII, as the spec says it
            must be (it goes back in every request's headers).
    """
    session_id = response.headers.get("mcp-session-id")
    if session_id is not None and not visible_ascii(session_id):
        raise RemoteProtocolError(
            f"the server's Mcp-Session-Id {session_id[:64]!r} is not visible "
            f"ASCII (0x21 to 0x7E), as the spec says it must be"
        )
    return session_id


def is_cancel(message: Message) -> bool:
    """Whether ``message`` is ``notifications/cancelled``."""
    return (
        isinstance(message, Notification)
        and message.method == "notifications/cancelled"
    )

"""Which era's path a request takes at ``/mcp``, and the errors that refuse one.

Owns: the ``MCP-Protocol-Version`` routing rule (:func:`header_era`), the
UnsupportedProtocolVersion error naming what the endpoint speaks
(:func:`unsupported_version`), and the refusal of the 2025-11-25 era by an
endpoint that cannot keep its sessions (:func:`sessions_refused`: several
workers sharing a port with no session store).

Does not own: serving either era (:mod:`.legacy`, :mod:`.modern`) or reading
the request (:mod:`.app`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final, Literal

from bridge.jsonrpc.messages import ErrorData, RequestId
from bridge.server.server import HANDSHAKE_VERSIONS
from bridge.transports.headers import UNSUPPORTED_VERSION

from . import asgi as _asgi
from . import modern as _modern_routes
from .asgi import Send

__all__ = [
    "SUPPORTED_VERSIONS",
    "VERSION_HEADER",
    "Era",
    "header_era",
    "refuse_version",
    "sessions_refused",
    "unsupported_version",
]

VERSION_HEADER: Final = "mcp-protocol-version"
SUPPORTED_VERSIONS: Final = (*HANDSHAKE_VERSIONS, *_modern_routes.SUPPORTED)
"""Every ``MCP-Protocol-Version`` the endpoint accepts, oldest first."""

Era = Literal["legacy", "modern"]


def header_era(headers: Mapping[str, str]) -> Era | None:
    """The path a request's ``MCP-Protocol-Version`` selects; None: no path."""
    version = headers.get(VERSION_HEADER)
    if version is None or version in HANDSHAKE_VERSIONS:
        return "legacy"
    return "modern" if version in _modern_routes.SUPPORTED else None


def unsupported_version(
    requested: str, supported: Sequence[str], why: str = ""
) -> ErrorData:
    """The UnsupportedProtocolVersion error for an ``MCP-Protocol-Version``."""
    return ErrorData(
        UNSUPPORTED_VERSION,
        f"Unsupported protocol version: MCP-Protocol-Version is {requested!r}"
        f"{why}; use {', '.join(supported)}",
        {"supported": list(supported), "requested": requested},
    )


def sessions_refused(requested: str | None) -> ErrorData:
    """The error a 2025-11-25-era request gets from an endpoint without sessions.

    The same code and ``data.supported`` as any unsupported version, so a
    client that can speak 2026-07-28 switches to it; the message tells the
    person reading it why and what to change.
    """
    supported = list(_modern_routes.SUPPORTED)
    return ErrorData(
        UNSUPPORTED_VERSION,
        "The 2025-11-25 era is not served here: this server runs several "
        "workers on one port with no store, and a 2025-11-25 session lives in "
        "one worker (sessions across workers need a session store: serve with "
        "--store URL or --durable; or run one worker per port behind sticky "
        f"routing); use {', '.join(supported)}",
        {"supported": supported, "requested": requested or "2025-11-25"},
    )


async def refuse_version(
    send: Send, request_id: RequestId | None, error: ErrorData
) -> None:
    """Answer 400 with ``error`` as a JSON-RPC error response."""
    body = _asgi.error_body(request_id, error)
    await _asgi.respond(send, 400, body, content_type=_asgi.JSON)

"""The 2026-07-28 era: self-contained requests, answered without a session."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from runtime.errors import RequestError

from .jsonrpc import Request
from .session import Session

if TYPE_CHECKING:
    from .server import Server

UNSUPPORTED_PROTOCOL_VERSION = -32022


async def handle(server: Server, request: Request, session: Session) -> Any:
    raise RequestError(
        UNSUPPORTED_PROTOCOL_VERSION,
        "Unsupported protocol version",
        {"supported": [], "requested": "2026-07-28"},
    )

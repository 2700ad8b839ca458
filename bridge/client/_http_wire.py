"""Plain HTTP for the client transport: responses, bodies and failures.

What ``http_client`` needs from httpx, with no MCP in it: open a streamed
response (a connection failure is :class:`~runtime.errors.PeerUnreachable`),
read a short body or a message's with a bound (:mod:`bridge.http_body`
reads them), and turn an HTTP error status into the exception the caller
sees.

It does not parse JSON-RPC or frame SSE; it says which statuses are worth a
retry (:data:`TRANSIENT`) and retries what it is given (:func:`again`), the
caller deciding what that is.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from typing import Final

import httpx
import trio

from bridge.jsonrpc.messages import INVALID_REQUEST
from bridge.transports.framing import MAX_MESSAGE as MAX_MESSAGE
from runtime.errors import (
    BrokenSessionError,
    PeerError,
    PeerUnreachable,
    RemoteProtocolError,
)

from ..http_body import read_up_to

__all__ = [
    "JSON",
    "SSE",
    "TRANSIENT",
    "again",
    "is_sse",
    "open_response",
    "read_body",
    "read_message",
    "status_error",
]

JSON: Final = "application/json"
SSE: Final = "text/event-stream"
MAX_ERROR_BODY: Final = 64 * 1024
TRANSIENT: Final = frozenset({502, 503, 504})
"""Statuses that say "not now": a balancer with no worker up, a server busy."""


async def again(
    attempt: Callable[[], Awaitable[None]],
    attempts: int,
    delay: float,
    retry_if: Callable[[BrokenSessionError], bool] = lambda _: True,
) -> None:
    """Run ``attempt`` until it does not raise BrokenSessionError, at most
    ``attempts`` times, ``delay`` seconds apart; the last failure, or one
    ``retry_if`` refuses, is raised."""
    for number in range(1, attempts + 1):
        try:
            await attempt()
        except BrokenSessionError as exc:
            if number >= attempts or not retry_if(exc):
                raise
            await trio.sleep(delay)
        else:
            return


def is_sse(response: httpx.Response) -> bool:
    return response.headers.get("content-type", "").startswith(SSE)


@contextlib.asynccontextmanager
async def open_response(
    http: httpx.AsyncClient,
    verb: str,
    url: str,
    headers: Mapping[str, str],
    content: bytes | None = None,
) -> AsyncGenerator[httpx.Response]:
    """A streamed response, closed at the end of the block.

    Raises:
        PeerUnreachable: the server could not be reached.
        BrokenSessionError: it was reached and cut the connection before
            answering.
    """
    request = http.build_request(verb, url, headers=headers, content=content)
    try:
        response = await http.send(request, stream=True)
    except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
        raise PeerUnreachable(
            f"cannot reach the MCP server at {url}: "
            f"{type(exc).__name__}: {exc or 'no detail'}"
        ) from exc
    except httpx.TransportError as exc:  # reached, then cut before it answered
        raise BrokenSessionError(
            f"the MCP server at {url} cut the connection: "
            f"{type(exc).__name__}: {exc or 'no detail'}"
        ) from exc
    try:
        yield response
    finally:
        await response.aclose()


async def read_body(response: httpx.Response) -> bytes:
    """The body of a short answer, bounded (error pages can be large)."""
    body, _ = await read_up_to(response, MAX_ERROR_BODY)
    return body


async def read_message(response: httpx.Response, what: str, limit: int) -> bytes:
    """The whole body of an answer that holds a message, up to ``limit`` bytes.

    Raises:
        RemoteProtocolError: the body is longer (reading stops there).
    """
    body, whole = await read_up_to(response, limit)
    if not whole:
        raise RemoteProtocolError(
            f"{what} answered a message over {limit:,} bytes (the client's max_message)"
        )
    return body


def status_error(
    what: str, response: httpx.Response, body: bytes, session_id: str | None
) -> Exception:
    """The exception for an HTTP error answering ``what`` (e.g. ``POST url (m)``).

    A 404 while we hold a 2025-11-25 session means the server ended it. A
    413 is the server's refusal of a request too large for it (a
    :class:`~runtime.errors.PeerError`, ``-32600``, as its JSON-RPC refusal
    would be), not a broken protocol.
    """
    status = response.status_code
    if status == 404 and session_id is not None:
        return BrokenSessionError(
            f"{what}: the server no longer knows session {session_id} "
            f"(HTTP 404): it expired or was ended; connect again"
        )
    if status == 413:
        size = response.request.headers.get("content-length", "?")
        if size.isdecimal():
            size = f"{int(size):,}"
        return PeerError(
            INVALID_REQUEST,
            f"{what}: the request is {size} bytes, more than the server takes "
            f"(HTTP 413)",
        )
    text = body.decode(errors="replace").strip()[:200]
    reason = f" {response.reason_phrase}" if response.reason_phrase else ""
    return RemoteProtocolError(
        f"{what} failed: HTTP {status}{reason}" + (f": {text}" if text else "")
    )

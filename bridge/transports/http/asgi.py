"""The few ASGI moves the MCP endpoint makes: read a bounded body, answer, stream.

ASGI (the interface ASGI servers serve) hands an app a ``scope`` dict and two
callables; this module wraps them so the MCP code reads as HTTP: lower-cased
headers, a body read with a size limit, a plain response, and an SSE response
that writes events. :func:`wait_disconnect` returns when the client goes away
(the server then delivers ``http.disconnect``), so callers can cancel what was
only for that client.

It holds no MCP logic and no session state.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Final, final

import pydantic_core
import trio

from bridge.jsonrpc.messages import ErrorData, RequestId
from bridge.transports import sse as _sse

__all__ = [
    "BodiesBusy",
    "BodyBudget",
    "BodyTimeout",
    "BodyTooLarge",
    "Disconnected",
    "Receive",
    "Scope",
    "Send",
    "SseResponse",
    "error_body",
    "header_map",
    "read_body",
    "respond",
    "wait_disconnect",
]

Scope = Mapping[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

JSON: Final = "application/json"
SSE_HEADERS: Final = (
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache, no-transform"),
    # Buffering proxies (nginx) would hold events back until the response ends.
    (b"x-accel-buffering", b"no"),
)


class Disconnected(Exception):
    """The client went away while we were reading its request."""


class BodyTooLarge(Exception):
    """The request body exceeds the configured limit."""


class BodyTimeout(Exception):
    """The request body did not arrive in time (a stalled client)."""


def header_map(scope: Scope) -> dict[str, str]:
    """Request headers by lower-case name; repeated headers joined with ", "."""
    out: dict[str, str] = {}
    for raw_name, raw_value in scope.get("headers", ()):
        name = bytes(raw_name).decode("latin-1").lower()
        value = bytes(raw_value).decode("latin-1")
        out[name] = f"{out[name]}, {value}" if name in out else value
    return out


@final
class BodyBudget:
    """The bytes of request bodies being received at once, on all of an
    app's connections (``HttpLimits.bodies_bytes``)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0

    def take(self, size: int) -> None:
        """Count ``size`` more bytes, or raise :class:`BodiesBusy`."""
        if self.used + size > self.limit:
            raise BodiesBusy
        self.used += size

    def give(self, size: int) -> None:
        self.used -= size


class BodiesBusy(Exception):
    """Other request bodies being received take the whole budget (503)."""


def estimated_memory(data: bytes) -> int:
    """About the bytes of memory a request takes while it is answered: its
    body, kept beside what is read from it, and its JSON once read into
    Python values, reckoned before reading it from what each kind of value
    costs (CPython 3.11, measured on pydantic-core's reader): an object or
    array about 64 bytes, each item or member 32 more (a pointer and a
    number), each string 24 (half per quote), each member's key slot 40. A
    string's characters take 1 byte each while all are ASCII, 2 when one is
    not, 4 when one is past U+FFFF (PEP 393): a body holding an escape
    (``\\u...``, which may make one) or a character past U+FFFF counts its text
    at 4 bytes a byte, one with other non-ASCII at 2. A JSON text of text
    takes about its size; one of ``{},`` 24 times it, reckoned 33; 4 MiB of
    ASCII ending in one emoji, 16 MiB. It errs high (braces and commas
    inside strings count too), never more than a few times low; each scan
    runs at memory speed."""
    if b"\\u" in data or any(lead in data for lead in _ASTRAL_LEADS):
        width = 4
    else:
        width = 1 if data.isascii() else 2
    return (
        (1 + width) * len(data)
        + 64 * (data.count(b"{") + data.count(b"["))
        + 32 * data.count(b",")
        + 12 * data.count(b'"')
        + 40 * data.count(b":")
    )


_ASTRAL_LEADS: Final = b"\xf0\xf1\xf2\xf3\xf4"
"""The first bytes of UTF-8's four-byte sequences: characters past U+FFFF."""


async def read_body(
    receive: Receive,
    headers: Mapping[str, str],
    limit: int,
    timeout: float = float("inf"),
    budget: BodyBudget | None = None,
) -> bytes:
    """The whole request body, refusing more than ``limit`` bytes, or one that
    takes more than ``timeout`` seconds to arrive, or one whose bytes, as
    they come, would take ``budget`` past its limit. (Not its declared
    length at once: 16 connections declaring 4 MiB and sending a byte each,
    3 KB in all, took a 64 MiB budget and refused every other POST for the
    body timeout, again and again.)

    Raises:
        BodiesBusy: the budget has no room for this body.
        BodyTooLarge: ``Content-Length`` or the bytes read exceed ``limit``.
        BodyTimeout: the body was not all there after ``timeout`` seconds.
        Disconnected: the client left first.
    """
    declared = headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge
    counted = _Counted(budget)
    try:
        if timeout == math.inf:  # (a cancel scope costs a few µs per request)
            return await _read_body(receive, limit, counted)
        with trio.move_on_after(timeout):
            return await _read_body(receive, limit, counted)
        raise BodyTimeout
    finally:
        counted.release()


@final
class _Counted:
    """What one body has taken of a budget (nothing without one)."""

    def __init__(self, budget: BodyBudget | None) -> None:
        self.budget = budget
        self.taken = 0

    def up_to(self, size: int) -> None:
        if self.budget is not None and size > self.taken:
            self.budget.take(size - self.taken)
            self.taken = size

    def release(self) -> None:
        if self.budget is not None:
            self.budget.give(self.taken)
            self.taken = 0


async def _read_body(receive: Receive, limit: int, counted: _Counted) -> bytes:
    chunks = bytearray()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise Disconnected
        chunks += message.get("body", b"")
        if len(chunks) > limit:
            raise BodyTooLarge
        counted.up_to(len(chunks))
        if not message.get("more_body", False):
            return bytes(chunks)


async def wait_disconnect(receive: Receive) -> None:
    """Return once the client has gone away (after the body was read)."""
    while (await receive())["type"] != "http.disconnect":
        pass


async def until_disconnect(
    receive: Receive,
    body: Callable[[], Awaitable[None]],
    *,
    quiet: float = math.inf,
    beat: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """Run ``body()``; cancel it if the client goes away.

    ``beat()`` is called every ``quiet`` seconds meanwhile, by the task that
    watches for the disconnect (a heartbeat costs a request no task of its
    own).
    """
    async with trio.open_nursery() as nursery:

        async def watch() -> None:
            if beat is None:
                await wait_disconnect(receive)
            else:
                while True:
                    with trio.move_on_after(quiet):
                        await wait_disconnect(receive)
                        break
                    await beat()
            nursery.cancel_scope.cancel()

        nursery.start_soon(watch)
        await body()
        nursery.cancel_scope.cancel()


def error_body(request_id: RequestId | None, error: ErrorData) -> bytes:
    """A JSON-RPC error response, compact; without ``id`` when it is unknown.

    JSON-RPC says ``"id": null`` there, but the MCP schemas type ``id`` as a
    string or number (and optional), so null fails their validation.
    """
    body: dict[str, Any] = {"jsonrpc": "2.0", "error": error.to_json()}
    if request_id is not None:
        body["id"] = request_id
    return pydantic_core.to_json(body)


def _raw(headers: Iterable[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    return [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers]


async def respond(
    send: Send,
    status: int,
    body: bytes = b"",
    *,
    content_type: str | None = None,
    headers: Iterable[tuple[str, str]] = (),
) -> None:
    """A complete response."""
    raw = _raw(headers)
    if content_type is not None:
        raw.append((b"content-type", content_type.encode()))
    raw.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body, "more_body": False})


@final
class SseResponse:
    """A ``200 text/event-stream`` response, written event by event."""

    def __init__(self, send: Send, headers: Iterable[tuple[str, str]] = ()) -> None:
        self._send = send
        self._headers = _raw(headers)
        self._held = b""
        self.started = False
        self.ended = False

    async def start(self) -> None:
        if not self.started:
            self.started = True
            headers = [*SSE_HEADERS, *self._headers]
            await self._send(
                {"type": "http.response.start", "status": 200, "headers": headers}
            )

    async def event(
        self,
        data: bytes | str,
        *,
        id: str | None = None,
        retry: int | None = None,
        last: bool = False,
    ) -> None:
        """One ``event: message`` (or, with empty data, a priming event);
        ``last`` ends the response in the same write."""
        name = "message" if data else None
        await self._write(_sse.encode(data, event=name, id=id, retry=retry), last)

    async def comment(self) -> None:
        """An SSE comment (clients ignore it): a heartbeat on a quiet stream,
        so that a dead peer is noticed by the failed write."""
        await self._write(b": keep-alive\n\n")

    def prime(self, id: str, retry: int | None) -> None:
        """Hold a priming event (no data; an ``id`` and a ``retry``).

        It goes out first, in the same body write as the next event, or alone
        at :meth:`flush` or :meth:`end`: when the first message is ready at
        once, the client gets both in one write instead of two.
        """
        self._held = _sse.encode("", id=id, retry=retry)

    async def flush(self) -> None:
        """Send a held priming event now."""
        if self._held:
            await self._write(b"")

    async def open(self) -> None:
        """Send the response's head now, with a held priming event if any:
        the client (and a proxy in front, whose timeout counts from the
        request) sees the stream accepted before its first event, however
        late that comes. An ASGI server may hold ``http.response.start``
        until the first body write (ours does), so this is an empty one."""
        if not self.started:
            await self._write(b"")

    async def _write(self, frame: bytes, last: bool = False) -> None:
        if self.ended:
            return
        await self.start()
        body, self._held = self._held + frame, b""
        self.ended = last
        await self._send(
            {"type": "http.response.body", "body": body, "more_body": not last}
        )

    async def end(self) -> None:
        await self.flush()
        await self.start()  # an empty stream still gets its headers
        if not self.ended:
            self.ended = True
            await self._send(
                {"type": "http.response.body", "body": b"", "more_body": False}
            )

"""The 2026-07-28 side of the ``/mcp`` endpoint: one self-contained POST at a time.

A modern request carries everything it needs (``_meta`` envelope, headers), so
there is no session: the POST's own task runs the request
(:func:`bridge.server.modern.respond`) and writes what it sends onto this POST's
response (:class:`_ResponseStream`):

* the response alone → ``application/json``, with the HTTP status its error
  code maps to (:func:`~bridge.transports.headers.http_status`);
* a notification first (progress, logs), or nothing for
  ``HttpLimits.heartbeat`` seconds → ``text/event-stream``: the
  notifications (and a comment after each quiet heartbeat, which keeps a
  quiet call's connection open through a proxy), then the response;
* a server→client *request* cannot be sent: a call that needs the client
  returns an InputRequiredResult instead.

Closing the HTTP stream cancels the request (2026 semantics). Before any of
this, the header ladder (``_ladder``) runs, and a request without the
``_meta`` envelope is refused (-32602): on this path every request is
self-contained, so none may fall back to handshake-era handling (an
``initialize`` here is not a session). ``subscriptions/listen`` is answered
here, as a long-lived SSE stream of list-change notifications, each tagged with
the subscription id; a comment goes out after ``HttpLimits.heartbeat`` quiet
seconds (a dead peer is noticed by the failed write), and the stream ends
after ``HttpLimits.max_stream_seconds`` (the client listens again).
Notifications POSTed by the client are accepted (202) and dropped: there is no
session for them to affect.

What a modern request *means* is the business of :mod:`bridge.server.modern`.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any, Final, final

import trio

from bridge.jsonrpc.errors import error_data
from bridge.jsonrpc.messages import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    ErrorData,
    ErrorResponse,
    Message,
    Notification,
    Request,
    RequestId,
    Response,
    dumps,
)
from bridge.jsonrpc.tap import tap_for
from bridge.server import modern as _modern
from bridge.server import tasks as _tasks
from bridge.server.changes import Listen, modern_notification
from bridge.transports import headers as _ladder
from runtime.errors import RequestError
from runtime.tools import Tool

from . import asgi as _asgi
from .asgi import Receive, Send, SseResponse
from .config import HttpLimits

if TYPE_CHECKING:
    from bridge.server.changes import Change
    from bridge.server.server import Server
    from runtime.principal import Principal

__all__ = ["SUPPORTED", "has_envelope", "post"]

SUPPORTED: Final = ("2026-07-28",)


async def _error(send: Send, request_id: RequestId | None, error: ErrorData) -> None:
    body = _asgi.error_body(request_id, error)
    status = _ladder.http_status(error.code)
    await _asgi.respond(send, status, body, content_type=_asgi.JSON)


async def post(
    server: Server,
    headers: Mapping[str, str],
    message: Message,
    receive: Receive,
    send: Send,
    limits: HttpLimits | None = None,
    *,
    principal: Principal | None = None,
) -> None:
    """Answer one modern POST (the body is already parsed into ``message``),
    made by ``principal`` (on a server that checks tokens)."""
    if isinstance(message, Notification):
        await _asgi.respond(send, 202)
        return
    if not isinstance(message, Request):
        error = ErrorData(INVALID_REQUEST, "Invalid request: expected a request")
        await _error(send, None, error)
        return
    lookup = functools.partial(_header_params, server)
    problem = _no_envelope(message) or _ladder.check(
        headers, message, SUPPORTED, lookup
    )
    if problem is not None:
        await _error(send, message.id, problem)
    elif message.method == "subscriptions/listen":
        await _listen(server, message, receive, send, limits or HttpLimits())
    else:
        heartbeat = (limits or HttpLimits()).heartbeat
        await _answer(server, message, principal, receive, send, heartbeat)


_ENVELOPE: Final = (_ladder.PROTOCOL_VERSION, _ladder.CLIENT_CAPABILITIES)


def _missing(request: Request) -> list[str]:
    """The envelope keys ``params._meta`` of ``request`` lacks."""
    meta: Any = (request.params or {}).get("_meta")
    if not isinstance(meta, Mapping):
        return list(_ENVELOPE)
    return [key for key in _ENVELOPE if key not in meta]


def has_envelope(message: Message) -> bool:
    """Whether ``message`` is a request carrying the 2026-07-28 envelope."""
    return isinstance(message, Request) and not _missing(message)


def _no_envelope(request: Request) -> ErrorData | None:
    missing = _missing(request)
    if not missing:
        return None
    return ErrorData(
        INVALID_PARAMS,
        f"params._meta is missing the required envelope key(s): {', '.join(missing)}",
    )


def _header_params(server: Server, tool_name: str) -> Mapping[str, str]:
    tool = server.tools.get(tool_name)
    return {} if tool is None else _tool_header_params(tool)


@functools.lru_cache(maxsize=256)
def _tool_header_params(tool: Tool[Any, Any]) -> Mapping[str, str]:
    # A tool's schema is fixed once defined; building it is not free.
    return _ladder.header_params(tool.input_schema)


# --- one request ----------------------------------------------------------------------


async def _answer(
    server: Server,
    request: Request,
    principal: Principal | None,
    receive: Receive,
    send: Send,
    heartbeat: float,
) -> None:
    stream = _ResponseStream(send)
    tap = tap_for(_modern, "http")  # observability (no session: one per request)

    async def run() -> None:
        reply: Response | ErrorResponse
        with nullcontext() if tap is None else tap.incoming(request):
            try:
                result = await _tasks.respond(
                    server, request, stream.notify, principal=principal
                )
            except Exception as exc:
                reply = ErrorResponse(request.id, error_data(exc))
            else:
                reply = Response(request.id, result)
        if tap is not None:
            tap.answered(request.id, reply)
        await stream.answer(reply)

    await _asgi.until_disconnect(receive, run, quiet=heartbeat, beat=stream.keep_alive)


@final
class _ResponseStream:
    """The response to one modern request: plain JSON, or an SSE stream once a
    notification goes out before the answer."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self._sse = SseResponse(send)
        self._writing = trio.Lock()  # the heartbeat writes beside the call
        self._writes = 0
        self._seen = 0  # writes at the last heartbeat

    async def notify(self, method: str, params: Mapping[str, Any] | None) -> None:
        async with self._writing:
            self._writes += 1
            await self._sse.event(dumps(Notification(method, params)))

    async def keep_alive(self) -> None:
        """At each heartbeat: an SSE comment if nothing was sent since the
        last, so a call quiet for long is answered as a stream, which a
        proxy's idle timeout does not cut (and a dead peer is noticed by the
        failed write)."""
        async with self._writing:  # checked here: never after the answer
            if self._writes == self._seen:
                await self._sse.comment()
            self._seen = self._writes

    async def answer(self, message: Response | ErrorResponse) -> None:
        async with self._writing:
            self._writes += 1
            await self._answer(message)

    async def _answer(self, message: Response | ErrorResponse) -> None:
        if self._sse.started:
            await self._sse.event(dumps(message), last=True)
            return
        status = 200
        if isinstance(message, ErrorResponse):
            status = _ladder.http_status(message.error.code)
        body = dumps(message)
        await _asgi.respond(self._send, status, body, content_type=_asgi.JSON)


# --- subscriptions/listen -------------------------------------------------------------


async def _listen(
    server: Server, request: Request, receive: Receive, send: Send, limits: HttpLimits
) -> None:
    try:
        listen = Listen.from_request(request, server.limits)
    except RequestError as exc:
        await _error(send, request.id, error_data(exc))
        return
    sse = SseResponse(send)
    with server.listen() as changes:
        await sse.event(dumps(Notification(*listen.acknowledged())))
        gone = trio.Event()
        async with trio.open_nursery() as nursery:

            async def cancel_on_disconnect() -> None:
                await _asgi.wait_disconnect(receive)
                gone.set()
                nursery.cancel_scope.cancel()

            nursery.start_soon(cancel_on_disconnect)
            with trio.move_on_after(limits.max_stream_seconds):
                await _relay(changes, listen, sse, limits.heartbeat)
            nursery.cancel_scope.cancel()
        if not gone.is_set():
            await sse.end()  # its lifetime is over


async def _relay(
    changes: trio.MemoryReceiveChannel[Change],
    listen: Listen,
    sse: SseResponse,
    heartbeat: float,
) -> None:
    while True:
        change: Change | None = None
        with trio.move_on_after(heartbeat):
            change = await changes.receive()
        if change is None:
            await sse.comment()
        elif (note := modern_notification(change, listen)) is not None:
            await sse.event(dumps(Notification(*note)))

"""A JSON-RPC session over any transport, in both directions at once.

The session owns request-id correlation, the receive loop, one task per
incoming request (unless the handler takes it on with no task:
:class:`ImmediateHandler`), cancellation in both directions, timeouts on the
requests it sends, ``ping``, and the single point where a handler's exception
becomes an error reply (``bridge._errors``). It is deliberately not MCP-aware:
methods are strings and params are dicts; the MCP server and client sit on top.

Rules:

* Our request ids are ints from a counter; a response id ``"7"`` matches ``7``.
  A ``notifications/cancelled`` for ``"7"`` cancels incoming request ``7`` (and
  ``7`` cancels ``"7"``); a boolean id matches nothing.
* The pending table is cleaned in ``finally``: a request that times out, is
  cancelled, or whose session breaks never leaks an entry.
* If the caller of :meth:`Session.request` is cancelled or times out, the peer is
  sent ``notifications/cancelled`` (shielded, best effort) and a late reply is
  dropped.
* An incoming ``notifications/cancelled`` cancels the matching handler task (or
  the request a handler took on); no response is sent for it.
* A transport may push frames instead (:class:`PushTransport`: in memory,
  and each POST over HTTP): each is handled as it arrives, in the sender's
  task — a response settles its waiter, a request starts its handler — with
  no receive-loop task between the two sessions. Frames that need awaiting
  (most notifications) queue behind, in order, for the session's own task; so
  does everything after them until that queue is empty. A transport can bound
  that queue by waiting on :meth:`Session.backlog_below` before it pushes.
* Code that never waits: when the transport can send without waiting
  (``send_nowait``: at once in memory; queued for the transport's ``pump``,
  which the session runs, over stdio; stored for the request's stream over
  HTTP), a
  handler may take a request on with no task (:meth:`Session.adopt`) and answer
  it later from the receive path, sending its own requests with
  :meth:`Session.request_nowait` (the reply comes back as a callback, the
  timeout is a :class:`~bridge._timers.Timer`). All such code runs one piece at
  a time: a frame pushed while a frame, a timer or a cancellation is being
  handled is handled after it, never inside it.
* When the transport ends (EOF, disconnect) the peer is gone: every incoming
  request that is waiting on (or later needs) a reply from the peer is
  cancelled; the others may finish for ``drain_timeout`` seconds and their
  replies are written if the transport still takes them; then whatever is
  left is cancelled. Requests we sent without a related incoming request fail
  with :class:`~runtime.errors.BrokenSessionError`.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import logging
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, final

import trio

from runtime.errors import (
    BrokenSessionError,
    ClosedSessionError,
    PeerError,
    RequestTimeout,
)

from ._pending import Callback, Slot
from .errors import error_data
from .messages import (
    INVALID_REQUEST,
    ErrorData,
    ErrorResponse,
    Ignored,
    Invalid,
    Message,
    Notification,
    Request,
    RequestId,
    Response,
    coerce_id,
    parse,
)
from .timers import Timer, Timers
from .transport import Adopted as Adopted
from .transport import Handler as Handler
from .transport import ImmediateHandler as ImmediateHandler
from .transport import PushTransport as PushTransport
from .transport import ReleasingTransport as ReleasingTransport
from .transport import Replies as Replies
from .transport import Transport as Transport

__all__ = [
    "Adopted",
    "Handler",
    "ImmediateHandler",
    "Replies",
    "PushTransport",
    "ReleasingTransport",
    "Session",
    "Transport",
]

log = logging.getLogger("yieldmcp")

_CANCELLED = "notifications/cancelled"
_CLOSED_ERRORS = (
    trio.BrokenResourceError,
    trio.ClosedResourceError,
    BrokenSessionError,
)

T = TypeVar("T")


Parsed = Message | Invalid | Ignored


def _cancel(handle: Adopted | trio.CancelScope) -> None:
    handle.cancel()


@final
class Session:
    """One JSON-RPC connection. Start it with :meth:`run` in a nursery.

    Args:
        transport: moves the bytes.
        handler: answers incoming requests and notifications.
        request_timeout: default seconds to wait for a reply to our requests
            (``None``: wait until cancelled).
        cancel_grace: seconds allowed for sending ``notifications/cancelled``.
        drain_timeout: after the transport ends, seconds to let incoming
            requests that do not need the peer finish.
    """

    def __init__(
        self,
        transport: Transport,
        handler: Handler,
        *,
        request_timeout: float | None = None,
        cancel_grace: float = 1.0,
        drain_timeout: float = 5.0,
    ) -> None:
        self.transport = transport
        self.handler = handler
        self.request_timeout = request_timeout
        self.cancel_grace = cancel_grace
        self.drain_timeout = drain_timeout
        self._ids = itertools.count(1)
        self._pending: dict[RequestId, Slot | Callback] = {}
        self._related: dict[RequestId, RequestId | None] = {}
        self._eof = False
        self._idle: trio.Event | None = None  # while draining: set when idle
        self._incoming: dict[RequestId, trio.CancelScope | Adopted] = {}
        self._nursery: trio.Nursery | None = None
        self._closed = False
        self.broken = trio.Event()
        # Push mode and code that never waits (see the module doc):
        self._backlog: collections.deque[Parsed | None] = collections.deque()
        self._backlogged = trio.Event()
        self._backlog_shrank = trio.Event()
        self._later: collections.deque[tuple[Callable[[Any], object], Any]] = (
            collections.deque()
        )
        self._busy = False
        self._failure: Exception | None = None
        self._timers: Timers | None = None
        self._send_now: Callable[..., None] | None = getattr(
            transport, "send_nowait", None
        )
        begin = getattr(handler, "begin_request", None)
        self._begin: Callable[[Request, Session], bool] | None = (
            begin if self._send_now is not None else None
        )

    # --- running ---------------------------------------------------------------------

    async def run(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Receive until the transport ends; then cancel and fail what is left."""
        transport = self.transport
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                pump = getattr(transport, "pump", None)
                if pump is not None:  # writes what send_nowait queues
                    nursery.start_soon(pump)
                if isinstance(transport, PushTransport):
                    transport.attach(self._push)
                    task_status.started()
                    await self._serve_backlog()
                else:
                    task_status.started()
                    await self._receive_loop()
                await self._drain()
                if pump is not None:
                    await self._flush_pumped()
                nursery.cancel_scope.cancel()
        finally:
            if isinstance(transport, PushTransport):
                transport.detach()
            self._close()

    async def _flush_pumped(self) -> None:
        """Write out what the pump still holds, if the transport takes it."""
        flush = getattr(self.transport, "flush", None)
        if flush is not None:
            with (
                trio.move_on_after(self.cancel_grace),
                contextlib.suppress(*_CLOSED_ERRORS),
            ):
                await flush()

    async def _receive_loop(self) -> None:
        while True:
            try:
                data = await self.transport.receive()
            except (trio.EndOfChannel, *_CLOSED_ERRORS):
                self._eof = True
                return
            await self._dispatch(parse(data))

    async def _drain(self) -> None:
        """The peer is gone: cancel calls that need it, let the others finish."""
        self._eof = True
        for request_id, related in list(self._related.items()):
            handle = self._incoming.get(related) if related is not None else None
            if handle is not None:
                self._cancel_handle(handle)
            elif request_id in self._pending:
                self._fail_pending(
                    request_id, BrokenSessionError("the peer disconnected")
                )
        if self._incoming:
            # A fresh event: the session may have been idle before, between
            # earlier requests, and those times must not end the drain.
            self._idle = idle = trio.Event()
            with trio.move_on_after(self.drain_timeout):
                await idle.wait()

    def _close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.broken.set()
        self._backlog_shrank.set()
        for handle in list(self._incoming.values()):
            if not isinstance(handle, trio.CancelScope):
                self._cancel_handle(handle)  # adopted: no task for trio to cancel
        for request_id in list(self._pending):
            self._fail_pending(
                request_id, BrokenSessionError("the session ended before the reply")
            )
        self.handler.closed(self)

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def peer_gone(self) -> bool:
        """The transport has ended: the peer can no longer answer."""
        return self._eof

    # --- one piece at a time ---------------------------------------------------------

    def _exclusively(self, fn: Callable[[T], object], arg: T) -> None:
        """Run ``fn(arg)``; what arrives meanwhile runs after it, in order."""
        if self._busy:
            self._later.append((fn, arg))
            return
        self._busy = True
        try:
            fn(arg)
            while self._later:
                later, later_arg = self._later.popleft()
                later(later_arg)
        finally:
            self._busy = False

    def _push(self, data: bytes | None) -> None:
        """A frame (None: the end) from a :class:`PushTransport`."""
        try:
            self._exclusively(self._arrive, data)
        except Exception as exc:
            # Our bug, not the sender's: fail this session, as a receive loop would.
            self._later.clear()
            self._failure = exc
            self._backlogged.set()

    def _arrive(self, data: bytes | None) -> None:
        message = None if data is None else parse(data)
        if self._backlog or message is None or not self._dispatch_now(message):
            self._backlog.append(message)
            self._backlogged.set()

    async def _serve_backlog(self) -> None:
        """Handle, in order, the pushed frames that need awaiting; until the end."""
        while True:
            while self._backlog:
                message = self._backlog[0]
                if message is None:
                    self._eof = True
                    return
                await self._dispatch(message)
                self._backlog.popleft()
                self._backlog_shrank.set()
            if self._failure is not None:
                raise self._failure
            self._backlogged = trio.Event()
            await self._backlogged.wait()

    async def backlog_below(self, limit: int) -> None:
        """Wait until fewer than ``limit`` pushed frames wait for the session's
        task, or the session has ended.

        A :class:`PushTransport` fed by a peer it cannot slow down otherwise
        (HTTP POSTs) calls this before each push, so what that peer can queue
        is bounded.
        """
        await trio.lowlevel.checkpoint_if_cancelled()
        while len(self._backlog) >= limit and not self._closed:
            if self._backlog_shrank.is_set():  # one event for every waiter
                self._backlog_shrank = trio.Event()
            await self._backlog_shrank.wait()

    def _cancel_handle(self, handle: trio.CancelScope | Adopted) -> None:
        if isinstance(handle, trio.CancelScope):
            handle.cancel()
        else:
            self._exclusively(_cancel, handle)

    # --- incoming --------------------------------------------------------------------

    async def _dispatch(self, message: Parsed) -> None:
        match message:
            case Notification(method=method) if method != _CANCELLED:
                await self.handler.handle_notification(message, self)
            case Invalid(id=request_id, error=error):
                await self._send_quietly(ErrorResponse(request_id, error), request_id)
            case _:
                self._exclusively(self._dispatch_now, message)

    def _dispatch_now(self, message: Parsed) -> bool:
        """Handle ``message`` without waiting, if it can be (else False)."""
        match message:
            case Request():
                self._start_request(message)
            case Notification(method=method, params=params) if method == _CANCELLED:
                self._cancel_incoming(params or {})
            case Response(id=raw_id, result=result):
                self._settle(raw_id, result=result)
            case ErrorResponse(id=raw_id, error=error):
                if raw_id is not None:
                    self._settle(
                        raw_id, error=PeerError(error.code, error.message, error.data)
                    )
            case Ignored(reason=reason):
                log.debug("ignored a message from the peer: %s", reason)
            case _:
                return False
        return True

    def _start_request(self, request: Request) -> None:
        assert self._nursery is not None
        if request.id in self._incoming:
            error = ErrorData(
                INVALID_REQUEST, f"request id {request.id!r} is already in use"
            )
            self._nursery.start_soon(
                self._send_quietly, ErrorResponse(request.id, error), None
            )
            return
        if self._begin is not None and self._begun(request):
            return
        scope = trio.CancelScope()
        self._incoming[request.id] = scope
        self._nursery.start_soon(self._answer, request, scope)

    def _begun(self, request: Request) -> bool:
        assert self._begin is not None
        try:
            return self._begin(request, self)
        except Exception as exc:
            self.respond_nowait(request.id, error=error_data(exc))
            return True

    async def _answer(self, request: Request, scope: trio.CancelScope) -> None:
        try:
            reply: Message | None = None
            with scope:
                try:
                    result = await self.handler.handle_request(request, self)
                except Exception as exc:
                    reply = ErrorResponse(request.id, error_data(exc))
                else:
                    reply = Response(request.id, result)
            if reply is not None and not scope.cancelled_caught:
                await self._send_quietly(reply, request.id)
        finally:
            self.release(request.id, scope)

    def _cancel_incoming(self, params: Mapping[str, Any]) -> None:
        handle = self._incoming_handle(params.get("requestId"))
        if handle is not None:
            self._cancel_handle(handle)

    def _incoming_handle(self, request_id: object) -> trio.CancelScope | Adopted | None:
        """The incoming request a peer's ``requestId`` names: ``"7"`` names
        request ``7`` and ``7`` names ``"7"``; a boolean names none (``True``
        would alias ``1``)."""
        if isinstance(request_id, bool) or not isinstance(request_id, int | str):
            return None
        handle = self._incoming.get(request_id)
        if handle is None:
            alias = (
                coerce_id(request_id)
                if isinstance(request_id, str)
                else str(request_id)
            )
            if alias is not None and alias != request_id:
                handle = self._incoming.get(alias)
        return handle

    def _settle(
        self,
        raw_id: RequestId,
        *,
        result: Any = None,
        error: BaseException | None = None,
    ) -> None:
        request_id = coerce_id(raw_id)
        entry = self._pending.get(request_id) if request_id is not None else None
        if entry is None:
            return  # a late reply to a cancelled request
        if isinstance(entry, Slot):
            entry.settle(result, error)
            return
        assert request_id is not None
        del self._pending[request_id]
        self._related.pop(request_id, None)
        if entry.close():
            entry.owner.replied(request_id, result, error)

    def _fail_pending(self, request_id: RequestId, error: BaseException) -> None:
        entry = self._pending.get(request_id)
        if isinstance(entry, Slot):
            entry.settle(error=error)
        elif entry is not None:
            self._exclusively(self._settle_error, (request_id, error))

    def _settle_error(self, args: tuple[RequestId, BaseException]) -> None:
        self._settle(args[0], error=args[1])

    def cancel_request(self, request_id: RequestId) -> bool:
        """Cancel the handler of incoming request ``request_id``, if running."""
        handle = self._incoming.get(request_id)
        if handle is None:
            return False
        self._cancel_handle(handle)
        return True

    @property
    def in_flight(self) -> int:
        """How many incoming requests are being handled."""
        return len(self._incoming)

    @property
    def outstanding(self) -> list[RequestId]:
        """Ids of our requests still waiting for a reply."""
        return list(self._pending)

    # --- incoming requests taken on without a task -----------------------------------

    @property
    def immediate(self) -> bool:
        """Whether this session can send without waiting (the ``*_nowait`` methods)."""
        return self._send_now is not None

    def adopt(self, request_id: RequestId, handle: Adopted) -> None:
        """Take incoming request ``request_id`` on, with no task: ``handle`` is
        cancelled if the peer cancels it or leaves. End it with
        :meth:`respond_nowait` and :meth:`release`."""
        self._incoming[request_id] = handle

    def release(
        self, request_id: RequestId, handle: trio.CancelScope | Adopted
    ) -> None:
        """Incoming request ``request_id`` is over (answered or cancelled)."""
        if self._incoming.get(request_id) is handle:
            del self._incoming[request_id]
        if not self._incoming and self._idle is not None:
            self._idle.set()

    def respond_nowait(
        self,
        request_id: RequestId,
        result: Any = None,
        *,
        error: ErrorData | None = None,
    ) -> None:
        """Answer incoming request ``request_id`` now (a gone peer is ignored)."""
        reply = (
            Response(request_id, result)
            if error is None
            else ErrorResponse(request_id, error)
        )
        self._send_nowait_quietly(reply, request_id)

    def request_nowait(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        *,
        owner: Replies,
        related: RequestId | None = None,
        timeout: float | None = None,
    ) -> RequestId:
        """Send a request now; its reply (or failure) goes to ``owner.replied``.

        ``owner.replied`` is called once: with the result, or with a
        :class:`~runtime.errors.PeerError`, a
        :class:`~runtime.errors.RequestTimeout` (the peer was told to cancel) or
        a :class:`~runtime.errors.BrokenSessionError`; never after
        :meth:`cancel_nowait`. Call it only from code the session runs (a
        handler's ``begin_request``, a ``replied``, a timer, a cancel), so a
        reply cannot arrive before this returns.

        Raises:
            ClosedSessionError: the session had already ended.
            BrokenSessionError: the peer is gone, or the transport is closed.
        """
        if self._closed:
            raise ClosedSessionError("the session is closed")
        if self._eof:
            raise BrokenSessionError("the peer disconnected")
        assert self._send_now is not None
        request_id = next(self._ids)
        entry = Callback(method, owner)
        self._pending[request_id] = entry
        self._related[request_id] = related
        try:
            self._send_now(Request(request_id, method, params), related=related)
        except _CLOSED_ERRORS as exc:
            del self._pending[request_id]
            del self._related[request_id]
            if isinstance(exc, BrokenSessionError):
                raise  # the transport's own account of what broke
            raise BrokenSessionError(
                f"could not send {method}: the transport is closed"
            ) from exc
        limit = timeout if timeout is not None else self.request_timeout
        if limit is not None:
            entry.timer = self.call_later(limit, self._time_out, (request_id, limit))
        return request_id

    def _time_out(self, args: tuple[RequestId, float]) -> None:
        request_id, limit = args
        entry = self._pending.get(request_id)
        if not isinstance(entry, Callback):
            return
        self.cancel_nowait(request_id, f"timed out after {limit} s")
        entry.owner.replied(
            request_id,
            None,
            RequestTimeout(f"{entry.method} got no reply within {limit} s"),
        )

    def cancel_nowait(self, request_id: RequestId, reason: str = "cancelled") -> None:
        """Withdraw our request ``request_id``: tell the peer, ignore its reply."""
        entry = self._pending.pop(request_id, None)
        related = self._related.pop(request_id, None)
        if entry is None or not isinstance(entry, Callback) or not entry.close():
            return
        note = Notification(_CANCELLED, {"requestId": request_id, "reason": reason})
        self._send_nowait_quietly(note, related)

    def notify_nowait(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        related: RequestId | None = None,
    ) -> None:
        """Send a notification now (BrokenSessionError if the transport is gone)."""
        assert self._send_now is not None
        try:
            self._send_now(Notification(method, params), related=related)
        except BrokenSessionError:
            raise
        except _CLOSED_ERRORS as exc:
            raise BrokenSessionError(
                f"could not send {method}: the transport is closed"
            ) from exc

    def release_stream_nowait(self, related: RequestId) -> None:
        """:meth:`release_stream`, for a transport that can do it without waiting."""
        release = getattr(self.transport, "release_stream_nowait", None)
        if release is not None:
            release(related)

    def call_later(
        self, seconds: float, callback: Callable[[T], None], arg: T
    ) -> Timer:
        """Call ``callback(arg)`` in ``seconds`` (run like a frame's handling)."""
        if self._timers is None:
            assert self._nursery is not None
            self._timers = Timers(self._exclusively)
            self._nursery.start_soon(self._timers.run)
        return self._timers.call_later(seconds, callback, arg)

    def _send_nowait_quietly(self, message: Message, related: RequestId | None) -> None:
        assert self._send_now is not None
        # try/except, not contextlib.suppress: this runs for every message, and
        # suppress costs an object and two Python calls each time.
        try:  # noqa: SIM105
            self._send_now(message, related=related)
        except _CLOSED_ERRORS:
            pass  # the peer is gone: there is no one to tell

    # --- outgoing --------------------------------------------------------------------

    async def request(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        related: RequestId | None = None,
        timeout: float | None = None,
    ) -> Any:
        """Send a request and wait for its result.

        Raises:
            PeerError: the peer answered with an error object.
            RequestTimeout: no reply within ``timeout`` (the peer was told to
                cancel).
            BrokenSessionError: the session ended first.
            ClosedSessionError: the session had already ended.
        """
        if self._closed:
            raise ClosedSessionError("the session is closed")
        if self._eof:
            await self._peer_gone(related)
        request_id = next(self._ids)
        slot = Slot()
        self._pending[request_id] = slot
        self._related[request_id] = related
        limit = timeout if timeout is not None else self.request_timeout
        message = Request(request_id, method, params)
        try:
            # The timeout covers sending too: over HTTP the whole exchange
            # (POST, reading the answer, resuming it) happens in ``send``.
            if limit is None:
                await self.transport.send(message, related=related)
                await slot.wait()
            else:
                with trio.move_on_after(limit) as timer:
                    await self.transport.send(message, related=related)
                    await slot.wait()
                if timer.cancelled_caught:
                    await self._cancel_remote(
                        request_id, f"timed out after {limit} s", related
                    )
                    raise RequestTimeout(f"{method} got no reply within {limit} s")
        except trio.Cancelled:
            if not slot.done:
                await self._cancel_remote(request_id, "cancelled", related)
            raise
        except BrokenSessionError:
            raise  # the transport's own account of what broke
        except _CLOSED_ERRORS as exc:
            raise BrokenSessionError(
                f"could not send {method}: the transport is closed"
            ) from exc
        finally:
            self._pending.pop(request_id, None)
            self._related.pop(request_id, None)
        if slot.error is not None:
            raise slot.error
        return slot.result

    async def _peer_gone(self, related: RequestId | None) -> None:
        """A request after the peer left: cancel the call that needs it."""
        handle = self._incoming.get(related) if related is not None else None
        if handle is not None:
            self._cancel_handle(handle)
            await trio.lowlevel.checkpoint()  # raises Cancelled (for a task)
        raise BrokenSessionError("the peer disconnected")

    async def notify(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        related: RequestId | None = None,
    ) -> None:
        """Send a notification (raises BrokenSessionError if the transport is gone)."""
        try:
            await self.transport.send(Notification(method, params), related=related)
        except BrokenSessionError:
            raise
        except _CLOSED_ERRORS as exc:
            raise BrokenSessionError(
                f"could not send {method}: the transport is closed"
            ) from exc

    async def release_stream(self, related: RequestId) -> None:
        """Let the transport close incoming request ``related``'s response stream.

        The request goes on; the peer resumes the stream later (SSE polling).
        A transport that cannot resume streams ignores it.
        """
        if isinstance(self.transport, ReleasingTransport):
            await self.transport.release_stream(related)

    async def ping(self, *, timeout: float | None = None) -> None:
        await self.request("ping", None, timeout=timeout)

    async def _cancel_remote(
        self, request_id: RequestId, reason: str, related: RequestId | None
    ) -> None:
        note = Notification(_CANCELLED, {"requestId": request_id, "reason": reason})
        with trio.CancelScope(shield=True), trio.move_on_after(self.cancel_grace):
            await self._send_quietly(note, related)

    async def _send_quietly(self, message: Message, related: RequestId | None) -> None:
        """Send, ignoring a transport that is already gone (nothing to tell)."""
        try:  # noqa: SIM105 (as in _send_nowait_quietly: every reply comes here)
            await self.transport.send(message, related=related)
        except _CLOSED_ERRORS:
            pass

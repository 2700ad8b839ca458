"""What a session sends: our requests and their replies, notifications, answers.

:class:`Outbound` is the sending half of a :class:`~bridge.jsonrpc.session.Session`.
It mints request ids, keeps one entry per request of ours awaiting a reply (a
:class:`~bridge.jsonrpc._pending.Slot` one task waits on, or a
:class:`~bridge.jsonrpc._pending.Callback` for code that never waits), settles
it when the reply comes, times it out, and withdraws it with
``notifications/cancelled``. It also sends notifications and the answers to
incoming requests, quietly when the peer may already be gone.

It knows nothing of incoming requests: the session says when the peer has left
(:attr:`peer_gone`) and when the session is over (:attr:`closed`). Once the
peer has left, notifications are dropped: progress, logs and cancellations
do a peer that closed its input no good (replies to its requests still go,
if the transport takes them).

Rules:

* Our request ids are ints from a counter; a response id ``"7"`` matches ``7``.
* The pending table is cleaned in ``finally``: a request that times out, is
  cancelled, or whose session breaks never leaks an entry.
* If the caller of :meth:`request` is cancelled or times out, the peer is sent
  ``notifications/cancelled`` (shielded, best effort) and a late reply is
  dropped.
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import math
import sys
from collections.abc import Callable, Generator, Mapping
from typing import Any, TypeVar, final

import trio

from runtime.errors import (
    BrokenSessionError,
    ClosedSessionError,
    RequestTimeout,
)

from ._pending import Callback, Replies, Slot
from .messages import (
    ErrorData,
    ErrorResponse,
    Message,
    Notification,
    Request,
    RequestId,
    Response,
    coerce_id,
)
from .tap import Tap
from .timers import Timer
from .transport import ReleasingTransport, Transport

__all__ = ["CANCELLED", "CLOSED_ERRORS", "Outbound", "waiting_on_this_side"]

_timing: contextvars.ContextVar[tuple[trio.CancelScope, ...]] = contextvars.ContextVar(
    "yieldmcp_request_timers", default=()
)


@contextlib.contextmanager
def waiting_on_this_side() -> Generator[None]:
    """Time spent inside is not counted by the timeouts of the requests
    being sent around it (in this task): what is waited for is on this side,
    not the peer (a person logging in to an authorization server on the way
    of a request, that server's answers, another process's lock on the
    token file).

    Without it a server's first request, bounded by ``connect_timeout``
    (10 s), left a user 10 s to log in, and failed blaming the server.
    """
    scopes = _timing.get()
    deadlines = [scope.deadline for scope in scopes]
    began = trio.current_time()
    for scope in scopes:
        scope.deadline = math.inf
    try:
        yield
    finally:
        spent = trio.current_time() - began
        for scope, deadline in zip(scopes, deadlines, strict=True):
            scope.deadline = deadline + spent


@contextlib.contextmanager
def _timed(scope: trio.CancelScope) -> Generator[None]:
    token = _timing.set((*_timing.get(), scope))
    try:
        yield
    finally:
        _timing.reset(token)


CANCELLED = "notifications/cancelled"
CLOSED_ERRORS = (
    trio.BrokenResourceError,
    trio.ClosedResourceError,
    BrokenSessionError,
)

T = TypeVar("T")
CallLater = Callable[[float, Callable[[Any], None], Any], Timer]
Serially = Callable[[Callable[[Any], object], Any], None]


@final
class Outbound:
    """Everything one session sends, and the replies it waits for.

    Args:
        transport: moves the bytes.
        request_timeout: default seconds to wait for a reply.
        cancel_grace: seconds allowed for sending ``notifications/cancelled``.
        call_later: the session's timers, for the timeouts of
            :meth:`request_nowait`.
        serially: runs a callback as the session runs a frame's handling, one
            piece at a time.
    """

    def __init__(
        self,
        transport: Transport,
        *,
        request_timeout: float | None,
        cancel_grace: float,
        call_later: CallLater,
        serially: Serially,
    ) -> None:
        self.transport = transport
        self.request_timeout = request_timeout
        self.cancel_grace = cancel_grace
        self.closed = False
        self.peer_gone = False
        self._ids = itertools.count(1)
        self.pending: dict[RequestId, Slot | Callback] = {}
        self.related: dict[RequestId, RequestId | None] = {}
        self._call_later = call_later
        self._serially = serially
        self.send_now: Callable[..., None] | None = getattr(
            transport, "send_nowait", None
        )
        self.tap: Tap | None = None  # set by the session

    # --- replies to our requests -----------------------------------------------------

    def settle(
        self,
        raw_id: RequestId,
        *,
        result: Any = None,
        error: BaseException | None = None,
    ) -> None:
        """The peer answered request ``raw_id`` (a late reply is dropped)."""
        request_id = coerce_id(raw_id)
        entry = self.pending.get(request_id) if request_id is not None else None
        if entry is None:
            return  # a late reply to a cancelled request
        assert request_id is not None
        if isinstance(entry, Callback):
            timer = entry.timer
            if timer is not None and timer.deadline <= trio.current_time():
                self._time_out(timer.arg)  # too late, though its timer did not run
                return
        if self.tap is not None:
            self.tap.settled(request_id, result, error)
        if isinstance(entry, Slot):
            entry.settle(result, error)
            return
        del self.pending[request_id]
        self.related.pop(request_id, None)
        if entry.close():
            entry.owner.replied(request_id, result, error)

    def fail(self, request_id: RequestId, error: BaseException) -> None:
        """Settle request ``request_id`` with ``error`` instead of a reply."""
        entry = self.pending.get(request_id)
        if isinstance(entry, Slot):
            entry.settle(error=error)
        elif entry is not None:
            self._serially(self._settle_error, (request_id, error))

    def fail_all(self, error: BaseException) -> None:
        for request_id in list(self.pending):
            self.fail(request_id, error)

    def _settle_error(self, args: tuple[RequestId, BaseException]) -> None:
        self.settle(args[0], error=args[1])

    @property
    def outstanding(self) -> list[RequestId]:
        return list(self.pending)

    # --- sending without waiting -----------------------------------------------------

    def request_nowait(
        self,
        method: str,
        params: Mapping[str, Any] | None,
        *,
        owner: Replies,
        related: RequestId | None = None,
        timeout: float | None = None,
        request_id: RequestId | None = None,
        send: bool = True,
        waited: float = 0.0,
    ) -> RequestId:
        """Send a request now; its reply (or failure) goes to ``owner.replied``.

        ``request_id`` chooses the id (a durable call's ids outlive the
        process, so they are its own, not this session's counter's);
        ``send=False`` only waits for the reply to a request with that id sent
        before (by an earlier process serving the same durable session);
        ``waited``: the seconds it has waited already, which count against
        ``timeout``. A reply that comes once the timeout is up, before its
        timer ran, is too late: the request times out all the same.

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
        if self.closed:
            raise ClosedSessionError("the session is closed")
        if self.peer_gone:
            raise BrokenSessionError("the peer disconnected")
        assert self.send_now is not None
        if request_id is None:
            request_id = next(self._ids)
        if self.tap is not None:
            params = self.tap.outgoing(request_id, method, params)
        entry = Callback(method, owner)
        self.pending[request_id] = entry
        self.related[request_id] = related
        try:
            if send:
                self.send_now(Request(request_id, method, params), related=related)
        except CLOSED_ERRORS as exc:
            del self.pending[request_id]
            del self.related[request_id]
            if self.tap is not None:
                self.tap.settled(request_id, None, exc)
            if isinstance(exc, BrokenSessionError):
                raise  # the transport's own account of what broke
            raise BrokenSessionError(
                f"could not send {method}: the transport is closed"
            ) from exc
        limit = timeout if timeout is not None else self.request_timeout
        if limit is not None:
            entry.timer = self._call_later(
                max(0.0, limit - waited), self._time_out, (request_id, limit)
            )
        return request_id

    def _time_out(self, args: tuple[RequestId, float]) -> None:
        request_id, limit = args
        entry = self.pending.get(request_id)
        if not isinstance(entry, Callback):
            return
        error = RequestTimeout(f"{entry.method} got no reply within {limit} s")
        if self.tap is not None:
            self.tap.settled(request_id, None, error)
        self.cancel_nowait(request_id, f"timed out after {limit} s")
        entry.owner.replied(request_id, None, error)

    def cancel_nowait(self, request_id: RequestId, reason: str = "cancelled") -> None:
        """Withdraw our request ``request_id``: tell the peer, ignore its reply."""
        entry = self.pending.pop(request_id, None)
        related = self.related.pop(request_id, None)
        if entry is None or not isinstance(entry, Callback) or not entry.close():
            return
        if self.peer_gone:
            return  # no one to tell
        if self.tap is not None:
            self.tap.settled(request_id, None, None)
        note = Notification(CANCELLED, {"requestId": request_id, "reason": reason})
        self.send_nowait_quietly(note, related)

    def notify_nowait(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        related: RequestId | None = None,
    ) -> None:
        """Send a notification now (BrokenSessionError if the transport is
        gone); nothing once the peer has left."""
        assert self.send_now is not None
        if self.peer_gone:
            return
        try:
            self.send_now(Notification(method, params), related=related)
        except BrokenSessionError:
            raise
        except CLOSED_ERRORS as exc:
            raise BrokenSessionError(
                f"could not send {method}: the transport is closed"
            ) from exc

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
        if self.tap is not None:
            self.tap.answered(request_id, reply)
        self.send_nowait_quietly(reply, request_id)

    def send_nowait_quietly(self, message: Message, related: RequestId | None) -> None:
        assert self.send_now is not None
        # try/except, not contextlib.suppress: this runs for every message, and
        # suppress costs an object and two Python calls each time.
        try:  # noqa: SIM105
            self.send_now(message, related=related)
        except CLOSED_ERRORS:
            pass  # the peer is gone: there is no one to tell

    # --- sending and waiting ---------------------------------------------------------

    async def request(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        related: RequestId | None = None,
        timeout: float | None = None,
    ) -> Any:
        """Send a request and wait for its result (``Session.request``).

        ``related`` names the incoming request this one serves (HTTP sends it
        on that request's stream); ``timeout`` overrides ``request_timeout``.

        Raises:
            PeerError: the peer answered with an error object.
            RequestTimeout: no reply within ``timeout`` (the peer was told to
                cancel).
            BrokenSessionError: the session ended first.
        """
        request_id = next(self._ids)
        if self.tap is not None:
            params = self.tap.outgoing(request_id, method, params)
        slot = Slot()
        self.pending[request_id] = slot
        self.related[request_id] = related
        limit = timeout if timeout is not None else self.request_timeout
        message = Request(request_id, method, params)
        try:
            # The timeout covers sending too: over HTTP the whole exchange
            # (POST, reading the answer, resuming it) happens in ``send``.
            if limit is None:
                await self.transport.send(message, related=related)
                await slot.wait()
            else:
                with trio.move_on_after(limit) as timer, _timed(timer):
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
        except CLOSED_ERRORS as exc:
            raise BrokenSessionError(
                f"could not send {method}: the transport is closed"
            ) from exc
        finally:
            self.pending.pop(request_id, None)
            self.related.pop(request_id, None)
            if self.tap is not None:  # idempotent: settle() may have told it
                error = slot.error or sys.exc_info()[1]
                self.tap.settled(request_id, slot.result, error)
        if slot.error is not None:
            raise slot.error
        return slot.result

    async def notify(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        related: RequestId | None = None,
    ) -> None:
        """Send a notification (BrokenSessionError if the transport is gone);
        nothing once the peer has left."""
        if self.peer_gone:
            return
        try:
            await self.transport.send(Notification(method, params), related=related)
        except BrokenSessionError:
            raise
        except CLOSED_ERRORS as exc:
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

    def release_stream_nowait(self, related: RequestId) -> None:
        """:meth:`release_stream`, for a transport that can do it without waiting."""
        release = getattr(self.transport, "release_stream_nowait", None)
        if release is not None:
            release(related)

    async def _cancel_remote(
        self, request_id: RequestId, reason: str, related: RequestId | None
    ) -> None:
        if self.peer_gone:
            return  # no one to tell
        note = Notification(CANCELLED, {"requestId": request_id, "reason": reason})
        with trio.CancelScope(shield=True), trio.move_on_after(self.cancel_grace):
            await self.send_quietly(note, related)

    async def flush_pumped(self) -> None:
        """Write out what the pump still holds, if the transport takes it."""
        flush = getattr(self.transport, "flush", None)
        if flush is not None:
            with (
                trio.move_on_after(self.cancel_grace),
                contextlib.suppress(*CLOSED_ERRORS),
            ):
                await flush()

    async def send_quietly(self, message: Message, related: RequestId | None) -> None:
        """Send, ignoring a transport that is already gone (nothing to tell)."""
        try:  # noqa: SIM105 (as in send_nowait_quietly: every reply comes here)
            await self.transport.send(message, related=related)
        except CLOSED_ERRORS:
            pass

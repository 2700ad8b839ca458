"""A JSON-RPC session over any transport, in both directions at once.

The session owns the receive loop, one task per incoming request (unless the
handler takes it on with no task: :class:`ImmediateHandler`), cancellation in
both directions, and the single point where a handler's exception becomes an
error reply (:mod:`bridge.jsonrpc.errors`). It is deliberately not MCP-aware:
methods are strings and params are dicts; the MCP server and client sit on top.
What it sends, and the replies to its own requests, are
:mod:`~bridge.jsonrpc.outbound`'s; the requests it is answering are
:mod:`~bridge.jsonrpc.incoming`'s (where ``notifications/cancelled`` finds
them); frames pushed by a :class:`PushTransport`, and the one-piece-at-a-time
order of code that never waits, are :mod:`~bridge.jsonrpc.feed`'s.

Code that never waits: when the transport can send without waiting
(``send_nowait``: at once in memory; queued for the transport's ``pump``, which
the session runs, over stdio; stored for the request's stream over HTTP), a
handler may take a request on with no task (:meth:`Session.adopt`) and answer
it later from the receive path, sending its own requests with
``request_nowait`` (the reply comes back as a callback, the timeout is a
:class:`~bridge.jsonrpc.timers.Timer`).

When the transport ends (EOF, disconnect) the peer is gone: every incoming
request that is waiting on (or later needs) a reply from the peer is cancelled;
the others may finish for ``drain_timeout`` seconds and their replies are
written if the transport still takes them; then whatever is left is
cancelled. Requests we sent without a related incoming request fail with
:class:`~runtime.errors.BrokenSessionError`.

A message that cannot be read (not JSON, or not JSON-RPC) and names no id is
answered with an error (JSON-RPC says so) and the session goes on: a stray
line (a ``print`` in a stdio server) must not end it. Whose reply it was, if
it was one, is unknown, so while we wait for replies it is logged (once a
session); a request that then fails because the peer left says it came.

JSON nested past the parser's depth is no stray line: it is a message, and
no request it answers may wait for ever (:func:`~bridge.jsonrpc.messages.parse`
looks for its id). A reply to one of our requests fails that request at once
(:class:`~runtime.errors.RemoteProtocolError`); a request is answered
``-32700`` with its id. Two messages name no request we can find: one nested
too deep whose id cannot be found either, and an error reply with no id (the
peer could not read a message of ours, nor its id). With ``fail_unmatched``
(the MCP client's sessions: what waits is the user's call, and our own
messages are valid JSON a reader takes, so such a message is the peer's
trouble with one of them) each fails every request we wait on, saying why,
and the session goes on. Without it (the server's: a client may send junk,
and junk must not fail a call of its that runs) the first is logged as any
unreadable message, the second at debug level, and the server's questions to
the client stay bounded by their own timeouts.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol, TypeVar, final

import trio

from runtime.errors import (
    BrokenSessionError,
    ClosedSessionError,
    PeerError,
    RemoteProtocolError,
)

from ._pending import Replies as Replies
from .errors import error_data
from .feed import Feed, Parsed
from .incoming import Adopted as Adopted
from .incoming import Handle, Incoming
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
from .outbound import CANCELLED, CLOSED_ERRORS, Outbound
from .tap import tap_for
from .timers import Timer, Timers
from .transport import PushTransport as PushTransport
from .transport import Queued
from .transport import ReleasingTransport as ReleasingTransport
from .transport import Transport as Transport

__all__ = [
    "Adopted",
    "Handler",
    "ImmediateHandler",
    "PushTransport",
    "ReleasingTransport",
    "Replies",
    "Session",
    "Transport",
]

log = logging.getLogger("yieldmcp")

T = TypeVar("T")
_UNTAPPED = contextlib.nullcontext()


class Handler(Protocol):
    """What the session calls for incoming traffic (the MCP server or client)."""

    async def handle_request(self, request: Request, session: Session) -> Any:
        """The result for ``request``; raise to answer with an error."""
        ...

    async def handle_notification(
        self, notification: Notification, session: Session
    ) -> None: ...

    def closed(self, session: Session) -> None:
        """The transport ended (called once, synchronously, before teardown)."""
        ...


class ImmediateHandler(Handler, Protocol):
    """A handler that can take some requests on without a task of their own."""

    def begin_request(self, request: Request, session: Session) -> bool:
        """Take ``request`` on now and return True: answer it at once with
        :meth:`Session.respond_nowait`, or :meth:`Session.adopt` it and answer
        it later. Return False to leave it to :meth:`handle_request`, in a task.
        Called only when :attr:`Session.immediate`. An exception raised before
        adopting is answered as an error.
        """
        ...


@final
class Session:
    """One JSON-RPC connection. Start it with :meth:`run` in a nursery.

    It sends with :meth:`request` and, from code that never waits, the
    ``*_nowait`` methods; ``notify`` and ``release_stream`` send and wait. Those
    are :class:`~bridge.jsonrpc.outbound.Outbound`'s methods, documented there.

    Args:
        transport: moves the bytes.
        handler: answers incoming requests and notifications.
        request_timeout: default seconds to wait for a reply to our requests
            (``None``: wait until cancelled).
        cancel_grace: seconds allowed for sending ``notifications/cancelled``.
        drain_timeout: after the transport ends, seconds to let incoming
            requests that do not need the peer finish.
        fail_unmatched: a message that may answer a request of ours but
            names none we can find fails every request we wait on (see the
            module doc).
    """

    def __init__(
        self,
        transport: Transport,
        handler: Handler,
        *,
        request_timeout: float | None = None,
        cancel_grace: float = 1.0,
        drain_timeout: float = 5.0,
        fail_unmatched: bool = False,
    ) -> None:
        if (
            getattr(handler, "begin_request", None) is not None
            and getattr(transport, "send_nowait", None) is None
        ):
            transport = Queued(transport)  # a call may send from the receive path
        self.transport = transport
        self.handler = handler
        self.drain_timeout = drain_timeout
        self.fail_unmatched = fail_unmatched
        self._feed = feed = Feed(self._dispatch_now)
        self._out = out = Outbound(
            transport,
            request_timeout=request_timeout,
            cancel_grace=cancel_grace,
            call_later=self.call_later,
            serially=feed.serially,
        )
        # Outbound's API, bound here: one call on the hot path, not two.
        self.request_nowait = out.request_nowait
        self.cancel_nowait = out.cancel_nowait
        self.notify_nowait = out.notify_nowait
        self.respond_nowait = out.respond_nowait
        self.notify = out.notify
        self.release_stream = out.release_stream
        self.release_stream_nowait = out.release_stream_nowait
        self.tap = out.tap = tap_for(handler, transport)  # observability, or None
        self._incoming = Incoming(feed.serially, transport, self.tap, out.related)
        self._nursery: trio.Nursery | None = None
        self._closed = False
        self._said_unreadable = False  # warned of a message we cannot read
        self._unreadable: str | None = None  # why the first one was
        self.broken = trio.Event()
        self._peer_left = trio.Event()  # set with the outbound side's peer_gone
        self._timers: Timers | None = None
        begin = getattr(handler, "begin_request", None)
        self._begin: Callable[[Request, Session], bool] | None = (
            begin if out.send_now is not None else None
        )

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
                    transport.attach(self._feed.push)
                    task_status.started()
                    await self._feed.serve(self._dispatch)
                    self._out.peer_gone = True
                else:
                    task_status.started()
                    await self._receive_loop()
                await self._drain()
                if pump is not None:
                    await self._out.flush_pumped()
                nursery.cancel_scope.cancel()
        finally:
            if isinstance(transport, PushTransport):
                transport.detach()
            self._close()

    async def _receive_loop(self) -> None:
        while True:
            try:
                data = await self.transport.receive()
            except (trio.EndOfChannel, *CLOSED_ERRORS):
                self._out.peer_gone = True
                return
            except RemoteProtocolError as exc:
                # The transport cannot go on with this peer (a client's stdio
                # line over its max_message: whose reply it was is unknown).
                # Every request waiting on the peer fails saying why.
                self._out.fail_all(exc)
                self._out.peer_gone = True
                return
            await self._dispatch(parse(data))

    async def _drain(self) -> None:
        """The peer is gone: cancel calls that need it, let the others finish."""
        out = self._out
        out.peer_gone = True
        self._peer_left.set()
        for request_id, related in list(out.related.items()):
            handle = self._incoming.get(related) if related is not None else None
            if handle is not None:
                self._incoming.cancel(handle)
            elif request_id in out.pending:
                out.fail(request_id, self._gone("the peer disconnected"))
        await self._incoming.until_idle(self.drain_timeout)

    def _close(self) -> None:
        if self._closed:
            return
        self._closed = self._out.closed = True
        self.broken.set()
        self._peer_left.set()
        self._feed.close()
        self._incoming.cancel_adopted()
        self._out.fail_all(self._gone("the session ended before the reply"))
        self.handler.closed(self)
        if self.tap is not None:
            self.tap.closed()

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def peer_gone(self) -> bool:
        """The transport has ended: the peer can no longer answer."""
        return self._out.peer_gone

    async def until_peer_gone(self) -> None:
        """Return once the transport has ended (or the session has): what
        serves the peer without end (a listen) waits on this, not on a timer."""
        await self._peer_left.wait()

    async def backlog_below(self, limit: int) -> None:
        """Wait until fewer than ``limit`` pushed frames wait for the session's
        task, or the session has ended.

        A :class:`PushTransport` fed by a peer it cannot slow down otherwise
        (HTTP POSTs) calls this before each push, so what that peer can queue
        is bounded.
        """
        await self._feed.below(limit)

    async def _dispatch(self, message: Parsed) -> None:
        match message:
            case Notification(method=method) if method != CANCELLED:
                if self.tap is not None:
                    self.tap.notified(message)
                await self.handler.handle_notification(message, self)
            case Invalid(id=request_id, error=error, lost=lost):
                if (
                    request_id is not None
                    and self.fail_unmatched
                    and coerce_id(request_id) in self._out.pending
                ):
                    # No method, no result nor error, under the id of a
                    # request we wait on: its reply, broken. A reply is
                    # never answered (that way lie loops): it fails instead.
                    self._out.settle(
                        request_id,
                        error=RemoteProtocolError(
                            f"the reply cannot be read: {error.message}"
                        ),
                    )
                    return
                if lost and self.fail_unmatched and self._out.pending:
                    self._out.fail_all(
                        RemoteProtocolError(
                            f"the peer sent a message that cannot be read, "
                            f"perhaps the reply ({error.message}; its id "
                            f"cannot be found either)"
                        )
                    )
                elif request_id is None:
                    self._unreadable = self._unreadable or error.message
                    if self._out.pending:
                        self._say_unreadable(error)
                await self._out.send_quietly(
                    ErrorResponse(request_id, error), request_id
                )
            case _:
                self._feed.serially(self._dispatch_now, message)

    def _gone(self, what: str) -> BrokenSessionError:
        """The failure of a request the peer never answered: ``what``, and
        the message it sent that could not be read, if one came (it may have
        been the reply)."""
        if self._unreadable is None:
            return BrokenSessionError(what)
        return BrokenSessionError(
            f"{what} (before that it sent a message that cannot be read: "
            f"{self._unreadable})"
        )

    def _say_unreadable(self, error: ErrorData) -> None:
        """Warn, once a session, that a message came that cannot be read
        while we wait for answers: if it was one (JSON nested past the
        parser's depth, say), its request waits on, and the user should
        know why."""
        if not self._said_unreadable:
            self._said_unreadable = True
            log.warning(
                "the peer sent a message that cannot be read (%s); a request "
                "it answered will not hear of it",
                error.message,
            )

    def _dispatch_now(self, message: Parsed) -> bool:
        """Handle ``message`` without waiting, if it can be (else False)."""
        match message:
            case Request():
                self._start_request(message)
            case Notification(method=method, params=params) if method == CANCELLED:
                self._cancel_incoming(params or {})
            case Response(id=raw_id, result=result):
                self._out.settle(raw_id, result=result)
            case ErrorResponse(id=raw_id, error=error):
                if raw_id is not None:
                    self._out.settle(
                        raw_id, error=PeerError(error.code, error.message, error.data)
                    )
                elif self.fail_unmatched and self._out.pending:
                    self._fail_unnamed(error)
                else:
                    log.debug("an error naming no request: %s", error.message)
            case Ignored(reason=reason, answers=request_id, unmatched=unmatched):
                if unmatched and self.fail_unmatched and self._out.pending:
                    self._out.fail_all(
                        RemoteProtocolError(
                            f"the peer sent a reply that cannot be matched to "
                            f"a request, perhaps this one's: {reason}"
                        )
                    )
                elif request_id is None:
                    log.debug("ignored a message from the peer: %s", reason)
                else:  # a reply we cannot read: its request fails, not waits
                    why = f"the reply cannot be read: {reason}"
                    self._out.settle(request_id, error=RemoteProtocolError(why))
            case _:
                return False
        return True

    def _fail_unnamed(self, error: ErrorData) -> None:
        """An error reply with no id: the peer could not read a message we
        sent. Every request we wait on fails with it (see the module doc)."""
        log.warning(
            "the peer answered with an error naming no request (%s %s); the "
            "%d request(s) waiting on it fail",
            error.code,
            error.message,
            len(self._out.pending),
        )
        self._out.fail_all(
            PeerError(
                error.code,
                f"{error.message} (an error naming no request: the peer could "
                f"not read a message sent to it, perhaps this request)",
                error.data,
            )
        )

    def _start_request(self, request: Request) -> None:
        assert self._nursery is not None
        if request.id in self._incoming:
            error = ErrorData(
                INVALID_REQUEST, f"request id {request.id!r} is already in use"
            )
            refusal = ErrorResponse(request.id, error)
            if self._out.send_now is not None:
                # Queued now, where the transport's output bound counts it: a
                # task each, blocked on a peer that does not read, held
                # kilobytes apiece outside any bound.
                self._out.send_nowait_quietly(refusal, None)
            else:
                self._nursery.start_soon(self._out.send_quietly, refusal, None)
            return
        with _UNTAPPED if self.tap is None else self.tap.incoming(request):
            if self._begin is not None and self._begun(request):
                return
            scope = trio.CancelScope()
            self._incoming.add(request.id, scope)
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
                if self.tap is not None:
                    self.tap.answered(request.id, reply)
                await self._out.send_quietly(reply, request.id)
        finally:
            self.release(request.id, scope)

    def _cancel_incoming(self, params: Mapping[str, Any]) -> None:
        handle = self._incoming.named_by(params.get("requestId"))
        if handle is not None:
            self._incoming.cancel(handle)

    @property
    def in_flight(self) -> int:
        """How many incoming requests are being handled."""
        return len(self._incoming)

    @property
    def outstanding(self) -> list[RequestId]:
        """Ids of our requests still waiting for a reply."""
        return self._out.outstanding

    @property
    def computing(self) -> int:
        """Of :attr:`in_flight`, those not waiting on the peer (none of our
        requests related to them is unanswered: not a call parked on its
        client)."""
        return self._incoming.computing(self._out.related)

    @property
    def immediate(self) -> bool:
        """Whether this session can send without waiting (the ``*_nowait`` methods)."""
        return self._out.send_now is not None

    def adopt(self, request_id: RequestId, handle: Adopted) -> None:
        """Take incoming request ``request_id`` on, with no task: ``handle`` is
        cancelled if the peer cancels it or leaves. End it with
        :meth:`respond_nowait` and :meth:`release`."""
        self._incoming.add(request_id, handle)

    def release(self, request_id: RequestId, handle: Handle) -> None:
        """Incoming request ``request_id`` is over (answered or cancelled)."""
        self._incoming.release(request_id, handle)

    def start_soon(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        """Run ``fn(*args)`` in a task of this session's nursery: work a call
        taken on without a task waits on (a step), cancelled when the session
        ends.

        Raises:
            ClosedSessionError: the session has ended.
        """
        if self._closed or self._nursery is None:
            raise ClosedSessionError("the session is closed")
        self._nursery.start_soon(fn, *args)

    def call_later(
        self, seconds: float, callback: Callable[[T], None], arg: T
    ) -> Timer:
        """Call ``callback(arg)`` in ``seconds`` (run like a frame's handling)."""
        if self._timers is None:
            assert self._nursery is not None
            self._timers = Timers(self._feed.serially)
            self._nursery.start_soon(self._timers.run)
        return self._timers.call_later(seconds, callback, arg)

    async def request(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        related: RequestId | None = None,
        timeout: float | None = None,
    ) -> Any:
        """Send a request and wait for its result: see
        :meth:`~bridge.jsonrpc.outbound.Outbound.request` (what it raises, too);
        ClosedSessionError if the session had already ended."""
        if self._closed:
            raise ClosedSessionError("the session is closed")
        if self._out.peer_gone:
            await self._peer_gone(related)
        return await self._out.request(method, params, related=related, timeout=timeout)

    async def _peer_gone(self, related: RequestId | None) -> None:
        """A request after the peer left: cancel the call that needs it."""
        handle = self._incoming.get(related) if related is not None else None
        if handle is not None:
            self._incoming.cancel(handle)
            await trio.lowlevel.checkpoint()  # raises Cancelled (for a task)
        raise BrokenSessionError("the peer disconnected")

    async def ping(self, *, timeout: float | None = None) -> None:
        await self.request("ping", None, timeout=timeout)

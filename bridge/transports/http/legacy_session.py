"""One 2025-11-25 HTTP session: a JSON-RPC session and the SSE streams it feeds.

An :class:`HttpSession` is what an ``Mcp-Session-Id`` names. It is the
:class:`~bridge.jsonrpc.transport.Transport` of one
:class:`~bridge.jsonrpc.session.Session` (with its own
:class:`~bridge.server.Connection`), and it routes what that session sends
onto *streams* kept in a bounded
:class:`~bridge.transports.http.events.EventStore`:

* a response goes on the stream of the POST that carried its request;
* a message sent ``related`` to a request in flight (``sampling/createMessage``,
  progress, logs of a ``tools/call``) goes on that request's stream;
* anything else goes on the standalone stream (the client's ``GET``).

Each POSTed message is handed to the session as it arrives, in the POST's own
task (a :class:`~bridge.jsonrpc.session.PushTransport`): a call that needs nothing
from the client has its response stored before that task first waits, with
no hand-off to the session's task and back. At most ``inbox_size`` messages
that need the session's task (most notifications) wait for it; a POST beyond
that waits.

HTTP responses *follow* a stream (:meth:`HttpSession.follow`): they write its
stored events from a position and then live ones until the final event (the
response). A client that lost a response resumes it with ``GET`` +
``Last-Event-ID``; a newer follower supersedes an older one, so each event is
delivered once. A disconnect is not a cancellation (2025-11-25): the call goes
on and its events wait in the store. Ending the session (``DELETE``, expiry,
eviction) cancels every call. A request that is over without a response (a
cancelled call) frees its stream and its id at once (:meth:`request_over`).

What a session holds is bounded (:class:`~.config.HttpLimits`): the events in
its store (by count and bytes; progress and log notices are dropped first,
with a log line), and the bytes of the requests it is answering
(:meth:`HttpSession.holds`). When it expires is :mod:`.expiry`'s business.

A tool may ask, with ``ctx.release_stream()``, for its POST stream to be closed
mid-call (SSE polling, SEP-1699): :meth:`HttpSession.release_stream` ends the
follower, after the priming event told the client how to resume. It is ignored
for clients older than 2025-11-25, which got no priming event.

This module does not parse HTTP or check headers (see ``_legacy_routes``).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Generator
from typing import TYPE_CHECKING, Final, final

import trio

from bridge.jsonrpc.messages import (
    ErrorResponse,
    Message,
    Notification,
    RequestId,
    Response,
    dumps,
)
from bridge.jsonrpc.session import Session

from .config import HttpLimits
from .events import STANDALONE, EventStore, StoredEvent, UnknownEvent, parse_event_id
from .expiry import expire
from .streams import FIRST_PRIMING_VERSION as FIRST_PRIMING_VERSION
from .streams import Follower as Follower
from .streams import Stream, StreamEnd, supports_priming

if TYPE_CHECKING:
    from bridge.server.server import Connection, Server

__all__ = ["FIRST_PRIMING_VERSION", "Follower", "HttpSession", "StreamEnd"]

log = logging.getLogger("yieldmcp.http")

Write = Callable[[StoredEvent], Awaitable[None]]
Beat = Callable[[], Awaitable[None]]
_NOTICES: Final = frozenset({"notifications/progress", "notifications/message"})


@final
class HttpSession:
    """The transport, stream router and event store of one HTTP session."""

    def __init__(
        self, session_id: str, server: Server, limits: HttpLimits, base: int = 0
    ) -> None:
        self.id = session_id
        self.server = server
        self.limits = limits
        self.store = EventStore(limits.event_capacity, limits.event_bytes, base)
        self.connection: Connection = server.connection()
        self.session = Session(self, self.connection, drain_timeout=0)
        self._deliver: Callable[[bytes | None], None] | None = None
        self._by_request: dict[RequestId, Stream] = {}
        self._streams: dict[int, Stream] = {
            STANDALONE: Stream(STANDALONE, None, resumable=True)
        }
        self._scope = trio.CancelScope()
        self.closed = False
        self.owner: str | None = None  # the identity of the principal who opened it
        self.generation = 0  # processes that took it on before (with a store)
        self.last_seen = trio.current_time()
        self.used = False  # a request besides the handshake, or a GET
        self.opening = False  # its initialize is being answered (never evicted)
        # Requests answered (here, or in an earlier process): their streams,
        # while the store keeps them, for a client that posts one again.
        self._ended: dict[RequestId, int] = {}
        self._held_bytes = 0  # body bytes of requests in flight (Stream.body)
        self._dropped_logged = 0

    # --- Transport protocol (called by the Session) ----------------------------------

    async def receive(self) -> bytes:
        """Not used: the session takes each message as it arrives (attach)."""
        raise trio.EndOfChannel

    def attach(self, deliver: Callable[[bytes | None], None]) -> None:
        self._deliver = deliver

    def detach(self) -> None:
        self._deliver = None

    async def send(self, message: Message, *, related: RequestId | None = None) -> None:
        self.send_nowait(message, related=related)

    def send_nowait(
        self, message: Message, *, related: RequestId | None = None
    ) -> None:
        """Store ``message`` on its stream and wake its follower.

        Sending never waits (the store is bounded by dropping old events), so
        the session may take calls on without a task of their own.
        """
        stream, final = self._route(message, related)
        notice = isinstance(message, Notification) and message.method in _NOTICES
        store = self.store
        store.append(stream.number, dumps(message), final=final, droppable=notice)
        if final:
            assert stream.request_id is not None
            self._forget(stream.request_id, stream)
            self._ended[stream.request_id] = stream.number
            if len(self._ended) > 2 * store.capacity:
                self._prune_ended()
        if store.dropped > self._dropped_logged:
            self._log_dropped()
        stream.poke()

    def _log_dropped(self) -> None:
        # One line per 1,000 dropped, not one per notice.
        if self._dropped_logged == 0 or self.store.dropped // 1000 > (
            self._dropped_logged // 1000
        ):
            log.warning(
                "HTTP session: %d progress/log notices dropped so far: a client "
                "fell behind the event store (HttpLimits.event_capacity)",
                self.store.dropped,
            )
        self._dropped_logged = self.store.dropped

    def _forget(self, request_id: RequestId, stream: Stream) -> None:
        del self._by_request[request_id]
        self._streams.pop(stream.number, None)
        self._held_bytes -= len(stream.body or b"")

    def request_over(self, request_id: RequestId) -> None:
        """Request ``request_id`` is over (the session says so): if it was not
        answered (cancelled), end its stream and free its id now."""
        stream = self._by_request.get(request_id)
        if stream is not None:
            self._forget(request_id, stream)
            self.store.close_stream(stream.number)
            stream.poke()

    def holds(self) -> int:
        """Bytes this session holds: requests in flight and stored events."""
        return self._held_bytes + self.store.bytes

    def _route(
        self, message: Message, related: RequestId | None
    ) -> tuple[Stream, bool]:
        if isinstance(message, Response | ErrorResponse) and message.id is not None:
            stream = self._by_request.get(message.id)
            if stream is not None:
                return stream, True
        stream = self._by_request.get(related) if related is not None else None
        return stream or self._streams[STANDALONE], False

    async def release_stream(self, related: RequestId) -> None:
        self.release_stream_nowait(related)

    def release_stream_nowait(self, related: RequestId) -> None:
        """Close the response stream of request ``related`` now; it goes on."""
        stream = self._by_request.get(related)
        if stream is not None and stream.resumable:
            # A position, not a flag: the tool may have gone on to send more
            # before the follower runs, and those events belong to the resume.
            stream.releases.setdefault(stream.follower, self.store.position())
            stream.poke()

    # --- lifecycle -------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None]) -> None:
        """Serve until :meth:`close` or idle expiry; then cancel every call."""
        with self._scope:
            async with trio.open_nursery() as nursery:
                await nursery.start(self.session.run)
                await nursery.start(self.connection.forward_changes, self.session)
                nursery.start_soon(expire, self)
                task_status.started()
        self._end()

    def close(self) -> None:
        """End the session: cancel its calls, end its streams."""
        self._scope.cancel()
        self._end()

    def _end(self) -> None:
        if not self.closed:
            self.closed = True
            if self._deliver is not None:
                self._deliver(None)  # the end of input, as a PushTransport says
            for stream in self._streams.values():
                stream.poke()

    def touch(self) -> None:
        self.last_seen = trio.current_time()

    @property
    def calls(self) -> int:
        """Requests of the client this session is answering."""
        return self.session.in_flight

    @property
    def running(self) -> int:
        """Of :attr:`calls`, those not waiting on the client's answer."""
        return self.session.computing

    @property
    def streaming(self) -> bool:
        """Whether an HTTP response is following one of its streams."""
        return any(s.active for s in self._streams.values())

    # --- client → server -------------------------------------------------------------

    def busy(self, request_id: RequestId) -> bool:
        """Whether a request with this id is still being answered."""
        return request_id in self._by_request

    async def deliver(self, data: bytes) -> None:
        """Hand a notification or response from the client to the session.

        Raises:
            trio.ClosedResourceError: the session has ended.
        """
        self.touch()
        await self._push(data)

    async def _push(self, data: bytes) -> None:
        await self.session.backlog_below(self.limits.inbox_size)
        if self.closed or self._deliver is None:
            raise trio.ClosedResourceError("the HTTP session has ended")
        self._deliver(data)

    async def deliver_request(
        self, request_id: RequestId, data: bytes, version: str
    ) -> Follower:
        """Hand a request to the session, on a new stream followed by the POST
        that carried it (see :meth:`deliver`)."""
        self.touch()
        number = self.store.open_stream()
        stream = Stream(number, request_id, supports_priming(version), body=data)
        self._streams[number] = stream
        self._by_request[request_id] = stream
        self._held_bytes += len(data)
        # The priming id precedes every event of the stream, so resuming from
        # it replays them all.
        stream.start = parse_event_id(self.store.mark(number))[1]
        follower = Follower(number, stream.start, self._attach(stream))
        follower.state = stream
        await self._push(data)
        return follower

    def adopt_stream(
        self, number: int, request_id: RequestId, response: bytes | None = None
    ) -> None:
        """Serve again stream ``number`` of request ``request_id``, which an
        earlier process opened (a durable session's call); ``response``: the
        call ended there, and this is its final event."""
        if response is not None and request_id not in self._by_request:
            self._ended[request_id] = number
        if self.store.known(number):
            return  # taken on already
        self.store.open_stream(number)
        if response is not None:
            self.store.append(number, response, final=True)
            return
        stream = Stream(number, request_id, resumable=True, recorded=True)
        self._streams[number] = stream
        self._by_request[request_id] = stream

    def other_request(self, request_id: RequestId, data: bytes) -> bool:
        """Whether ``data`` is another request than the one in flight under
        ``request_id`` (the id is in use), rather than the same one again."""
        stream = self._by_request.get(request_id)
        if stream is None or stream.body is None:
            return False
        return stream.body != data

    def again(self, request_id: RequestId) -> Follower | None:
        """A follower of request ``request_id``'s stream from its first event,
        if the session has it (in flight, or answered while the store keeps
        it): the client posted the request again, having seen nothing of it."""
        stream = self._by_request.get(request_id)
        if stream is not None:
            return self.resume(stream.number, stream.start)
        number = self._ended.get(request_id)
        if number is None:
            return None
        if not self.store.known(number):
            del self._ended[request_id]  # its response is let go
            return None
        return self.resume(number, 0)

    def _prune_ended(self) -> None:
        known = self.store.known
        self._ended = {r: n for r, n in self._ended.items() if known(n)}

    def recorded(self, request_id: RequestId) -> None:
        """The call of ``request_id`` is written down in the store (its
        stream's follower may now show the client where to resume)."""
        stream = self._by_request.get(request_id)
        if stream is not None:
            stream.recorded = True
            stream.poke()

    def is_recorded(self, follower: Follower) -> bool:
        stream = self._streams.get(follower.stream)
        return stream is not None and stream.recorded

    async def wait_recorded(self, follower: Follower) -> None:
        """Wait until the call on the follower's stream is written down, an
        event is ready, or the stream has nothing more to wait for."""
        number = follower.stream
        while not (self.store.finished(number) or self._read(follower) or self.closed):
            stream = self._streams.get(number)
            if stream is None or stream.recorded or stream.follower != follower.token:
                return
            if follower.token in stream.releases:
                return
            await stream.changed.wait()

    def stream_of(self, request_id: RequestId) -> int | None:
        stream = self._by_request.get(request_id)
        return None if stream is None else stream.number

    # --- server → client: following a stream -----------------------------------------

    def resume(self, number: int, after: int) -> Follower:
        """Take over stream ``number`` from position ``after`` (GET)."""
        self.touch()
        stream = self._streams.get(number)
        token = 0 if stream is None else self._attach(stream)
        follower = Follower(number, after, token)
        follower.state = stream
        return follower

    def standalone_busy(self) -> bool:
        return self._streams[STANDALONE].active > 0

    def _attach(self, stream: Stream) -> int:
        stream.follower += 1
        stream.poke()  # a superseded follower wakes up and leaves
        return stream.follower

    def release_limit(self, follower: Follower) -> int | None:
        """The position after which this follower must stop, if released."""
        # From the follower's own reference: a finished stream has left
        # ``_streams``, but a release before its end still applies.
        stream = follower.state
        return None if stream is None else stream.releases.get(follower.token)

    async def wait(self, follower: Follower) -> str | None:
        """Wait for an event after the follower's position, or a reason to end."""
        number = follower.stream
        while not (self.store.finished(number) or self._read(follower)):
            stream = self._streams[number]
            if self.closed:
                return StreamEnd.CLOSED
            if stream.follower != follower.token:
                return StreamEnd.SUPERSEDED
            if follower.token in stream.releases:
                return StreamEnd.RELEASED
            await stream.changed.wait()
        return None

    def _read(self, follower: Follower) -> list[StoredEvent]:
        """The events after the follower's position ([] once forgotten)."""
        try:
            return self.store.read(follower.stream, follower.after)
        except UnknownEvent:
            return []  # a cancelled request's stream: finished, nothing to send

    def peek(self, follower: Follower) -> StoredEvent | None:
        """The next event the follower would write, if any."""
        events = self._read(follower)
        return events[0] if events else None

    async def follow(
        self, follower: Follower, write: Write, beat: Beat | None = None
    ) -> str:
        """Write the stream's events until it ends; say why it ended.

        ``beat`` is called after ``HttpLimits.heartbeat`` seconds with nothing
        to write (an SSE comment: a dead peer is noticed by the failed write).

        Raises:
            EventsLost: the follower fell behind the bounded store.
        """
        with self.followed(follower):
            while True:
                why = await self._write_available(follower, write)
                if why is None:
                    with trio.move_on_after(self.limits.heartbeat) as quiet:
                        why = await self.wait(follower)
                    if quiet.cancelled_caught and beat is not None:
                        await beat()
                if why is not None:
                    return why

    @contextlib.contextmanager
    def followed(self, follower: Follower) -> Generator[None]:
        """While an HTTP response follows ``follower``'s stream, or waits on
        its open connection to start (a POST answered when its first event
        comes), the session counts as streaming: its client is there, and
        the session is not ended as one whose client went away."""
        stream = self._streams.get(follower.stream)
        if stream is not None:
            stream.active += 1
        try:
            yield
        finally:
            if stream is not None:
                stream.active -= 1
            self.touch()

    async def _write_available(self, follower: Follower, write: Write) -> str | None:
        """Write every stored event the follower may; say if the stream ended."""
        limit = self.release_limit(follower)
        while events := self._read(follower):
            for event in events:
                if limit is not None and event.seq > limit:
                    return StreamEnd.RELEASED
                await write(event)
                follower.after = event.seq
                if event.final:
                    return StreamEnd.FINAL
            limit = self.release_limit(follower)  # writing let the tool run on
        if self.store.finished(follower.stream):
            return StreamEnd.FINAL  # resumed after the final event
        return None if limit is None else StreamEnd.RELEASED

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
on and its events wait in the store. Ending the session (``DELETE``, idle
expiry) cancels every call.

A tool may ask, with ``ctx.release_stream()``, for its POST stream to be closed
mid-call (SSE polling, SEP-1699): :meth:`HttpSession.release_stream` ends the
follower, after the priming event told the client how to resume. It is ignored
for clients older than 2025-11-25, which got no priming event.

This module does not parse HTTP or check headers (see ``_legacy_routes``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Final, final

import attrs
import trio

from bridge.jsonrpc.messages import ErrorResponse, Message, RequestId, Response, dumps
from bridge.jsonrpc.session import Session

from .config import HttpLimits
from .events import STANDALONE, EventStore, StoredEvent, parse_event_id

if TYPE_CHECKING:
    from bridge.server.server import Connection, Server

__all__ = ["FIRST_PRIMING_VERSION", "Follower", "HttpSession", "StreamEnd"]

log = logging.getLogger("yieldmcp.http")

FIRST_PRIMING_VERSION: Final = "2025-11-25"
"""Clients on this version or later get priming events and may be released."""

Write = Callable[[StoredEvent], Awaitable[None]]


@attrs.define(eq=False)
class _Stream:
    number: int
    request_id: RequestId | None
    resumable: bool
    changed: trio.Event = attrs.field(factory=trio.Event)
    follower: int = 0  # the number of the follower entitled to write
    # follower number -> store position when the tool released the stream:
    # that follower writes the events up to there, then ends.
    releases: dict[int, int] = attrs.field(factory=dict[int, int])
    active: int = 0  # followers currently writing (0 or, briefly, 2)

    def poke(self) -> None:
        old, self.changed = self.changed, trio.Event()
        old.set()


@final
class StreamEnd:
    """Why :meth:`HttpSession.follow` returned (string constants)."""

    FINAL = "final"  # the response was written
    RELEASED = "released"  # the tool released the stream; the client resumes
    SUPERSEDED = "superseded"  # a newer follower took the stream over
    CLOSED = "closed"  # the session ended


def supports_priming(version: str) -> bool:
    return version >= FIRST_PRIMING_VERSION


@final
class HttpSession:
    """The transport, stream router and event store of one HTTP session."""

    def __init__(self, session_id: str, server: Server, limits: HttpLimits) -> None:
        self.id = session_id
        self.server = server
        self.limits = limits
        self.store = EventStore(limits.event_capacity)
        self.connection: Connection = server.connection()
        self.session = Session(self, self.connection, drain_timeout=0)
        self._deliver: Callable[[bytes | None], None] | None = None
        self._by_request: dict[RequestId, _Stream] = {}
        self._streams: dict[int, _Stream] = {
            STANDALONE: _Stream(STANDALONE, None, resumable=True)
        }
        self._scope = trio.CancelScope()
        self.closed = False
        self.owner: str | None = None  # the identity of the principal who opened it
        self.last_seen = trio.current_time()

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
        self.store.append(stream.number, dumps(message), final=final)
        if final:
            assert stream.request_id is not None
            del self._by_request[stream.request_id]
            del self._streams[stream.number]
        stream.poke()

    def _route(
        self, message: Message, related: RequestId | None
    ) -> tuple[_Stream, bool]:
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
                nursery.start_soon(self._forward_list_changes)
                nursery.start_soon(self._expire)
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

    async def _forward_list_changes(self) -> None:
        with self.server.listen() as changes:
            async for kind in changes:
                if self.connection.initialized:
                    await self.session.notify(f"notifications/{kind}/list_changed")

    async def _expire(self) -> None:
        timeout = self.limits.session_idle_timeout
        while True:
            await trio.sleep_until(self.last_seen + timeout)
            idle = trio.current_time() - self.last_seen >= timeout
            if idle and not any(s.active for s in self._streams.values()):
                log.info("HTTP session expired after %.0f s idle", timeout)
                self.close()
                return
            self.touch()

    def touch(self) -> None:
        self.last_seen = trio.current_time()

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
        stream = _Stream(number, request_id, resumable=supports_priming(version))
        self._streams[number] = stream
        self._by_request[request_id] = stream
        # The priming id precedes every event of the stream, so resuming from
        # it replays them all.
        priming = self.store.mark(number)
        follower = Follower(number, parse_event_id(priming)[1], self._attach(stream))
        follower.state = stream
        await self._push(data)
        return follower

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

    def _attach(self, stream: _Stream) -> int:
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
        while not (
            self.store.read(number, follower.after) or self.store.finished(number)
        ):
            stream = self._streams[number]
            if self.closed:
                return StreamEnd.CLOSED
            if stream.follower != follower.token:
                return StreamEnd.SUPERSEDED
            if follower.token in stream.releases:
                return StreamEnd.RELEASED
            await stream.changed.wait()
        return None

    def peek(self, follower: Follower) -> StoredEvent | None:
        """The next event the follower would write, if any."""
        events = self.store.read(follower.stream, follower.after)
        return events[0] if events else None

    async def follow(self, follower: Follower, write: Write) -> str:
        """Write the stream's events until it ends; say why it ended.

        Raises:
            EventsLost: the follower fell behind the bounded store.
        """
        stream = self._streams.get(follower.stream)
        if stream is not None:
            stream.active += 1
        try:
            while True:
                why = await self._write_available(follower, write)
                if why is None:
                    why = await self.wait(follower)
                if why is not None:
                    return why
        finally:
            if stream is not None:
                stream.active -= 1
            self.touch()

    async def _write_available(self, follower: Follower, write: Write) -> str | None:
        """Write every stored event the follower may; say if the stream ended."""
        limit = self.release_limit(follower)
        while events := self.store.read(follower.stream, follower.after):
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


@attrs.define(eq=False)
class Follower:
    """An HTTP response's claim on a stream: where it is, and its token."""

    stream: int
    after: int
    token: int  # which follower of the stream this is (the newest one writes)
    state: _Stream | None = None

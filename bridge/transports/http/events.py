"""A bounded store of one HTTP session's SSE events, by stream. Sans-IO.

Every message the server sends on a legacy (2025-11-25) session is appended
here before any HTTP response carries it, so a client that lost a stream can
resume it with ``GET`` + ``Last-Event-ID`` and see every later event of *that*
stream exactly once.

Theory of operation:

* A *stream* is a small int: ``0`` is the standalone (``GET``) stream, and each
  POSTed request gets a fresh one from :meth:`EventStore.open_stream`.
* Event ids are ``"<stream>-<seq>"`` with ``seq`` from one counter per session,
  so ids are unique in the session and name their stream (PROTOCOL.md §5.2).
  A durable session taken on by another process (:mod:`.durable`) starts both
  counters at ``generation << 32``: its ids come after every earlier one, and
  a stream keeps its number, so a ``Last-Event-ID`` from before resumes it.
  :meth:`EventStore.mark` reserves a seq without storing anything: that is the
  id of a priming event, a resumption point that is never replayed.
* The store holds at most ``capacity`` events and ``max_bytes`` bytes of them.
  When it must let one go, it drops the oldest *droppable* event first (a
  notification the server sent: progress, a log line; see
  :meth:`EventStore.append`), so a tool that sends a burst of notices loses
  old notices, never a request or a response. Only when nothing droppable is
  left is the oldest other event evicted; a reader whose next such event was
  evicted gets :class:`EventsLost` rather than a silent gap. A dropped notice
  is a gap a reader does not see; :attr:`EventStore.dropped` counts them.
* A stream is *finished* once its final event (the response) is stored; a
  finished stream whose events have all been evicted is forgotten.

It owns ids, order, bounds and replay; it does not wait, frame SSE, or know
which HTTP response (if any) is attached to a stream.
"""

from __future__ import annotations

import collections
from typing import Final, final

import attrs

__all__ = ["STANDALONE", "EventStore", "EventsLost", "StoredEvent", "UnknownEvent"]

STANDALONE: Final = 0
"""The stream of messages unrelated to any request (the ``GET`` stream)."""


class UnknownEvent(LookupError):
    """A ``Last-Event-ID`` that is malformed or names no stream of this session."""


class EventsLost(LookupError):
    """Events after the reader's position were evicted: resuming would skip them."""


@final
@attrs.frozen(eq=False)  # identity: the store finds a dropped event by it
class StoredEvent:
    stream: int
    seq: int
    data: bytes
    final: bool = False
    droppable: bool = False

    @property
    def id(self) -> str:
        return event_id(self.stream, self.seq)


def event_id(stream: int, seq: int) -> str:
    return f"{stream}-{seq}"


def parse_event_id(value: str) -> tuple[int, int]:
    """``(stream, seq)`` from an id we minted; raises UnknownEvent otherwise."""
    stream, sep, seq = value.partition("-")
    if not (
        sep
        and stream.isdigit()
        and seq.isdigit()
        and stream.isascii()
        and seq.isascii()
        # Ours have at most 20 digits each; int() refuses over 4300.
        and len(stream) <= _MAX_DIGITS
        and len(seq) <= _MAX_DIGITS
    ):
        shown = value if len(value) <= 64 else f"{value[:64]}…"
        raise UnknownEvent(f"{shown!r} is not an event id of this server")
    return int(stream), int(seq)


_MAX_DIGITS: Final = 40


@attrs.define
class _Log:
    events: collections.deque[StoredEvent] = attrs.field(
        factory=collections.deque[StoredEvent]
    )
    evicted_through: int = -1  # the highest seq evicted from this stream
    finished: bool = False


@final
class EventStore:
    """One session's events: at most ``capacity`` of them, and at most
    ``max_bytes`` bytes of them (but always the newest one)."""

    def __init__(
        self, capacity: int = 1024, max_bytes: int | None = None, base: int = 0
    ) -> None:
        """``base``: where stream numbers and seqs start, past every id an
        earlier process serving the same durable session can have sent."""
        if capacity < 1:
            raise ValueError("an event store needs a capacity of at least 1")
        self.capacity = capacity
        self.max_bytes = max_bytes
        self.bytes = 0
        self.dropped = 0  # droppable events let go so far
        self._seq = base
        self._next_stream = base + STANDALONE + 1
        self._logs: dict[int, _Log] = {STANDALONE: _Log()}
        self._order: collections.deque[StoredEvent] = collections.deque()
        self._droppable: collections.deque[StoredEvent] = collections.deque()

    def __len__(self) -> int:
        return len(self._order) + len(self._droppable)

    def open_stream(self, number: int | None = None) -> int:
        """A new stream's number (``number``: one an earlier process opened)."""
        stream = self._next_stream if number is None else number
        if number is None:
            self._next_stream += 1
        self._logs.setdefault(stream, _Log())
        return stream

    def known(self, stream: int) -> bool:
        """Whether ``stream`` is open or still has events to replay."""
        return stream in self._logs

    def mark(self, stream: int) -> str:
        """Reserve a position on ``stream``: the id of a priming event."""
        self._log(stream)
        self._seq += 1
        return event_id(stream, self._seq)

    def position(self) -> int:
        """The seq of the newest event or mark (read live events after it)."""
        return self._seq

    def append(
        self, stream: int, data: bytes, *, final: bool = False, droppable: bool = False
    ) -> StoredEvent:
        """Store one event; let the oldest go if full (droppable ones first).

        ``droppable``: the event may be dropped unseen to make room (a
        notification); a final event cannot be. Returns what was stored.
        """
        log = self._log(stream)
        if log.finished:
            raise ValueError(f"stream {stream} already has its final event")
        self._seq += 1
        stored = StoredEvent(stream, self._seq, data, final, droppable and not final)
        log.events.append(stored)
        log.finished = final
        (self._droppable if stored.droppable else self._order).append(stored)
        self.bytes += len(data)
        while self._full():
            self._evict()
        return stored

    def _full(self) -> bool:
        count = len(self._order) + len(self._droppable)
        if count > self.capacity:
            return True
        return self.max_bytes is not None and self.bytes > self.max_bytes and count > 1

    def _evict(self) -> None:
        if self._droppable:
            old = self._droppable.popleft()
            log = self._logs[old.stream]
            log.events.remove(old)  # near the front: after the stream's few others
            self.dropped += 1
        else:
            # Nothing droppable is left anywhere, so this is its stream's oldest.
            old = self._order.popleft()
            log = self._logs[old.stream]
            log.events.popleft()
            log.evicted_through = old.seq
        self.bytes -= len(old.data)
        if log.finished and not log.events and old.stream != STANDALONE:
            del self._logs[old.stream]

    def discard(self, stream: int) -> None:
        """Forget finished ``stream`` now: its events went out without ids (a
        plain JSON response), so no client can resume it."""
        log = self._logs.get(stream)
        if log is None or stream == STANDALONE or not log.finished:
            return
        del self._logs[stream]
        for event in log.events:
            queue = self._droppable if event.droppable else self._order
            if queue and queue[-1] is event:
                queue.pop()  # usually the newest: no search
            else:
                queue.remove(event)
            self.bytes -= len(event.data)

    def close_stream(self, stream: int) -> None:
        """End ``stream`` with no final event (its request was cancelled)."""
        log = self._logs.get(stream)
        if log is None or stream == STANDALONE:
            return
        log.finished = True
        if not log.events:
            del self._logs[stream]

    def _log(self, stream: int) -> _Log:
        log = self._logs.get(stream)
        if log is None:
            raise UnknownEvent(f"stream {stream} is unknown or expired")
        return log

    def locate(self, last_event_id: str) -> tuple[int, int]:
        """The ``(stream, seq)`` a ``Last-Event-ID`` resumes from.

        Raises:
            UnknownEvent: not one of this session's ids, or long forgotten.
        """
        stream, seq = parse_event_id(last_event_id)
        if seq > self._seq:
            raise UnknownEvent(f"{last_event_id!r} was never sent")
        self._log(stream)
        return stream, seq

    def read(self, stream: int, after: int) -> list[StoredEvent]:
        """``stream``'s events with a seq above ``after``, oldest first.

        Raises:
            EventsLost: some of them were evicted (dropped droppable events are
                simply missing).
            UnknownEvent: the stream is forgotten.
        """
        log = self._log(stream)
        if log.evicted_through > after:
            raise EventsLost(
                f"events of stream {stream} after seq {after} were evicted"
            )
        return [e for e in log.events if e.seq > after]

    def finished(self, stream: int) -> bool:
        """Whether ``stream``'s final event has been stored."""
        log = self._logs.get(stream)
        return log is None or log.finished

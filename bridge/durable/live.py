"""A live 2025-11-25 call kept in a store, so it outlives its process.

With a store (``Server(store=...)``), a call on a *durable* session (an HTTP
session: its transport says so by giving the connection a :class:`Home`) is
written down as it goes, and another process can take it on again
(:func:`bridge.server.calls.live.revive`) by replaying its generator against
what was written:

* the call's document ``("call", call_id)``, its id derived from the session
  and the request id (:func:`call_id_of`: a request posted again finds the
  call it started, on any process): the session, the request id,
  the ``tools/call`` params, the SSE stream its events go on, and the *tag*
  its questions' request ids start with (``"<tag>/<key>"``, the tag being
  the call id: the same id in every process, so an answer to a question asked
  before a restart finds the call after it, and any process finds the call
  an answer is for). When the call ends, the document keeps its response
  for ``--finished-call-ttl``, so a client that resumes after the end still
  gets it; its streams below expire with it;
* the call's journal, the stream ``("call", call_id)``
  (:mod:`.call_records`): every answer and step result is appended *before*
  the stepper gets it (write-ahead), each notice key in order with them;
* the stream ``("asked", call_id)``: ``{"k": key, "e": seq}`` for each question
  sent, with the position of its SSE event, so a process that takes the call
  on knows which questions the client has seen (and does not ask them again);
* the stream ``("session", session_id)``: ``{"c": call_id, "s": stream}`` for
  each call the session took on.

The document also names the process running the call (``"worker"``): an
answer POSTed to another process is routed to it while it lives
(:mod:`bridge.durable.presence`).

Writes go through one :class:`LiveLog` per call, in the order asked, by one
task, and what depends on a write happens right after it, in that task: an
answer reaches the stepper, a notice or a question is sent, the response is
sent, each only once the store has its record (write-ahead). So a process
taking the call on knows every notice and question the client may have. A
store that fails fails the question being recorded (the tool sees a
:class:`~bridge.stores.StoreError`), and is logged otherwise
(:attr:`LiveLog.failed` keeps the first failure). While the process knows the
store to be away (:class:`~.presence.Outage`), a write fails at once instead
of waiting out ``--store-timeout`` again: a call whose record could not be
written ends within one deadline, its response not waiting another.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Protocol, final

import attrs
import trio

from bridge.stores import AsyncStore, StoreError
from runtime.errors import JournalTooLarge

from .log import CALLS, CallLog
from .presence import Outage

__all__ = [
    "ASKED",
    "SESSIONS",
    "Home",
    "LiveLog",
    "Revived",
    "call_id_of",
    "question_id",
]

log = logging.getLogger("yieldmcp.durable")

ASKED: Final = "asked"
"""Namespace of the streams of questions sent, one per call."""
SESSIONS: Final = "session"
"""Namespace of durable 2025-11-25 sessions: a document and a stream of calls."""

Then = Callable[[Any, BaseException | None], None]
RequestId = str | int
StartSoon = Callable[..., None]
"""Starts a task in a nursery its owner closes (the session's)."""


class Home(Protocol):
    """What a durable session's transport tells its calls."""

    @property
    def store(self) -> AsyncStore: ...
    @property
    def session_id(self) -> str: ...
    @property
    def worker(self) -> str:
        """The id of this process among those sharing the store."""
        ...

    @property
    def ttl(self) -> float:
        """Seconds a call's records outlive its last write."""
        ...

    async def keep_alive(self) -> None:
        """Renew the session's records (its document, and its index of
        calls): a call runs long with nothing to write.

        Raises:
            StoreError: the store failed.
        """
        ...

    @property
    def finished_ttl(self) -> float:
        """Seconds a finished call is kept (its response, params and
        records), then expires whole."""
        ...

    @property
    def max_journal_bytes(self) -> int:
        """The bound of a call's journal (:class:`~.log.CallLog`)."""
        ...

    @property
    def outage(self) -> Outage:
        """Whether this process knows the store to be away."""
        ...

    def stream_of(self, request_id: RequestId) -> int | None:
        """The SSE stream request ``request_id``'s events go on."""
        ...

    def position(self) -> int:
        """The position of the newest event sent (its seq)."""
        ...

    def recorded(self, request_id: RequestId) -> None:
        """The call of request ``request_id`` is written down: another
        process can take it on, so its stream's resumption point may be
        shown to the client."""
        ...


@final
@attrs.frozen
class Revived:
    """What a process taking a call on knows of it from the store."""

    call_id: str
    tag: str
    asked: Mapping[str, int]  # key -> seq of the event that asked it
    seen: int | None  # the client's Last-Event-ID seq on the call's stream
    asked_at: Mapping[str, float] = attrs.field(factory=dict[str, float])  # time.time()


def call_id_of(session_id: str, request_id: int | str) -> str:
    """The id of the call that request ``request_id`` of session
    ``session_id`` starts: the same in every process, so a client that posts
    the request again (it saw nothing of the call before its process died)
    gets that call, not a second one. (Request ids are unique within a
    session, and ``1`` and ``"1"`` are different ids.)"""
    named = json.dumps([session_id, request_id]).encode()
    return hashlib.sha256(named).hexdigest()[:32]


def question_id(tag: str, key: str) -> str:
    """The request id of the question at ``key`` of the call tagged ``tag``."""
    return f"{tag}/{key}"


@final
class LiveLog:
    """The ordered writer of one durable call (see the module docstring)."""

    def __init__(
        self,
        start_soon: StartSoon,
        home: Home,
        call_id: str,
        tag: str,
        doc: Mapping[str, Any],
        revived: Revived | None = None,
    ) -> None:
        self.home = home
        self.call_id = call_id
        self.tag = tag
        self.revived = revived
        self._send, receive = trio.open_memory_channel[
            tuple[Callable[[], Any], Then | None, Any]
        ](math.inf)
        self._doc = dict(doc)
        self._doc_written = time.time()
        self.journal = CallLog(home.store, call_id, max_bytes=home.max_journal_bytes)
        self.failed: StoreError | None = None  # the first write the store failed
        self._asked = revived is not None  # ("asked", id) may hold records
        # The writer lives in the session's nursery: when the session ends,
        # what it had not written is left (the lease lets another process
        # take the call on from what was written).
        start_soon(self._run, receive)

    # --- what the call asks ----------------------------------------------------------

    def open(self, then: Then, arg: Any) -> None:
        """Write the call's document and index it in its session, then go on."""
        store, home, doc = self.home.store, self.home, self._doc

        async def write() -> None:
            expires = time.time() + home.ttl
            await store.put(CALLS, self.call_id, doc, expires_at=expires)
            entry = {"c": self.call_id, "s": doc.get("stream")}
            await store.append(SESSIONS, home.session_id, [entry], expires_at=expires)
            # Only now may the client learn where to resume the call.
            home.recorded(doc["request"])

        self._queue(write, then, arg)

    def write(self, records: Sequence[Mapping[str, Any]], then: Then, arg: Any) -> None:
        """Append ``records`` to the journal (within its bound: else
        ``then`` hears :class:`~runtime.errors.JournalTooLarge`); then
        ``then(arg, error)``."""
        journal = self.journal

        async def append() -> None:
            expires = time.time() + self.home.ttl
            await journal.append(records, expires_at=expires)
            await self._keep_document(expires)

        self._queue(append, then, arg)

    def asking(self, key: str, then: Then, arg: Any) -> None:
        """Record that the question at ``key`` is sent; then send it.

        The record holds the position of the session's newest event when it
        is written: every earlier event of the call is out by then, and the
        question is the call's next, so a client whose ``Last-Event-ID`` on
        the call's stream is past that position has seen the question.
        """
        home = self.home

        asked_at = time.time()  # its timeout counts from now, in any process

        def records() -> list[dict[str, Any]]:
            return [{"k": key, "e": home.position(), "t": asked_at}]

        self._asked = True
        self._queue(self._appender(ASKED, records), then, arg)

    def seen(self, key: str) -> bool:
        """Whether the client has the question at ``key`` from an earlier
        process (so it is not sent again: its answer will come)."""
        revived = self.revived
        if revived is None or key not in revived.asked:
            return False
        return revived.seen is None or revived.seen > revived.asked[key]

    def waited(self, key: str) -> float:
        """Seconds since an earlier process sent the question at ``key`` (0
        if unknown): its timeout ran on while no process held the call."""
        revived = self.revived
        at = None if revived is None else revived.asked_at.get(key)
        return 0.0 if at is None else max(0.0, time.time() - at)

    def finishing(self, response: Mapping[str, Any], then: Then, arg: Any) -> None:
        """Keep the call's response a while (a client resuming after the end
        gets it, on any process); then send it. No more writes."""
        store, call_id = self.home.store, self.call_id

        async def end() -> None:
            done = {**self._doc, "done": dict(response)}
            expires = time.time() + self.home.finished_ttl
            # The journal and the questions asked go with the document: left
            # at the session's idle time, they outlived it (params and step
            # results kept, with nothing in the store naming them).
            await store.put_and_append(CALLS, call_id, done, [], expires_at=expires)
            if self._asked:
                await store.append(ASKED, call_id, [], expires_at=expires)

        self._queue(end, then, arg)
        self._send.close()

    def forget(self) -> None:
        """The client cancelled the call: forget it. No more writes."""
        store, call_id = self.home.store, self.call_id

        async def end() -> None:
            await store.delete(CALLS, call_id)
            await store.delete(ASKED, call_id)

        self._queue(end, None, None)
        self._send.close()

    def leave(self) -> None:
        """The process lets the call go (its session ended here): keep it all
        for the next process to take on."""
        self._send.close()

    # --- the writer ------------------------------------------------------------------

    def _appender(
        self, namespace: str, records: Callable[[], Sequence[Mapping[str, Any]]]
    ) -> Callable[[], Any]:
        store, call_id = self.home.store, self.call_id

        async def append() -> None:
            expires = time.time() + self.home.ttl
            await store.append(namespace, call_id, records(), expires_at=expires)
            await self._keep_document(expires)

        return append

    async def _keep_document(self, expires: float) -> None:
        if time.time() - self._doc_written > self.home.ttl / 2:
            self._doc_written = time.time()  # a long call: keep its document
            await self.home.store.put(
                CALLS, self.call_id, self._doc, expires_at=expires
            )

    async def _keep_alive(self) -> None:
        """Renew what the store keeps of the session and of this call (its
        document, journal and questions), a call running long with nothing
        to write; a store that fails is tried again at the next turn."""
        home, call_id = self.home, self.call_id
        expires = time.time() + home.ttl
        try:
            with home.outage.watching():
                await home.keep_alive()
                self._doc_written = time.time()
                # The document and its journal in one write: they expire together.
                await home.store.put_and_append(
                    CALLS, call_id, self._doc, [], expires_at=expires
                )
                if self._asked:
                    await home.store.append(ASKED, call_id, [], expires_at=expires)
        except (StoreError, OSError) as exc:
            log.warning("durable call %s: not kept alive: %s", call_id, exc)

    def _queue(self, write: Callable[[], Any], then: Then | None, arg: Any) -> None:
        with contextlib.suppress(trio.ClosedResourceError):
            self._send.send_nowait((write, then, arg))

    async def _run(
        self, receive: trio.MemoryReceiveChannel[tuple[Callable[[], Any], Any, Any]]
    ) -> None:
        async with receive:
            while True:
                # A step may outlast the session's idle time: with nothing
                # written, the session's and the call's records expired in
                # the store under a running call, and no other process could
                # take it on after a kill. Kept every third of that time.
                item: tuple[Callable[[], Any], Any, Any] | None = None
                with trio.move_on_after(self.home.ttl / 3):
                    try:
                        item = await receive.receive()
                    except trio.EndOfChannel:
                        return
                if item is None:
                    await self._keep_alive()
                    continue
                write, then, arg = item
                error: BaseException | None = None
                try:
                    with self.home.outage.watching():
                        await write()
                except (StoreError, OSError) as exc:
                    log.warning(
                        "durable call %s: the store failed: %s", self.call_id, exc
                    )
                    error = exc
                    if isinstance(exc, StoreError):
                        self.failed = self.failed or exc
                except JournalTooLarge as exc:
                    error = exc  # the call fails with it
                except Exception as exc:  # a bug: never take the process down
                    log.exception("durable call %s: recording failed", self.call_id)
                    error = exc
                if then is not None:
                    # Called here, in order, with nothing awaited: what it
                    # sends goes out before the next record is written.
                    try:
                        then(arg, error)
                    except Exception:
                        log.exception("durable call %s: a step failed", self.call_id)

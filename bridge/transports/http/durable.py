"""Durable 2025-11-25 HTTP sessions: kept in the server's store, taken on again.

With a store (``Server(store=...)``), an HTTP session is a document
``("session", id)``: what ``initialize`` negotiated (version, the client's
capabilities and info), the log level, the principal who opened it, and a
*generation* (how many processes have taken it on). Its calls are written down
as they go (:mod:`bridge.durable.live`).

A request naming a session this process does not hold (it restarted, or
another process opened it) takes it on (:func:`revive`): the generation goes
up by one (compare-and-swap: one process wins a race), the session's event
ids start at ``generation << 32`` (after every id sent before, see
:mod:`.events`), and each call in flight is replayed from its journal on its
old stream number, so a ``GET`` with ``Last-Event-ID`` resumes it, and an
answer POSTed to a question asked before reaches it. A call that ended before
has its response stored as its stream's final event.

The store's generation outranks this process's copy: before it answers a
resume or takes a call on, a process that holds the session checks it
(:func:`stale`) and, if another process took the session on since, takes it on
again itself. The records themselves are :mod:`bridge.durable.sessions`'s.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeGuard, final

import trio

from bridge.durable import AsyncStore, Document
from bridge.durable.live import Revived, call_id_of
from bridge.durable.presence import Outage, Presence
from bridge.durable.sessions import SessionRecords
from bridge.jsonrpc.messages import RequestId

from .events import UnknownEvent, event_id, parse_event_id

if TYPE_CHECKING:
    from .legacy_session import HttpSession

__all__ = [
    "HttpHome",
    "claim_request",
    "claim_stream",
    "is_question_id",
    "forget",
    "load",
    "revive_calls",
    "route",
    "save",
    "stale",
]

log = logging.getLogger("yieldmcp.http")

Claim = Literal["here", "unknown", "elsewhere"]


@final
class HttpHome:
    """What a durable HTTP session tells its calls (``bridge.durable.live.Home``)."""

    def __init__(
        self, http: HttpSession, store: AsyncStore, worker: str, outage: Outage
    ) -> None:
        self.http = http
        self.store = store
        self.worker = worker
        self.outage = outage
        self.session_id = http.id
        self.ttl = http.limits.session_idle_timeout
        self.finished_ttl = http.limits.finished_call_ttl
        self.max_journal_bytes = http.connection.server.limits.max_journal_bytes
        self.records = SessionRecords(store, http.id, ttl=self.ttl)
        self.saved = 0.0  # when the session's document was last written

    async def keep_alive(self) -> None:
        await save(self.http)  # the document and its index of calls

    def stream_of(self, request_id: RequestId) -> int | None:
        return self.http.stream_of(request_id)

    def position(self) -> int:
        return self.http.store.position()

    def recorded(self, request_id: RequestId) -> None:
        self.http.recorded(request_id)


def _home(http: HttpSession) -> HttpHome | None:
    home = http.connection.home
    return home if isinstance(home, HttpHome) else None


def _records(http: HttpSession) -> SessionRecords:
    home = _home(http)
    assert home is not None
    return home.records


async def save(http: HttpSession) -> None:
    """Write the session's state to its document (after ``initialize``,
    ``setLevel``), keeping the generation other processes have reached."""
    home = _home(http)
    if home is None:
        return
    home.saved = time.time()
    state = {**http.connection.state(), "owner": http.owner}
    with home.outage.watching():  # at once while the store is known away
        await home.records.save(state, home.saved)


async def touch(http: HttpSession) -> None:
    """Keep a used session's document from expiring (written at most every
    half of its lifetime)."""
    home = _home(http)
    if home is not None and time.time() - home.saved > home.ttl / 2:
        await save(http)


async def forget(http: HttpSession) -> None:
    """The session was ended (``DELETE``): no process takes it on again."""
    home = _home(http)
    if home is not None:
        await home.records.forget()


async def load(
    store: AsyncStore, session_id: str, who: str | None, ttl: float
) -> tuple[dict[str, Any], int] | None:
    """The session's document, claimed for this process: its state and new
    generation; None if it is unknown, expired or another principal's."""
    return await SessionRecords(store, session_id, ttl=ttl).claim(who)


async def stale(http: HttpSession) -> bool:
    """Whether another process took the session on since this process's copy
    was made (the store's generation is higher): the copy must be taken on
    again before it answers a resume or takes a call on."""
    home = _home(http)
    if home is None:
        return False
    generation = await home.records.generation()
    return generation is not None and generation > http.generation


async def revive_calls(
    http: HttpSession,
    presence: Presence,
    last_event_id: str | None,
    posted: RequestId | None = None,
) -> int:
    """Take on the calls of the session that an earlier process wrote down
    and no live process holds; how many. ``posted``: the request the client
    is posting again, whose call's events it saw none of."""
    records = _records(http)
    taken = 0
    for call_id, _stream in await records.calls():
        doc = await records.call(call_id)
        if doc is None:
            continue
        if "done" in doc.value:
            _adopt_done(http, doc.value)
        elif not await _elsewhere(presence, doc.value.get("worker")):
            seen = last_event_id
            if posted is not None and doc.value.get("request") == posted:
                seen = _from_start(doc.value)
            taken += await _take_over(http, presence, call_id, doc, seen)
    return taken


async def claim_stream(
    http: HttpSession, presence: Presence, last_event_id: str
) -> Claim:
    """Make the stream ``last_event_id`` names servable here, taking its call
    on once its process's lease has run out: ``"here"``; ``"unknown"``; or
    ``"elsewhere"``: a live process still holds it after a lease's wait."""
    records = _records(http)
    number, _seq = _position(last_event_id)
    call_id = next((c for c, s in await records.calls() if s == number), None)
    if call_id is None:
        return "unknown"
    return await _claim(http, presence, call_id, last_event_id)


async def claim_request(
    http: HttpSession, presence: Presence, request_id: RequestId, params: object
) -> Claim | Literal["other"]:
    """Make the call that request ``request_id`` started servable here, as
    :func:`claim_stream` does: the client posts the request again because it
    saw nothing of the call (its process died first). ``"unknown"``: the
    request started no call that is written down; ``"other"``: it started a
    call with other ``params`` (the id is in use)."""
    call_id = call_id_of(http.id, request_id)
    doc = await _records(http).call(call_id)
    if doc is None:
        return "unknown"
    if doc.value.get("params") != params:
        return "other"
    return await _claim(http, presence, call_id, _from_start(doc.value))


def _from_start(value: Mapping[str, Any]) -> str | None:
    """A position before every event of the call ``value`` describes: the
    client saw none of them (so each question asked is asked again)."""
    number = value.get("stream")
    return event_id(number, 0) if isinstance(number, int) else None


async def _claim(
    http: HttpSession, presence: Presence, call_id: str, last_event_id: str | None
) -> Claim:
    records = _records(http)
    began = trio.current_time()
    with trio.move_on_after(presence.lease + 2 * presence.beat):
        while True:
            doc = await records.call(call_id)
            if doc is None:
                return "unknown"
            if "done" in doc.value:
                _adopt_done(http, doc.value)
                return "here"
            if not await _elsewhere(presence, doc.value.get("worker")):
                taken = await _take_over(http, presence, call_id, doc, last_event_id)
                log.info(
                    "call %s: %s after %.1f s", call_id,
                    "taken on" if taken else "not taken on (held here or taken first)",
                    trio.current_time() - began,
                )  # fmt: skip
                return "here" if taken else "elsewhere"
            await trio.sleep(presence.beat / 4)
    log.info("call %s: a live process still holds it", call_id)
    return "elsewhere"


def is_question_id(message_id: object) -> TypeGuard[str]:
    """Whether ``message_id`` is a durable call's question's
    (:func:`~bridge.durable.live.question_id`: ``"<call>/<key>"``)."""
    return isinstance(message_id, str) and "/" in message_id


async def route(
    http: HttpSession, presence: Presence, message_id: object, data: bytes
) -> bool:
    """Get a client's response to the process whose call asked it; False if
    it is for this process (deliver it here)."""
    if not is_question_id(message_id):
        return False
    call_id = message_id.partition("/")[0]
    doc = await _records(http).call(call_id)
    if doc is None or "done" in doc.value:
        return False
    worker = doc.value.get("worker")
    if await _elsewhere(presence, worker):
        await presence.route(str(worker), http.id, data)
        return True
    await _take_over(http, presence, call_id, doc, None)  # unless held here
    return False


async def route_cancel(
    http: HttpSession, presence: Presence, request_id: object, data: bytes
) -> bool:
    """Get the client's ``notifications/cancelled`` for call ``request_id`` to
    the process running it; a call whose process is gone is forgotten, so no
    one takes it on. False if no other process has it."""
    if not isinstance(request_id, int | str) or isinstance(request_id, bool):
        return False
    records = _records(http)
    for call_id, _stream in await records.calls():
        doc = await records.call(call_id)
        if doc is None or doc.value.get("request") != request_id:
            continue
        worker = doc.value.get("worker")
        if "done" in doc.value or worker == presence.id:
            return False
        if await _elsewhere(presence, worker):
            await presence.route(str(worker), http.id, data)
        else:
            await records.forget_call(call_id)
        return True
    return False


async def _elsewhere(presence: Presence, worker: object) -> bool:
    """Whether another live process holds a call. This process may have let
    its own go (the session expired here): it takes them on again."""
    return worker != presence.id and await presence.alive(worker)


def _adopt_done(http: HttpSession, value: Mapping[str, Any]) -> None:
    number, request_id = value.get("stream"), value.get("request")
    if not isinstance(number, int) or not isinstance(request_id, int | str):
        return
    if http.stream_of(request_id) is not None:
        return
    body = {"jsonrpc": "2.0", "id": request_id, **value["done"]}
    http.adopt_stream(number, request_id, json.dumps(body).encode())


async def _take_over(
    http: HttpSession,
    presence: Presence,
    call_id: str,
    doc: Document,
    last_event_id: str | None,
) -> int:
    """Claim a call of a process that is gone and replay it here; 1 if done,
    0 if another process claimed it first or it cannot be replayed."""
    value = doc.value
    number, request_id = value.get("stream"), value.get("request")
    if not isinstance(number, int) or not isinstance(request_id, int | str):
        return 0
    if http.stream_of(request_id) is not None:
        return 0  # this process holds it already
    taken = await _records(http).take_call(call_id, doc, presence.id)
    if taken is None:
        return 0  # another process took it on first
    mine, records, asked, asked_at = taken
    seen_stream, seen = _position(last_event_id)
    tag = str(value.get("tag", call_id))
    seen_here = seen if number == seen_stream else None
    state = Revived(call_id, tag, asked, seen_here, asked_at)
    http.adopt_stream(number, request_id)
    try:
        http.connection.revive_call(http.session, mine, records, state)
    except Exception as exc:  # its tool is gone, or its journal is bad
        log.warning("a durable call could not be taken on again: %s", exc)
        http.request_over(request_id)
        return 0
    previous = value.get("worker")
    if isinstance(previous, str) and previous != presence.id:
        for data in await presence.left_for(previous, http.id, tag + "/"):
            await http.deliver(data)  # answers that reached the dead process
    return 1


def _position(last_event_id: str | None) -> tuple[int | None, int | None]:
    if last_event_id is None:
        return None, None
    try:
        return parse_event_id(last_event_id)
    except UnknownEvent:
        return None, None

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
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, final

import trio

from bridge.jsonrpc.messages import RequestId
from bridge.durable.records import CALLS
from bridge.durable.live import ASKED, SESSIONS, Revived
from bridge.stores import AsyncStore, Document, StoreConflict

from .events import UnknownEvent, parse_event_id
from bridge.durable.presence import Presence

if TYPE_CHECKING:
    from .legacy_session import HttpSession

__all__ = [
    "HttpHome",
    "claim_stream",
    "forget",
    "load",
    "revive_calls",
    "route",
    "save",
]

log = logging.getLogger("yieldmcp.http")

Claim = Literal["here", "unknown", "elsewhere"]
_TRIES = 5  # compare-and-swap attempts when processes take a session on at once


@final
class HttpHome:
    """What a durable HTTP session tells its calls (``bridge.server.Home``)."""

    def __init__(self, http: HttpSession, store: AsyncStore, worker: str) -> None:
        self.http = http
        self.store = store
        self.worker = worker
        self.session_id = http.id
        self.ttl = http.limits.session_idle_timeout
        self.saved = 0.0  # when the session's document was last written

    def stream_of(self, request_id: RequestId) -> int | None:
        return self.http.stream_of(request_id)

    def position(self) -> int:
        return self.http.store.position()


def _home(http: HttpSession) -> HttpHome | None:
    home = http.connection.home
    return home if isinstance(home, HttpHome) else None


async def save(http: HttpSession) -> None:
    """Write the session's state to its document (after ``initialize``,
    ``setLevel``), keeping the generation other processes have reached."""
    home = _home(http)
    if home is None:
        return
    home.saved = time.time()
    expires = home.saved + home.ttl
    for _ in range(_TRIES):
        doc = await home.store.get(SESSIONS, http.id)
        generation = 0 if doc is None else int(doc.value.get("gen", 0))
        state = {**http.connection.state(), "owner": http.owner, "gen": generation}
        expect = 0 if doc is None else doc.version
        try:
            await home.store.put(
                SESSIONS, http.id, state, expect=expect, expires_at=expires
            )
        except StoreConflict:
            continue  # another process wrote it meanwhile: read again
        return


async def touch(http: HttpSession) -> None:
    """Keep a used session's document from expiring (written at most every
    half of its lifetime)."""
    home = _home(http)
    if home is not None and time.time() - home.saved > home.ttl / 2:
        await save(http)


async def forget(http: HttpSession) -> None:
    """The session was ended (``DELETE``): no process takes it on again."""
    home = http.connection.home
    if home is not None:
        await home.store.delete(SESSIONS, http.id)


async def load(
    store: AsyncStore, session_id: str, who: str | None
) -> tuple[dict[str, Any], int] | None:
    """The session's document, claimed for this process: its state and new
    generation; None if it is unknown, expired or another principal's."""
    for _ in range(_TRIES):
        doc = await store.get(SESSIONS, session_id)
        if doc is None or doc.value.get("owner") != who:
            return None
        generation = int(doc.value.get("gen", 0)) + 1
        state = {**doc.value, "gen": generation}
        try:
            await store.put(
                SESSIONS,
                session_id,
                state,
                expect=doc.version,
                expires_at=doc.expires_at,
            )
        except StoreConflict:
            continue  # another process took it on meanwhile: read again
        return state, generation
    return None


async def revive_calls(
    http: HttpSession, presence: Presence, last_event_id: str | None
) -> int:
    """Take on the calls of the session that an earlier process wrote down
    and no live process holds; how many."""
    taken = 0
    for call_id, _stream in await _calls(http):
        doc = await http_store(http).get(CALLS, call_id)
        if doc is None or doc.value.get("session") != http.id:
            continue
        if "done" in doc.value:
            _adopt_done(http, doc.value)
        elif not await _elsewhere(presence, doc.value.get("worker")):
            taken += await _take_over(http, presence, call_id, doc, last_event_id)
    return taken


async def claim_stream(
    http: HttpSession, presence: Presence, last_event_id: str
) -> Claim:
    """Make the stream ``last_event_id`` names servable here, taking its call
    on once its process's lease has run out: ``"here"``; ``"unknown"``; or
    ``"elsewhere"``: a live process still holds it after a lease's wait."""
    number, _seq = _position(last_event_id)
    call_id = next((c for c, s in await _calls(http) if s == number), None)
    if call_id is None:
        return "unknown"
    with trio.move_on_after(presence.lease + 2 * presence.beat):
        while True:
            doc = await http_store(http).get(CALLS, call_id)
            if doc is None:
                return "unknown"
            if "done" in doc.value:
                _adopt_done(http, doc.value)
                return "here"
            if not await _elsewhere(presence, doc.value.get("worker")):
                taken = await _take_over(http, presence, call_id, doc, last_event_id)
                return "here" if taken else "elsewhere"
            await trio.sleep(presence.beat / 4)
    return "elsewhere"


async def route(
    http: HttpSession, presence: Presence, message_id: object, data: bytes
) -> bool:
    """Get a client's response to the process whose call asked it; False if
    it is for this process (deliver it here)."""
    if not isinstance(message_id, str) or "/" not in message_id:
        return False
    call_id = message_id.partition("/")[0]
    doc = await http_store(http).get(CALLS, call_id)
    if doc is None or doc.value.get("session") != http.id:
        return False
    worker = doc.value.get("worker")
    if "done" in doc.value:
        return False
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
    store = http_store(http)
    for call_id, _stream in await _calls(http):
        doc = await store.get(CALLS, call_id)
        if doc is None or doc.value.get("request") != request_id:
            continue
        worker = doc.value.get("worker")
        if "done" in doc.value or worker == presence.id:
            return False
        if await _elsewhere(presence, worker):
            await presence.route(str(worker), http.id, data)
        else:
            await store.delete(CALLS, call_id)
        return True
    return False


async def _elsewhere(presence: Presence, worker: object) -> bool:
    """Whether another live process holds a call. This process may have let
    its own go (the session expired here): it takes them on again."""
    return worker != presence.id and await presence.alive(worker)


def http_store(http: HttpSession) -> AsyncStore:
    home = _home(http)
    assert home is not None
    return home.store


async def _calls(http: HttpSession) -> list[tuple[str, Any]]:
    """The session's calls, as ``(call id, stream number)``, oldest first."""
    entries = await http_store(http).read(SESSIONS, http.id)
    found = {str(e["c"]): e.get("s") for e in entries if isinstance(e.get("c"), str)}
    return list(found.items())


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
    store, value = http_store(http), doc.value
    number, request_id = value.get("stream"), value.get("request")
    if not isinstance(number, int) or not isinstance(request_id, int | str):
        return 0
    if http.stream_of(request_id) is not None:
        return 0  # this process holds it already
    mine = {**value, "worker": presence.id}
    try:
        await store.put(
            CALLS, call_id, mine, expect=doc.version, expires_at=doc.expires_at
        )
    except StoreConflict:
        return 0  # another process took it on first
    records = await store.read(CALLS, call_id)
    asked = {str(r["k"]): int(r["e"]) for r in await store.read(ASKED, call_id)}
    seen_stream, seen = _position(last_event_id)
    tag = str(value.get("tag", call_id))
    state = Revived(call_id, tag, asked, seen if number == seen_stream else None)
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

"""Durable 2025-11-25 HTTP sessions: kept in the server's store, taken on again.

With a store (``Server(store=...)``), an HTTP session is a document
``("session", id)``: what ``initialize`` negotiated (version, the client's
capabilities and info), the log level, the principal who opened it, and a
*generation* (how many processes have taken it on). Its calls are written down
as they go (:mod:`bridge.server.durable_calls`).

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
from typing import TYPE_CHECKING, Any, final

from bridge.jsonrpc.messages import RequestId
from bridge.server.call_records import CALLS
from bridge.server.durable_calls import ASKED, SESSIONS, Revived
from bridge.stores import AsyncStore, StoreConflict

from .events import UnknownEvent, parse_event_id

if TYPE_CHECKING:
    from .legacy_session import HttpSession

__all__ = ["HttpHome", "forget", "load", "save"]

log = logging.getLogger("yieldmcp.http")

_TRIES = 5  # compare-and-swap attempts when processes take a session on at once


@final
class HttpHome:
    """What a durable HTTP session tells its calls (``bridge.server.Home``)."""

    def __init__(self, http: HttpSession, store: AsyncStore) -> None:
        self.http = http
        self.store = store
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


async def save(http: HttpSession, generation: int = 0) -> None:
    """Write the session's document (after ``initialize``, ``setLevel``)."""
    home = _home(http)
    if home is None:
        return
    state = {**http.connection.state(), "owner": http.owner, "gen": generation}
    home.saved = time.time()
    await home.store.put(SESSIONS, http.id, state, expires_at=home.saved + home.ttl)


async def touch(http: HttpSession) -> None:
    """Keep a used session's document from expiring (written at most every
    half of its lifetime)."""
    home = _home(http)
    if home is not None and time.time() - home.saved > home.ttl / 2:
        await save(http, http.generation)


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


async def revive_calls(http: HttpSession, last_event_id: str | None) -> int:
    """Take on every call of the session that an earlier process wrote
    down; how many were in flight."""
    home = http.connection.home
    assert home is not None
    store = home.store
    seen_stream, seen = _position(last_event_id)
    call_ids = dict.fromkeys(r.get("c") for r in await store.read(SESSIONS, http.id))
    revived = 0
    for call_id in call_ids:
        if not isinstance(call_id, str):
            continue
        doc = await store.get(CALLS, call_id)
        if doc is None or doc.value.get("session") != http.id:
            continue
        value = doc.value
        number, request_id = value.get("stream"), value.get("request")
        if not isinstance(number, int) or not isinstance(request_id, int | str):
            continue
        done = value.get("done")
        if done is not None:
            body = {"jsonrpc": "2.0", "id": request_id, **done}
            http.adopt_stream(number, request_id, json.dumps(body).encode())
            continue
        records = await store.read(CALLS, call_id)
        asked = {str(r["k"]): int(r["e"]) for r in await store.read(ASKED, call_id)}
        state = Revived(
            call_id, str(value["tag"]), asked, seen if number == seen_stream else None
        )
        http.adopt_stream(number, request_id)
        try:
            http.connection.revive_call(http.session, value, records, state)
        except Exception as exc:  # its tool is gone, or its journal is bad
            log.warning("a durable call could not be taken on again: %s", exc)
            http.request_over(request_id)
            continue
        revived += 1
    return revived


def _position(last_event_id: str | None) -> tuple[int | None, int | None]:
    if last_event_id is None:
        return None, None
    try:
        return parse_event_id(last_event_id)
    except UnknownEvent:
        return None, None

"""A durable 2025-11-25 session's records: its document and the calls it took on.

With a store, an HTTP session is the document ``("session", id)``: what
``initialize`` negotiated (version, the client's capabilities and info), the
log level, the principal who opened it (``owner``), and a *generation*: how
many processes have taken it on. The stream ``("session", id)`` lists the
calls it took on: ``{"c": call_id, "s": stream}`` each (written by
:class:`~.live.LiveLog`).

A process that takes the session on raises the generation by one with
compare-and-swap (:meth:`SessionRecords.claim`: one process wins a race), so
the event ids it sends (which start at ``generation << 32``) come after every
id sent before. The store's generation is the truth: a process that holds an
older copy of the session (another process took it on since) must take it
on again before it answers a resume (:meth:`SessionRecords.generation`).

It does not know HTTP (``bridge.transports.http``: the session, its streams)
or what a call does (:mod:`bridge.server.calls.live`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final, final

from bridge.stores import AsyncStore, Document, StoreConflict, StoreUnreadable

from .live import ASKED, SESSIONS
from .log import CALLS

__all__ = ["SessionRecords"]

_TRIES: Final = 5  # compare-and-swap attempts when processes take a session on
_MOST_GENERATIONS: Final = 1 << 31  # event ids are generation << 32: JSON-safe


def _generation(session_id: str, doc: Document) -> int:
    """The generation ``doc`` holds.

    Raises:
        StoreUnreadable: it is not one (no writer of ours wrote it).
    """
    found: Any = doc.value.get("gen", 0)
    if isinstance(found, bool) or not isinstance(found, int):
        why = "its generation is not a whole number"
    elif not 0 <= found < _MOST_GENERATIONS:
        why = "its generation is out of range"
    else:
        return found
    raise StoreUnreadable("the store", SESSIONS, session_id, "document", why)


@final
class SessionRecords:
    """The records of session ``session_id`` in ``store`` (module doc);
    ``ttl``: seconds they outlive their last write."""

    __slots__ = ("session_id", "store", "ttl")

    def __init__(self, store: AsyncStore, session_id: str, *, ttl: float) -> None:
        self.store = store
        self.session_id = session_id
        self.ttl = ttl

    async def save(self, state: Mapping[str, Any], now: float) -> None:
        """Write the session's ``state`` (after ``initialize``, ``setLevel``),
        keeping the generation other processes have reached."""
        store, session_id = self.store, self.session_id
        for _ in range(_TRIES):
            doc = await store.get(SESSIONS, session_id)
            generation = 0 if doc is None else _generation(session_id, doc)
            value = {**state, "gen": generation}
            expect = 0 if doc is None else doc.version
            try:
                # The session's index of its calls (the stream of the same
                # name) expires with the document, in the same write.
                await store.put_and_append(
                    SESSIONS,
                    session_id,
                    value,
                    [],
                    expect=expect,
                    expires_at=now + self.ttl,
                )
            except StoreConflict:
                continue  # another process wrote it meanwhile: read again
            return

    async def forget(self) -> None:
        """The session was ended (``DELETE``): no process takes it on again."""
        await self.store.delete(SESSIONS, self.session_id)

    async def claim(self, who: str | None) -> tuple[dict[str, Any], int] | None:
        """The session's state, taken on by this process: its state and new
        generation; None if it is unknown, expired or another principal's."""
        store, session_id = self.store, self.session_id
        for _ in range(_TRIES):
            doc = await store.get(SESSIONS, session_id)
            if doc is None or doc.value.get("owner") != who:
                return None
            generation = _generation(session_id, doc) + 1
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

    async def generation(self) -> int | None:
        """The session's generation in the store (None: gone)."""
        doc = await self.store.get(SESSIONS, self.session_id)
        return None if doc is None else _generation(self.session_id, doc)

    async def calls(self) -> list[tuple[str, Any]]:
        """The session's calls, as ``(call id, stream number)``, oldest first."""
        entries = await self.store.read(SESSIONS, self.session_id)
        found = {
            str(e["c"]): e.get("s") for e in entries if isinstance(e.get("c"), str)
        }
        return list(found.items())

    async def call(self, call_id: str) -> Document | None:
        """Call ``call_id``'s document, if it is this session's."""
        doc = await self.store.get(CALLS, call_id)
        if doc is None or doc.value.get("session") != self.session_id:
            return None
        return doc

    async def take_call(
        self, call_id: str, doc: Document, worker: str
    ) -> (
        tuple[dict[str, Any], list[Mapping[str, Any]], dict[str, int], dict[str, float]]
        | None
    ):
        """Name ``worker`` as the process running the call ``doc`` describes
        (compare-and-swap: None if another process took it first): the new
        document, the call's journal records, the questions it asked (effect
        key -> position of the event that asked it) and when (``time.time()``;
        records written before the time was kept have none)."""
        store = self.store
        mine = {**doc.value, "worker": worker}
        try:
            await store.put(
                CALLS, call_id, mine, expect=doc.version, expires_at=doc.expires_at
            )
        except StoreConflict:
            return None
        records = await store.read(CALLS, call_id)
        questions = await store.read(ASKED, call_id)
        return mine, records, _asked(call_id, questions), _asked_at(questions)

    async def forget_call(self, call_id: str) -> None:
        """Forget a call no process will take on (the client cancelled it)."""
        await self.store.delete(CALLS, call_id)


def _asked(call_id: str, records: list[Mapping[str, Any]]) -> dict[str, int]:
    """Effect key -> position of the event that asked it, from the call's
    questions stream.

    Raises:
        StoreUnreadable: a record is not ``{"k": key, "e": position}``.
    """
    asked: dict[str, int] = {}
    for number, record in enumerate(records, 1):
        key: Any = record.get("k")
        position: Any = record.get("e")
        if (
            not isinstance(key, str)
            or isinstance(position, bool)
            or not isinstance(position, int)
        ):
            why = "not a question's key and position"
            raise StoreUnreadable("the store", ASKED, call_id, f"record {number}", why)
        asked[key] = position
    return asked


def _asked_at(records: list[Mapping[str, Any]]) -> dict[str, float]:
    """Effect key -> when the question was sent (``"t"``), where a record has
    a finite time (:func:`_asked` checked the rest)."""
    return {
        record["k"]: float(at)
        for record in records
        if isinstance(at := record.get("t"), int | float)
        and not isinstance(at, bool)
        and math.isfinite(at)
    }

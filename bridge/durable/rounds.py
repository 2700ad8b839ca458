"""Durable 2026-07-28 rounds: the journal in a store, a small one-time state.

With a store (``Server(store=...)``), a multi-round call keeps its journal in
the store instead of in ``requestState``:

* **The stream** ``("call", call_id)`` holds the call's journal as records
  (:mod:`bridge.durable.log`). A round appends every answer it takes
  from ``inputResponses``, every step result and every notice key *before* it
  moves past them where anyone could tell: before it runs a step, sends a
  notification or replies. (The tool's code between two yields runs in
  between, but it must be free of side effects anyway: ``docs/steps.md``.)
  A round rebuilds the journal from the stream.
* **The document** ``("call", call_id)`` says which round the call is at:
  ``{"round": r, "asked": ..., "claim": until}``, or ``{"round": r, "done":
  true, "answers": digest}`` once it ended, with the result it sent
  (``"value"``) or ``"task": true`` if it went on as a task.
  (Branch deadlines are records of the journal.)
* **The state** the client carries is a sealed reference: the call's id and
  round, and the binding of :func:`~bridge.server.state_token.binding` (method,
  tool, argument digest, caller; the expiry is the sealing's). It stays the
  same size however many rounds the call takes.

**One-time states.** A retry *claims* its round: it moves the document on with
a compare-and-swap (``put_and_append(..., expect=version)``, against the
version it opened with), marking it claimed until ``claim_seconds`` from now.
It does so with its first write, before its first step or notification (a
round that runs none claims and moves on in the same write), so a round costs
the store two trips: one to open (``get_and_read``), one to move on. A second
retry with the same state finds the round
claimed, moved on or done and is refused (:class:`RoundUsed`); of two at
once, the store's compare-and-swap lets exactly one through. The same
request again after the round that ended the call (the same answers: its
reply was lost) gets the result it sent (:class:`RoundFinished`), or is told
of the task it made (:class:`RoundBecameTask`); nothing runs again. The round ends by
moving the document to round ``r + 1`` (a new state goes back), or to done. A
round refused for the request's own fault (an ``inputResponses`` entry that is
not a valid answer) gives its claim back, so the corrected retry works. A
claim whose process died is taken over once ``claim_seconds`` have passed;
a live round keeps its claim while it sleeps or runs a long step
(:meth:`RoundHold.keep_claim`), so a retry never runs that round's steps
again while it is still running them.

A call's first round writes nothing until it returns ``input_required``: its
client holds no state yet, so nothing could resume it, and a call that
completes in one round costs the store nothing.

**Expiry.** The document and the stream expire with the state (the sealer's
TTL), refreshed each round; a store's :meth:`~bridge.stores.base.JournalStore.sweep`
deletes them after that (``docs/durable.md``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, final

import trio

from bridge.stores import AsyncStore, StoreConflict, StoreError
from runtime.errors import YieldMCPError
from runtime.lowlevel import Journal

from .log import CALLS, CallLog, size_of
from .recovery import lapsed

__all__ = [
    "CLAIM_SECONDS",
    "RoundBecameTask",
    "RoundFinished",
    "RoundGone",
    "RoundHold",
    "RoundUsed",
]

_log = logging.getLogger("yieldmcp.rounds")

CLAIM_SECONDS: Final = 60.0
"""How long a round holds its state by default
(``ServerLimits.round_claim_seconds``)."""


class RoundGone(YieldMCPError):
    """The state names no call the store holds: expired, swept, rolled back,
    or sealed by a server without a store (the server answers with its one
    uniform "Invalid or expired requestState")."""


class RoundFinished(YieldMCPError):
    """The state is the call's last round, which finished with its result
    kept: a retry with the same answers, whose reply was lost (its process
    died after writing the end), gets that result (``value``) again, and
    nothing runs."""

    def __init__(self, value: Any) -> None:
        super().__init__("the call finished; its result is kept")
        self.value = value


class RoundBecameTask(YieldMCPError):
    """The state is the round that made the call a task (``task_from="step"``)
    and this is the same request again, whose reply (the task's id) was
    lost: the task is ``task_id`` (the call's id), made once; nothing runs."""

    def __init__(self, task_id: str) -> None:
        super().__init__("the call went on as a task")
        self.task_id = task_id


class RoundUsed(YieldMCPError):
    """The state's round was used already: it went on, the call ended, or
    another retry holds it now (the server answers ``request_state_used``)."""


@final
class RoundHold:
    """One round's hold on its call in the store (see the module doc).

    Args:
        store: the server's store.
        ttl: seconds the call's document and stream live after each round
            (the sealed state's).
        max_bytes: the journal's bound (:class:`~.log.CallLog`).
        claim_seconds: how long a round holds its state.
        clock: seconds since the epoch.
        answers: a digest of the request's ``inputResponses``: a call that
            ended in this round gives its kept result again only to a retry
            with the same answers (:class:`RoundFinished`).
    """

    def __init__(
        self,
        store: AsyncStore,
        *,
        ttl: float,
        max_bytes: int,
        claim_seconds: float = CLAIM_SECONDS,
        clock: Callable[[], float],
        answers: str = "",
    ) -> None:
        self.store = store
        self.answers = answers
        self.log = CallLog(store, "", max_bytes=max_bytes)
        self.ttl = ttl
        self.claim_seconds = claim_seconds
        self.clock = clock
        self.round = 0
        self.version = 0  # of the document this round holds; 0: none yet
        self.kept: list[Mapping[str, Any]] = []  # written with the round's end
        self.held: Mapping[str, Any] = {}  # the document as this round claimed it
        self.lost = False  # another retry took the round over
        self.claimed_until = 0.0  # when this round's claim runs out
        self._writing = trio.Lock()  # the round's writes, and the keeper's

    @property
    def call_id(self) -> str:
        """The call's id (its journal's), set from the state or the first
        round's journal."""
        return self.log.call_id

    @call_id.setter
    def call_id(self, call_id: str) -> None:
        self.log.call_id = call_id

    @property
    def first(self) -> bool:
        """Whether this is the call's first round: no client holds a state
        that could resume it, so its records wait for :meth:`park`."""
        return self.version == 0

    def refers(self, state: Mapping[str, Any]) -> tuple[str, int]:
        """The call and round a sealed state refers to.

        Raises:
            RoundGone: a state sealed without a store.
        """
        call: Any = state.get("call")
        number: Any = state.get("round")
        if not isinstance(call, str) or not isinstance(number, int):
            raise RoundGone("sealed by a server without a store")
        self.call_id, self.round = call, number
        return call, number

    async def claim(
        self,
    ) -> tuple[Journal, Mapping[str, Any]]:
        """Read the round :meth:`refers` named: the call's journal and what
        was asked (its claim is written with the round's first write).

        Raises:
            RoundGone: the state refers to no call the store holds.
            RoundUsed: the round was used.
        """
        # One trip: the document, then the stream (whoever moved the document
        # to this round wrote its records in the same write, or before).
        doc, records = await self.store.get_and_read(CALLS, self.call_id)
        if doc is None:
            raise RoundGone("expired, or swept")
        value = doc.value
        claim: Any = value.get("claim")
        found: Any = value.get("round")
        if not isinstance(found, int) or found < self.round:
            raise RoundGone("the store lost the round (restored, rolled back)")
        if self._finished_here(value):
            _log.info("call %s: its result sent again (a retry)", self.call_id)
            raise RoundFinished(value["value"])  # its reply was lost: again
        if self._same_request(value) and value.get("task") is True:
            _log.info("call %s: its task told again (a retry)", self.call_id)
            raise RoundBecameTask(self.call_id)  # its reply was lost: again
        if found > self.round or value.get("done"):
            raise RoundUsed("the round went on, or the call ended")
        held_until = float(claim) if isinstance(claim, int | float) else None
        if not lapsed(held_until, self.clock()):
            raise RoundUsed("another retry is running this round")
        self.version, self.held = doc.version, value
        try:
            journal = Journal.from_records(records, self.call_id)
        except ValueError:
            raise RoundGone("its journal is malformed") from None
        self.log.written = size_of(records)
        asked: Any = value.get("asked", {})
        return journal, asked

    def _same_request(self, value: Mapping[str, Any]) -> bool:
        """Whether the call ended in this round (document ``value``) given
        the answers this request gives: this is the same request again."""
        return (
            value.get("round") == self.round
            and value.get("done") is True
            and value.get("answers") == self.answers
        )

    def _finished_here(self, value: Mapping[str, Any]) -> bool:
        """:meth:`_same_request`, and its result was kept."""
        return self._same_request(value) and isinstance(value.get("value"), dict)

    @property
    def due(self) -> bool:
        """Whether :meth:`flush` has something to write before the round
        shows anything (records kept, or the claim not yet made)."""
        return not self.first and bool(self.kept or self.claimed_until == 0)

    async def flush(self) -> None:
        """Write the records kept so far, before the round goes on where it
        shows (a step, a notification), renewing the round's claim; a first
        round keeps them for :meth:`park`.

        Raises:
            RoundUsed, the claim ran out and another
                retry took the round over (this round stops here).
        """
        if not self.due:
            return  # a first round, or nothing to write and the claim held
        records, self.kept = self.kept, []
        # The claim with the records, in one write: a round that lost it must
        # not write into the call another retry now runs. Renewing it at every
        # write keeps a round whose steps each end within claim_seconds from
        # being taken over; a round claims before its first step or
        # notification, so a second retry is refused before it runs any.
        now = self.clock()
        if self._claim_due(now):
            claimed = {**self.held, "claim": now + self.claim_seconds}
            await self._put(claimed, now, records=records)
        elif records:
            expires_at = now + self.ttl
            await self.log.append(records, expires_at=expires_at, charged=True)

    def keep(self, records: Sequence[Mapping[str, Any]]) -> None:
        """Keep ``records`` for the next write (charged now: a journal past
        its bound fails the call whether or not it is written yet).

        Raises:
            JournalTooLarge: the journal would pass its bound.
        """
        self.log.charge(records)
        self.kept.extend(records)

    async def park(self, asked: Mapping[str, Any]) -> dict[str, Any]:
        """Write what is left and move the call to its next round: what the
        new state carries (the call's id and the new round).

        Raises:
            RoundUsed, the claim ran out and another
                retry took the round over.
        """
        value = {"round": self.round + 1, "asked": dict(asked), "claim": None}
        await self._move(value, write=True)
        return {"call": self.call_id, "round": self.round + 1}

    async def to_task(self, ttl: float) -> str:
        """The call goes on as a task (``task_from="step"``): this round is
        its last, its state is used up (of two retries with one state,
        exactly one gets here), and its records are written for the task to
        replay, to live ``ttl`` seconds. The call's id (the task's)."""
        if self.first:
            if self.kept:
                records, self.kept = self.kept, []
                expires_at = self.clock() + ttl
                await self.log.append(records, expires_at=expires_at, charged=True)
            return self.call_id
        self.ttl = max(self.ttl, ttl)
        end = {"round": self.round, "done": True, "task": True, "answers": self.answers}
        await self._move(end, write=True)
        return self.call_id

    async def finish(self, value: Mapping[str, Any] | None = None) -> None:
        """The call ended (a result or an error): its state is used up. The
        records of its last round go with the write that says so, so the
        journal in the store is the whole call's (``yieldmcp journal`` takes
        it out for a replay). ``value``, the call's result as sent, is kept
        with it while the state lives (if it fits the journal's bound): a
        retry of this round with the same answers, whose reply was lost, gets
        it again (:class:`RoundFinished`) instead of a refusal."""
        if self.first:
            return  # a first round: no state was ever given out
        end: dict[str, Any] = {"round": self.round, "done": True}
        if value is not None and size_of([{"v": value}]) <= self.log.max_bytes:
            end["value"], end["answers"] = value, self.answers
        await self._move(end, write=True)

    async def release(self) -> None:
        """Give the claim back: the request was refused for its own fault, and
        its corrected retry may use the same state (and reuse what this one
        recorded)."""
        if self.first or self.lost:
            return
        if self.claimed_until == 0 and not self.kept:
            return  # never claimed, nothing recorded: nothing to give back
        await self._move({**self.held, "claim": None}, write=True)

    async def _move(self, value: Mapping[str, Any], *, write: bool) -> None:
        # One compare-and-swap against the version this round read or last
        # wrote: a round taken over writes nothing. The records go with the
        # document, atomically (a document naming a round whose records are
        # not stored would replay without them); an empty append still
        # refreshes the stream's expiry with the document's.
        now = self.clock()
        records, self.kept = self.kept, []
        await self._put(value, now, records=records if write else None)

    async def keep_claim(self) -> None:
        """Renew the round's claim once half of it has passed, for as long as
        the round runs (run it in the round's nursery; it returns only when
        the round is lost). Without it, a step or a sleep longer than the
        claim would let a retry take the round over and run its steps again
        while this round still runs them.

        A renewal the store fails is tried again; if the claim runs out
        meanwhile, the round learns it at its next write (:class:`RoundUsed`),
        as a round whose process stalled does.
        """
        while not self.lost:
            if self.claimed_until == 0:  # the round's first write claims
                await trio.sleep(self.claim_seconds / 4)
                continue
            renew_at = self.claimed_until - self.claim_seconds / 2
            await trio.sleep(max(0.0, renew_at - self.clock()))
            now = self.clock()
            if self.claimed_until == 0 or not self._claim_due(now):
                continue  # the round wrote (and renewed) meanwhile
            try:
                claimed = {**self.held, "claim": now + self.claim_seconds}
                await self._put(claimed, now, records=())
            except RoundUsed:
                return
            except StoreError as exc:
                _log.warning(
                    "call %s: the round's claim was not renewed (%s); trying again",
                    self.call_id,
                    exc,
                )
                await trio.sleep(self.claim_seconds / 8)

    def _claim_due(self, now: float) -> bool:
        # Once half the claim has passed (or before any): until then no other
        # process can take the round over (their clocks agreeing within that
        # half).
        return now >= self.claimed_until - self.claim_seconds / 2

    async def _put(
        self,
        value: Mapping[str, Any],
        now: float,
        *,
        records: Sequence[Mapping[str, Any]] | None = None,
    ) -> None:
        # Without a checkpoint when no one else writes (the usual case: the
        # keeper renews only during a long step or sleep).
        try:
            self._writing.acquire_nowait()
        except trio.WouldBlock:
            await self._writing.acquire()
        try:
            await self._put_now(value, now, records)
        finally:
            self._writing.release()

    async def _put_now(
        self,
        value: Mapping[str, Any],
        now: float,
        records: Sequence[Mapping[str, Any]] | None,
    ) -> None:
        if self.lost:
            raise RoundUsed("another retry took the round over")
        expires_at = now + self.ttl
        try:
            if records is None:
                self.version = await self.store.put(
                    CALLS, self.call_id, value, expect=self.version,
                    expires_at=expires_at,
                )  # fmt: skip
            else:
                self.version = await self.store.put_and_append(
                    CALLS, self.call_id, value, records, expect=self.version,
                    expires_at=expires_at,
                )  # fmt: skip
        except StoreConflict:
            self.lost = True
            raise RoundUsed("another retry took the round over") from None
        claim: Any = value.get("claim")
        self.claimed_until = claim if isinstance(claim, int | float) else 0.0

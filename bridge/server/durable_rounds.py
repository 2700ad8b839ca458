"""Durable 2026-07-28 rounds: the journal in a store, a small one-time state.

With a store (``Server(store=...)``), a multi-round call keeps its journal in
the store instead of in ``requestState``:

* **The stream** ``("call", call_id)`` holds the call's journal as records
  (:mod:`bridge.server.call_records`). A round appends every answer it takes
  from ``inputResponses``, every step result and every notice key *before* it
  moves past them where anyone could tell: before it runs a step, sends a
  notification or replies. (The tool's code between two yields runs in
  between, but it must be free of side effects anyway: ``docs/steps.md``.)
  A round rebuilds the journal from the stream.
* **The document** ``("call", call_id)`` says which round the call is at:
  ``{"round": r, "asked": ..., "deadlines": ..., "claim": until}``, or
  ``{"round": r, "done": true}`` once it ended.
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
claimed, moved on or done and is refused with :func:`used_state`; of two at
once, the store's compare-and-swap lets exactly one through. The round ends by
moving the document to round ``r + 1`` (a new state goes back), or to done. A
round refused for the request's own fault (an ``inputResponses`` entry that is
not a valid answer) gives its claim back, so the corrected retry works. A
claim whose process died is taken over once ``claim_seconds`` have passed.

A call's first round writes nothing until it returns ``input_required``: its
client holds no state yet, so nothing could resume it, and a call that
completes in one round costs the store nothing.

**Expiry.** The document and the stream expire with the state (the sealer's
TTL), refreshed each round; a store's :meth:`~bridge.stores.base.JournalStore.sweep`
deletes them after that (``docs/durable.md``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Generator, Mapping
from typing import Any, Final, final

from bridge.jsonrpc.messages import INVALID_PARAMS
from bridge.stores import AsyncStore, StoreConflict
from runtime.errors import RequestError
from runtime.lowlevel import Journal

from .call_records import CALLS, journal_from_records
from .round_steps import Wait, Yielded
from .state_token import invalid_state

__all__ = ["CLAIM_SECONDS", "DurableCall", "used_state"]

CLAIM_SECONDS: Final = 60.0
"""How long a round holds its state by default
(``ServerLimits.round_claim_seconds``)."""


def used_state() -> RequestError:
    """The error of a ``requestState`` already used by another retry.

    Distinct from :func:`~bridge.server.state_token.invalid_state`: the state
    opened (it is genuine, for this call and caller), so saying that it was
    used tells a client nothing about the checks a forged one fails.
    """
    return RequestError(
        INVALID_PARAMS,
        "requestState already used: this round of the call was retried already; "
        "continue with the requestState of the latest reply, or call the tool "
        "again without one",
        {"reason": "request_state_used"},
    )


@final
class DurableCall:
    """One round's hold on its call in the store (see the module doc).

    Args:
        store: the server's store.
        ttl: seconds the call's document and stream live after each round
            (the sealed state's).
        claim_seconds: how long a round holds its state.
        clock: seconds since the epoch.
    """

    def __init__(
        self,
        store: AsyncStore,
        *,
        ttl: float,
        claim_seconds: float = CLAIM_SECONDS,
        clock: Callable[[], float],
    ) -> None:
        self.store = store
        self.ttl = ttl
        self.claim_seconds = claim_seconds
        self.clock = clock
        self.call_id = ""
        self.round = 0
        self.version = 0  # of the document this round holds; 0: none yet
        self.pending: list[Mapping[str, Any]] = []
        self.held: Mapping[str, Any] = {}  # the document as this round claimed it
        self.lost = False  # another retry took the round over
        self.claimed_until = 0.0  # when this round's claim runs out

    def open(
        self, state: Mapping[str, Any] | None
    ) -> Generator[Yielded, Any, tuple[Journal, Mapping[str, Any], dict[str, float]]]:
        """Claim the round ``state`` refers to and read the call's journal:
        the journal, what was asked and the branches' deadlines.

        Raises:
            RequestError: the state refers to no live call
                (:func:`invalid_state`), or was used (:func:`used_state`).
        """
        if state is None:
            journal = Journal()
            self.call_id = journal.call_id
            return journal, {}, {}
        call: Any = state.get("call")
        number: Any = state.get("round")
        if not isinstance(call, str) or not isinstance(number, int):
            raise invalid_state()  # sealed by a server without a store
        self.call_id, self.round = call, number
        value, records = yield Wait(self._claim)
        try:
            journal = journal_from_records(records, call)
        except ValueError:
            raise invalid_state() from None
        asked: Any = value.get("asked", {})
        deadlines: Any = value.get("deadlines", {})
        return journal, asked, dict(deadlines)

    async def _claim(self) -> tuple[Mapping[str, Any], list[Mapping[str, Any]]]:
        # One trip: the document, then the stream (whoever moved the document
        # to this round wrote its records in the same write, or before).
        doc, records = await self.store.get_and_read(CALLS, self.call_id)
        if doc is None:
            raise invalid_state()  # expired, or swept
        value = doc.value
        claim: Any = value.get("claim")
        found: Any = value.get("round")
        if not isinstance(found, int) or found < self.round:
            raise invalid_state()  # the store lost the round (restored, rolled back)
        if found > self.round or value.get("done"):
            raise used_state()
        if isinstance(claim, int | float) and claim > self.clock():
            raise used_state()  # another retry is running this round
        # Not claimed yet: the claim is written with the round's first write
        # (before a step or a notification, or the write that moves the call
        # on), a compare-and-swap against this version either way.
        self.version, self.held = doc.version, value
        return value, records

    def keep(self, record: Mapping[str, Any]) -> None:
        """Write ``record`` at the next :meth:`flush`."""
        self.pending.append(record)

    def flush(self) -> Generator[Yielded, Any, None]:
        """Append the records kept so far, before the round goes on where it
        shows (a step, a notification), renewing the round's claim. A first
        round keeps them for :meth:`park`: no client holds a state that could
        resume it.

        Raises:
            RequestError: :func:`used_state`, the claim ran out and another
                retry took the round over (this round stops here).
        """
        if self.version == 0 or not (self.pending or self.claimed_until == 0):
            return  # a first round, or nothing to write and the claim held
        records, self.pending = self.pending, []
        yield Wait(functools.partial(self._renew_and_append, records))

    async def _renew_and_append(self, records: list[Mapping[str, Any]]) -> None:
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
            await self.store.append(CALLS, self.call_id, records, expires_at=expires_at)

    def park(
        self, asked: Mapping[str, Any], deadlines: Mapping[str, float]
    ) -> Generator[Yielded, Any, dict[str, Any]]:
        """Write what is left and move the call to its next round: what the
        new state carries (the call's id and the new round).

        Raises:
            RequestError: :func:`used_state`, the claim ran out and another
                retry took the round over.
        """
        value = {
            "round": self.round + 1,
            "asked": dict(asked),
            "deadlines": dict(deadlines),
            "claim": None,
        }
        yield Wait(functools.partial(self._move, value, write=True))
        return {"call": self.call_id, "round": self.round + 1}

    def finish(self) -> Generator[Yielded, Any, None]:
        """The call ended (a result or an error): its state is used up, and
        nothing will replay its journal again."""
        if self.version == 0:
            return  # a first round: no state was ever given out
        value = {"round": self.round, "done": True}
        yield Wait(functools.partial(self._move, value, write=False))

    def release(self) -> Generator[Yielded, Any, None]:
        """Give the claim back: the request was refused for its own fault, and
        its corrected retry may use the same state (and reuse what this one
        recorded)."""
        if self.version == 0 or self.lost:
            return
        if self.claimed_until == 0 and not self.pending:
            return  # never claimed, nothing recorded: nothing to give back
        value = {**self.held, "claim": None}
        yield Wait(functools.partial(self._move, value, write=True))

    async def _move(self, value: Mapping[str, Any], *, write: bool) -> None:
        # One compare-and-swap against the version this round read or last
        # wrote: a round taken over writes nothing. The records go with the
        # document, atomically (a document naming a round whose records are
        # not stored would replay without them); an empty append still
        # refreshes the stream's expiry with the document's.
        now = self.clock()
        records, self.pending = self.pending, []
        await self._put(value, now, records=records if write else None)

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
        records: list[Mapping[str, Any]] | None = None,
    ) -> None:
        if self.lost:
            raise used_state()
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
            raise used_state() from None
        claim: Any = value.get("claim")
        self.claimed_until = claim if isinstance(claim, int | float) else 0.0

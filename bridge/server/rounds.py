"""Multi-round calls (2026-07-28, MRTR): ask by returning, resume by replay.

A round runs the tool from the start against the journal of answers so far
(sealed in ``requestState``), feeds it any ``inputResponses`` that answer the
questions it reaches, and stops when nothing more can move without the
client. If the tool finished, that is the result. Otherwise the round returns
``input_required`` with one ``inputRequests`` entry per waiting question (all
concurrent branch questions at once) and a new sealed state.

Rules:

* **Keys.** A question's ``inputRequests`` key is derived from the question, so
  every round names it the same: an elicitation's form key (``"user_name"``),
  or ``"sample"`` / ``"url"`` / ``"roots"``; inside a branch the effect key is
  appended (``"user_name@3.1/0"``), which keeps concurrent questions apart.
* **Pinning.** The state records, per key, the effect key and the digest of the
  question asked. A response is accepted only for the same question; a question
  that changed is asked again, never answered stale. The first round (no
  state) asked nothing, so it takes no response: whatever ``inputResponses``
  it carries answers questions never asked, and is ignored (the questions are
  asked; a URL-elicitation retry, which carries no state, runs afresh).
* **Binding.** A state opens only for the call it was sealed for
  (:func:`~bridge.server.state_token.binding`: the method, the tool, the
  digest of its arguments and, on a server that checks access tokens, the
  caller, :mod:`bridge.server.auth.binding`), and only within its TTL. Within
  the TTL it can be replayed: a stateless server cannot tell a replay from a
  retry (README, "What a stateless server cannot prevent"). With a store,
  the journal is kept there and the state is a one-time reference to it
  (:mod:`bridge.server.durable_rounds`).
* **Tolerance.** A missing response leaves its question in ``inputRequests``
  (a new ``input_required``, not an error); extra keys are ignored. A response
  that is not a valid answer (wrong shape, content outside the schema) is
  ``-32602``.
* **Re-validation.** Recorded answers are decoded and validated again on every
  replay (elicitation content against its model, structured output against
  its schema).
* **Notices** are sent once: the journal remembers which were sent.
  :func:`run_round` is sans-IO: it yields the notifications to send (method,
  params), in order, and returns the outcome; its caller sends them, at once
  or waiting, as its transport allows.
* **Branch time limits** hold across rounds: a branch's deadline is recorded
  when it first starts and checked on every replay.
* **Steps** run in the round that first reaches them: the round yields
  :class:`RunSteps` (every step the tool waits on at once, so a branch's
  steps run concurrently) and its caller, which can wait, sends back their
  replies (:func:`run_steps`). Their results are journaled, so a later round
  replays them and runs nothing again.
* **Versions.** The state carries the tool's code version
  (``@tool(version=...)``, by default a hash of its source); a state sealed
  under another version is refused (-32602), since its journal may not fit
  the code any more.
* **Size.** The journal travels in every round (or is read from the store),
  so it is capped
  (``ServerLimits.max_journal_bytes``): a warning is logged at 80%, and past
  the cap the call fails with :class:`~runtime.errors.JournalTooLarge`.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from typing import Any, cast, final

import attrs

from bridge.jsonrpc.messages import INVALID_PARAMS
from bridge.stores import AsyncStore
from runtime import Tool
from runtime.errors import (
    CapabilityError,
    JournalTooLarge,
    RemoteProtocolError,
    RequestError,
)
from runtime.lowlevel import (
    Ask,
    Event,
    Finished,
    LocalQuestion,
    PeerQuestion,
    Raised,
    Returned,
    StartTimer,
    Step,
    Stepper,
    StopTimer,
    Tell,
    Withdraw,
    step_key,
)

from .auth.binding import principal_binding
from .call_records import answer_record, notice_record
from .durable_rounds import CLAIM_SECONDS, DurableCall
from .questions import (
    CallScope,
    check_capabilities,
    decode_answer,
    notice_notification,
    question_request,
)
from .round_state import (
    Carried,
    arguments_digest,
    check_version,
    open_state,
    parse_responses,
    wire_key,
)
from .round_steps import Notification as Notification
from .round_steps import RunSteps as RunSteps
from .round_steps import Wait as Wait
from .round_steps import Yielded as Yielded
from .round_steps import capped_journal
from .round_steps import run_steps as run_steps
from .round_steps import wait_on as wait_on
from .state_token import Sealer, binding

__all__ = ["Complete", "InputRequired", "RunSteps", "Wait", "run_round", "run_steps"]


@final
@attrs.frozen
class Complete:
    value: Any


@final
@attrs.frozen
class InputRequired:
    input_requests: dict[str, dict[str, Any]]
    request_state: str


@final
class _Round:
    def __init__(
        self,
        program: Tool[Any, Any],
        arguments: Any,
        scope: CallScope,
        responses: Mapping[str, Any],
        carried: Carried,
        clock: Callable[[], float],
        rng: random.Random | None,
        durable: DurableCall | None,
    ) -> None:
        self.scope = scope
        self.responses = responses
        self.stateful = carried.stateful
        self.asked = carried.asked
        self.deadlines = carried.deadlines
        self.journal = carried.journal
        self.durable = durable
        self.stepper = Stepper(
            program.program(arguments),
            program.context(scope.principal),
            journal=self.journal,
        )
        self.pending: dict[str, tuple[str, PeerQuestion[Any]]] = {}
        self.due: list[tuple[str, Step]] = []  # steps to run before going on
        self.clock = clock
        # Without an rng, the random module's shared generator: seeding one
        # per call would cost more than a round.
        self.bits: Callable[[int], int] = (
            random.getrandbits if rng is None else rng.getrandbits
        )

    def run(self) -> Generator[Yielded, Sequence[Any] | None, None]:
        """Run until nothing moves without the client; yield each notification
        to send, in order, and the steps to run (see :class:`RunSteps`)."""
        stepper = self.stepper
        stepper.start()
        events = stepper.events()
        while True:
            yield from self._carry_out(events)
            if not self.due:
                return
            due, self.due = self.due, []
            call = stepper.call_id
            batch = tuple(
                (k, s, step_key(call, s, k), self._seconds_left(k)) for k, s in due
            )
            if self.durable is not None:
                yield from self.durable.flush()  # recorded before a step runs
            replies = yield RunSteps(batch)
            assert replies is not None
            for (key, _step), reply in zip(due, replies, strict=True):
                if reply is None or not stepper.is_pending(key):
                    continue  # out of time, or withdrawn by an earlier reply
                if isinstance(reply, Exception):
                    stepper.fail(key, reply)
                else:
                    self._answer(key, reply)
            now = self.clock()
            for branch, deadline in list(self.deadlines.items()):
                if now >= deadline:
                    stepper.expire(branch)  # withdraws its steps out of time
            events = stepper.events()

    def _seconds_left(self, key: str) -> float | None:
        """The time left to the step at ``key`` by its branches' limits."""
        left = [
            deadline - self.clock()
            for branch, deadline in self.deadlines.items()
            if key.startswith(f"{branch}.")
        ]
        return min(left) if left else None

    def _answer(self, key: str, reply: Any) -> None:
        """Answer the question at ``key``, keeping the new entry for the store."""
        self.stepper.answer(key, reply)
        if self.durable is not None:
            entry = self.journal.entry(key)
            if entry is not None:
                self.durable.keep(answer_record(key, *entry))

    def _carry_out(self, events: list[Event]) -> Generator[Yielded, Any, None]:
        stepper = self.stepper
        while events:
            for event in events:
                match event:
                    case Ask(key, question):
                        self._ask(key, question)
                    case Tell(key, notice):
                        notification = notice_notification(notice, self.scope, key)
                        if self.durable is not None:
                            self.durable.keep(notice_record(key))
                            if notification is not None:
                                yield from self.durable.flush()
                        if notification is not None:
                            yield notification
                    case StartTimer(key, seconds):
                        deadline = self.deadlines.setdefault(
                            key, self.clock() + seconds
                        )
                        if self.clock() >= deadline:
                            stepper.expire(key)
                    case StopTimer(key):
                        self.deadlines.pop(key, None)
                    case Withdraw(key):
                        self.pending = {
                            w: p for w, p in self.pending.items() if p[0] != key
                        }
                    case Finished():
                        pass
            events = stepper.events()

    def _ask(self, key: str, question: Any) -> None:
        stepper = self.stepper
        if not stepper.is_pending(key):
            # Withdrawn in the same batch of events (its branch timed out or
            # failed first): nothing to ask, and its answer must not be used.
            return
        if type(question) is Step:
            self.due.append((key, question))
            return
        if isinstance(question, LocalQuestion):
            local = cast("LocalQuestion[Any]", question)
            try:
                reply = local.compute(self.clock, self.bits)
            except Exception as exc:
                stepper.fail(key, exc)
            else:
                self._answer(key, reply)
            return
        peer = cast("PeerQuestion[Any]", question)
        try:
            check_capabilities(peer, self.scope)
        except CapabilityError as exc:
            stepper.fail(key, exc)
            return
        wire = wire_key(key, peer)
        if wire in self.responses and self._accepts(wire, key):
            self._answer(key, self._decode(wire, peer))
        else:
            self.pending[wire] = (key, peer)

    def _accepts(self, wire: str, key: str) -> bool:
        # Only answers to what the sealed state says was asked, as asked.
        return self.stateful and self.asked.get(wire) == [key, self.stepper.digest(key)]

    def _decode(self, wire: str, question: PeerQuestion[Any]) -> Any:
        try:
            return decode_answer(question, self.responses[wire])
        except RemoteProtocolError as exc:
            raise RequestError(
                INVALID_PARAMS, f"inputResponses[{wire!r}] is not a valid answer: {exc}"
            ) from None

    def input_requests(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for wire, (key, question) in self.pending.items():
            method, params = question_request(question, self.scope, key)
            entry: dict[str, Any] = {"method": method}
            if params is not None:
                entry["params"] = params
            out[wire] = entry
        return out

    def now_asked(self) -> dict[str, Any]:
        """What this round asks, pinned: the next round accepts answers to it."""
        return {
            wire: [key, self.stepper.digest(key)]
            for wire, (key, _question) in self.pending.items()
        }

    def state(self, max_journal: int) -> dict[str, Any]:
        """What a stateless round's ``requestState`` carries besides the binding."""
        return {
            "journal": capped_journal(self.journal.to_json(), max_journal),
            "asked": self.now_asked(),
            "deadlines": self.deadlines,
        }


def run_round(
    program: Tool[Any, Any],
    arguments: Any,
    params: Mapping[str, Any],
    *,
    purpose: str,
    scope: CallScope,
    sealer: Sealer,
    clock: Callable[[], float] = time.time,
    rng: random.Random | None = None,
    max_journal_bytes: int = 1024 * 1024,
    store: AsyncStore | None = None,
    claim_seconds: float = CLAIM_SECONDS,
) -> Generator[Yielded, Any, Complete | InputRequired]:
    """One round of a multi-round call of ``program`` (see the module doc):
    yields the notifications to send, in order, the steps to run and, with a
    ``store``, its reads and writes; returns the outcome.

    Raises:
        RequestError: a bad or tampered ``requestState`` (one uniform error),
            one sealed under another version of the tool, one already used
            (with a store), or malformed ``inputResponses`` (-32602).
        JournalTooLarge: the journal grew past ``max_journal_bytes``.
        StoreError: the store failed.
        Exception: whatever the tool raises.
    """
    bound = binding(
        purpose,
        program.name,
        arguments_digest(arguments),
        principal_binding(scope.principal),
    )
    state = open_state(params, sealer, purpose, bound)
    check_version(program, state)
    responses = parse_responses(params)
    if store is None:
        durable, carried = None, Carried.from_state(state)
    else:
        durable = DurableCall(
            store, ttl=sealer.ttl, claim_seconds=claim_seconds, clock=clock
        )
        journal, asked, deadlines = yield from durable.open(state)
        carried = Carried(journal, asked, deadlines, stateful=state is not None)
    round_ = _Round(program, arguments, scope, responses, carried, clock, rng, durable)
    try:
        yield from round_.run()
    except RequestError:
        if durable is not None:
            yield from durable.release()  # the corrected retry may use the state
        raise
    outcome = round_.stepper.outcome
    if durable is not None and isinstance(outcome, Returned | Raised):
        yield from durable.finish()  # the call ended: its state is used up
    if isinstance(outcome, Returned):
        return Complete(outcome.value)
    if isinstance(outcome, Raised):
        raise outcome.error
    sealed: dict[str, Any] = {k: v for k, v in bound.items() if v is not None}
    if program.version is not None:
        sealed["version"] = program.version
    if durable is None:
        sealed.update(round_.state(max_journal_bytes))
    else:
        try:  # the journal stays bounded in a store too: each round reads it
            capped_journal(round_.journal.to_json(), max_journal_bytes)
        except JournalTooLarge:
            yield from durable.finish()
            raise
        sealed.update((yield from durable.park(round_.now_asked(), round_.deadlines)))
    return InputRequired(round_.input_requests(), sealer.seal(sealed, purpose=purpose))

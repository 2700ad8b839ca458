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
  retry (README, "What a stateless server cannot prevent").
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
* **Size.** The journal travels in every round, so it is capped
  (``ServerLimits.max_journal_bytes``): a warning is logged at 80%, and past
  the cap the call fails with :class:`~runtime.errors.JournalTooLarge`.
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from typing import Any, cast, final

import attrs
from pydantic import BaseModel

from bridge.jsonrpc.messages import INVALID_PARAMS
from runtime import (
    Elicit,
    ElicitUrl,
    Journal,
    LocalQuestion,
    PeerQuestion,
    Sample,
    Step,
    Stepper,
    Tool,
)
from runtime._step_runner import step_key
from runtime._stepper import (
    Ask,
    Event,
    Finished,
    Raised,
    Returned,
    StartTimer,
    StopTimer,
    Tell,
    Withdraw,
)
from runtime.errors import CapabilityError, RemoteProtocolError, RequestError

from .auth.binding import principal_binding
from .questions import (
    CallScope,
    check_capabilities,
    decode_answer,
    notice_notification,
    question_request,
)
from .round_steps import Notification as Notification
from .round_steps import RunSteps as RunSteps
from .round_steps import Yielded as Yielded
from .round_steps import capped_journal
from .round_steps import run_steps as run_steps
from .state_token import Sealer, binding, invalid_state

__all__ = ["Complete", "InputRequired", "RunSteps", "run_round", "run_steps"]


@final
@attrs.frozen
class Complete:
    value: Any


@final
@attrs.frozen
class InputRequired:
    input_requests: dict[str, dict[str, Any]]
    request_state: str


def wire_key(effect_key: str, question: PeerQuestion[Any]) -> str:
    """The ``inputRequests`` key for the question at ``effect_key``."""
    if isinstance(question, Elicit):
        base = cast("Elicit[Any]", question).key
    elif isinstance(question, Sample):
        base = "sample"
    elif isinstance(question, ElicitUrl):
        base = "url"
    else:
        base = "roots"
    return base if "/" not in effect_key else f"{base}@{effect_key}"


def arguments_digest(arguments: BaseModel) -> str:
    """What pins a state to the call's arguments: the sha256 of their JSON
    (``model_dump_json``, the bytes of ``to_json(model_dump(mode="json"))``)."""
    data = type(arguments).__pydantic_serializer__.to_json(arguments)
    return hashlib.sha256(data).hexdigest()[:32]


@final
class _Round:
    def __init__(
        self,
        program: Tool[Any, Any],
        arguments: Any,
        scope: CallScope,
        responses: Mapping[str, Any],
        state: Mapping[str, Any] | None,
        clock: Callable[[], float],
        rng: random.Random | None,
    ) -> None:
        self.scope = scope
        self.responses = responses
        self.stateful = state is not None
        self.asked: Mapping[str, Any] = (state or {}).get("asked", {})
        self.deadlines: dict[str, float] = dict((state or {}).get("deadlines", {}))
        journal_json = (state or {}).get("journal")
        self.journal = Journal.from_json(journal_json) if journal_json else Journal()
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
            replies = yield RunSteps(batch)
            assert replies is not None
            for (key, _step), reply in zip(due, replies, strict=True):
                if reply is None or not stepper.is_pending(key):
                    continue  # out of time, or withdrawn by an earlier reply
                if isinstance(reply, Exception):
                    stepper.fail(key, reply)
                else:
                    stepper.answer(key, reply)
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

    def _carry_out(self, events: list[Event]) -> Generator[Notification, Any, None]:
        stepper = self.stepper
        while events:
            for event in events:
                match event:
                    case Ask(key, question):
                        self._ask(key, question)
                    case Tell(key, notice):
                        notification = notice_notification(notice, self.scope, key)
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
                stepper.answer(key, reply)
            return
        peer = cast("PeerQuestion[Any]", question)
        try:
            check_capabilities(peer, self.scope)
        except CapabilityError as exc:
            stepper.fail(key, exc)
            return
        wire = wire_key(key, peer)
        if wire in self.responses and self._accepts(wire, key):
            stepper.answer(key, self._decode(wire, peer))
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

    def state(
        self, bound: Mapping[str, str | None], max_journal: int
    ) -> dict[str, Any]:
        state: dict[str, Any] = {k: v for k, v in bound.items() if v is not None}
        state["journal"] = capped_journal(self.journal.to_json(), max_journal)
        state["asked"] = {
            wire: [key, self.stepper.digest(key)]
            for wire, (key, _question) in self.pending.items()
        }
        state["deadlines"] = self.deadlines
        return state


def parse_responses(params: Mapping[str, Any]) -> dict[str, Any]:
    """``inputResponses`` as a dict; ``null``/absent is empty; bad shapes -32602."""
    raw: Any = params.get("inputResponses")
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise RequestError(INVALID_PARAMS, "inputResponses must be an object")
    responses = cast("dict[str, Any]", raw)
    for key, value in responses.items():
        if not isinstance(value, dict):
            raise RequestError(
                INVALID_PARAMS, f"inputResponses[{key!r}] must be an object"
            )
    return responses


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
) -> Generator[Yielded, Any, Complete | InputRequired]:
    """One round of a multi-round call of ``program`` (see the module doc):
    yields the notifications to send, in order, and the steps to run; returns
    the outcome.

    Raises:
        RequestError: a bad or tampered ``requestState`` (one uniform error),
            one sealed under another version of the tool, or malformed
            ``inputResponses`` (-32602).
        JournalTooLarge: the journal grew past ``max_journal_bytes``.
        Exception: whatever the tool raises.
    """
    bound = binding(
        purpose,
        program.name,
        arguments_digest(arguments),
        principal_binding(scope.principal),
    )
    state = _open_state(params, sealer, purpose, bound)
    _check_version(program, state)
    round_ = _Round(
        program, arguments, scope, parse_responses(params), state, clock, rng
    )
    yield from round_.run()
    outcome = round_.stepper.outcome
    if isinstance(outcome, Returned):
        return Complete(outcome.value)
    if isinstance(outcome, Raised):
        raise outcome.error
    requests = round_.input_requests()
    sealed_state = round_.state(bound, max_journal_bytes)
    if program.version is not None:
        sealed_state["version"] = program.version
    sealed = sealer.seal(sealed_state, purpose=purpose)
    return InputRequired(requests, sealed)


def _check_version(program: Tool[Any, Any], state: Mapping[str, Any] | None) -> None:
    if state is None or state.get("version") == program.version:
        return
    raise RequestError(
        INVALID_PARAMS,
        f"requestState was made by another version of {program.name!r} "
        f"(the server's code changed during the call); call it again without "
        f"requestState",
    )


def _open_state(
    params: Mapping[str, Any],
    sealer: Sealer,
    purpose: str,
    bound: Mapping[str, str | None],
) -> dict[str, Any] | None:
    token: Any = params.get("requestState")
    if token is None:
        return None
    state = sealer.open(token, purpose=purpose)
    # An absent field reads as None: a state made for no principal opens only
    # for none, and one made for a principal only for that principal.
    if any(state.get(field) != value for field, value in bound.items()):
        raise invalid_state()  # a state from another call, or another caller
    return state

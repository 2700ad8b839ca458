"""Multi-round calls (2026-07-28, MRTR): ask by returning, resume by replay.

A round restores the call's machine from the journal of answers so far
(sealed in ``requestState``, or read from the store), feeds it the
``inputResponses`` that answer the questions it reaches, runs the steps it
reaches, and stops when nothing more can move without the client. If the call
finished, that is the result. Otherwise the round returns ``input_required``
with one ``inputRequests`` entry per waiting question (all concurrent branch
questions at once, up to a bound: rule "Questions per round") and a new sealed
state.

The same driver runs a task (:mod:`bridge.server.tasks`): the task's runner
sits in the client's seat, its answers come from ``tasks/update`` instead of
``inputResponses``, and what a round would return is written to the task.

Rules:

* **Keys.** A question's ``inputRequests`` key is derived from the question, so
  every round names it the same: an elicitation's form key (``"user_name"``),
  or ``"sample"`` / ``"url"`` / ``"roots"``; inside a branch the effect key is
  appended (``"user_name@3.1/0"``), which keeps concurrent questions apart. A
  task's keys carry the effect key at the root too (``"user_name@2"``): its
  ``tasks/update`` has no state pinning what was asked, so a key must name one
  question only, or an update sent twice would answer the next question.
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
  (:mod:`bridge.durable.rounds`).
* **Questions per round.** A round asks at most
  ``ServerLimits.max_questions_per_round`` questions (64, what our client
  answers in one round), the first the call reached; the others wait, unasked
  and unpinned, and the next rounds ask them (they are reached again by the
  replay) once the first are answered. Tool code is the same in both eras: a
  branch of 65 samples, asked live in 2025-11-25, takes two rounds here.
* **Tolerance.** A missing response leaves its question in ``inputRequests``
  (a new ``input_required``, not an error); extra keys are ignored. A response
  that is not a valid answer (wrong shape, content outside the schema) is
  ``-32602``.
* **Re-validation.** Recorded answers are decoded and validated again on every
  replay (elicitation content against its model, structured output against
  its schema).
* **Notices** are sent once: the journal remembers which were sent.
* **Branch time limits** hold across rounds: a branch's deadline is recorded
  when it first starts and checked on every replay.
* **Sleeps** (``ctx.sleep``) are recorded as deadlines too, so every round
  waits only for what is left. A request's round waits in the request for a
  sleep when nothing else is asked, up to ``ServerLimits.max_request_sleep``
  (30 s); a longer one is refused at its yield with a one-line error saying
  to run the tool as a task (:class:`~runtime.errors.CapabilityError`
  naming the tasks extension, -32021; :class:`~runtime.errors.SleepTooLong`,
  a tool error, for a tool that cannot be one). A task's round waits for
  nothing: it ends :class:`Parked` with the deadline it must be woken at.
* **Steps** run in the round that first reaches them, concurrently with each
  other (a branch's steps), under their branches' deadlines. Their results
  are journaled, so a later round replays them and runs nothing again.
* **Write-ahead.** With a store, what the machine records is written before
  the round shows anything that follows it: before it runs a step, sends a
  notification or replies (the records ride along with the claim or the
  write that moves the call on).
* **Versions.** The state carries the tool's code version
  (``@tool(version=...)``, by default a hash of its source); a state sealed
  under another version is refused (-32602), since its journal may not fit
  the code any more, unless the tool continues that version
  (``continues=``: :func:`~bridge.server.versions.check_version`). A state
  sealed after such a round carries the version that ran it.
* **Size.** The journal travels in every round (or is read from the store),
  so it is capped (``ServerLimits.max_journal_bytes``): a warning is logged at
  80%, and past the cap the call fails with
  :class:`~runtime.errors.JournalTooLarge`.

A round never waits on the client, so one that needs no I/O (no step, no
store write, notifications that can be sent at once) is answered where it
arrived, with no task: :meth:`Round.now`. The rest is :meth:`Round.rest`'s.
"""

from __future__ import annotations

import itertools
import logging
import math
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeAlias, final

import attrs
import pydantic_core
import trio

from bridge.durable import AsyncStore
from bridge.durable.rounds import (
    RoundBecameTask,
    RoundFinished,
    RoundGone,
    RoundHold,
    RoundUsed,
)
from bridge.jsonrpc.messages import INVALID_PARAMS
from runtime import Tool
from runtime.errors import (
    CapabilityError,
    JournalTooLarge,
    RemoteProtocolError,
    RequestError,
    SleepTooLong,
)
from runtime.lowlevel import (
    AskPeer,
    CallMachine,
    CancelTimer,
    Finish,
    Journal,
    Notify,
    PeerQuestion,
    Persist,
    Raised,
    Returned,
    RunStep,
    SetTimer,
    WithdrawQuestion,
    carry_out,
    open_call,
)

from ..auth.binding import principal_binding
from ..questions import (
    CallScope,
    check_capabilities,
    decode_answer,
    notice_notification,
    question_request,
)
from ..round_state import (
    arguments_digest,
    open_state,
    parse_responses,
    responses_digest,
    wire_key,
)
from ..state_token import binding, invalid_state, used_state
from ..versions import check_version
from .work import perform

if TYPE_CHECKING:
    from ..offer import Offer

__all__ = [
    "Complete",
    "Hold",
    "InputRequired",
    "Parked",
    "ReachedStep",
    "Round",
    "begin",
    "capped_journal",
]

log = logging.getLogger("yieldmcp")

_TASKS: Final = "io.modelcontextprotocol/tasks"  # the extension's name

NotifyNow: TypeAlias = Callable[[str, dict[str, Any]], None]
NotifyLater: TypeAlias = Callable[[str, dict[str, Any]], Awaitable[None]]


@final
@attrs.frozen
class Complete:
    """The call returned ``value``. ``wire``: its result as already made
    (by the round's ``encode``), to send as is: the one kept in the store for
    a retry whose reply was lost, or made to be kept."""

    value: Any
    wire: Mapping[str, Any] | None = None


Encode: TypeAlias = "Callable[[Complete | BaseException], dict[str, Any]]"


@final
@attrs.frozen
class InputRequired:
    input_requests: dict[str, dict[str, Any]]
    request_state: str


@final
@attrs.frozen
class Parked:
    """A round of a task that waits on its client, or on the clock: what it
    asks, what pins the answers to it (a task keeps no ``requestState``),
    and when it must be woken even with no answer (the earliest deadline of
    its sleeps and branches, seconds since the epoch; None: none)."""

    input_requests: dict[str, dict[str, Any]]
    asked: dict[str, Any]
    wake_at: float | None = None


@final
@attrs.frozen
class ReachedStep:
    """A round run until its first step (``task_from="step"``) reached it."""


class Hold(Protocol):
    """Where a round's records go, and what its end writes (a store's
    :class:`~bridge.durable.rounds.RoundHold`, a task's hold)."""

    @property
    def first(self) -> bool:
        """Whether no client holds a state that could resume the call yet
        (its records wait for :meth:`park`)."""
        ...

    @property
    def due(self) -> bool:
        """Whether :meth:`flush` must write before the round shows anything."""
        ...

    def keep(self, records: Sequence[Mapping[str, Any]]) -> None: ...
    async def flush(self) -> None: ...
    async def park(self, asked: Mapping[str, Any]) -> Mapping[str, Any]: ...
    async def finish(self) -> None: ...
    async def release(self) -> None: ...


@attrs.frozen
class _Done:
    key: str
    reply: Any = None
    error: BaseException | None = None


def _too_long(program: Tool[Any, Any], seconds: float, bound: float) -> Exception:
    """The error of a sleep of ``seconds`` in a request that may hold one of
    ``bound`` at most: how to run it instead."""
    said = (
        f"ctx.sleep would hold this request for {seconds:.3g} s, over this server's "
        f"bound of {bound:g} s for a call that is not a task (--max-request-sleep)"
    )
    if program.task == "forbidden":
        return SleepTooLong(
            f'{said}: make the tool a task (@tool(task="optional")) and call it as one'
        )
    return CapabilityError(
        f"{said}: call the tool as a task", required={"extensions": {_TASKS: {}}}
    )


def capped_journal(journal: dict[str, Any], cap: int) -> dict[str, Any]:
    """``journal``, if its JSON is within ``cap`` bytes (a warning from 80%).

    Raises:
        JournalTooLarge: it is larger.
    """
    size = len(pydantic_core.to_json(journal))
    if size > cap:
        raise JournalTooLarge(
            f"the call's journal is {size} bytes, over the server's limit of "
            f"{cap} (ServerLimits.max_journal_bytes); record less in steps, or "
            f"raise the limit"
        )
    if size * 5 >= cap * 4:
        percent = size * 100 // cap
        log.warning("a call's journal is %d bytes, %d%% of its limit", size, percent)
    return journal


def begin(
    server: Offer,
    program: Tool[Any, Any],
    arguments: Any,
    params: Mapping[str, Any],
    *,
    purpose: str,
    scope: CallScope,
    store: AsyncStore | None,
    notify_now: NotifyNow | None = None,
    notify: NotifyLater | None = None,
    clock: Callable[[], float] = time.time,
    bits: Callable[[int], int] | None = None,
    until_step: bool = False,
    encode: Encode | None = None,
) -> Round:
    """The round of ``program`` that ``params`` (a ``tools/call`` or
    ``prompts/get``, with its ``requestState`` and ``inputResponses``) asks
    for; go on with :meth:`Round.now` or :meth:`Round.rest`.

    Raises:
        RequestError: a bad or tampered ``requestState`` (one uniform error),
            one sealed under a version of the tool it does not continue, or
            malformed
            ``inputResponses`` (-32602).
    """
    sealer = server.sealer
    bound = binding(
        purpose,
        program.name,
        arguments_digest(arguments),
        principal_binding(scope.principal),
    )
    state = open_state(params, sealer, purpose, bound)
    if state is not None:
        check_version(
            program,
            state.get("version"),
            made="requestState",
            again="call it again without requestState",
        )
    responses = parse_responses(params)
    hold: RoundHold | None = None
    if store is not None:
        hold = RoundHold(
            store,
            ttl=sealer.ttl,
            max_bytes=server.limits.max_journal_bytes,
            claim_seconds=server.limits.round_claim_seconds,
            clock=clock,
            answers=responses_digest(responses),
        )
    round_ = Round(
        server,
        program,
        arguments,
        scope,
        responses=responses,
        hold=hold,
        bound=bound,
        purpose=purpose,
        notify_now=notify_now,
        notify=notify,
        clock=clock,
        bits=bits,
        until_step=until_step,
        encode=encode,
    )
    round_.open(state)
    return round_


@final
class Round:
    """One round of a multi-round call (see the module doc): it carries its
    machine's commands out (a :class:`~runtime.call.commands.Carrier`)."""

    def __init__(
        self,
        server: Offer,
        program: Tool[Any, Any],
        arguments: Any,
        scope: CallScope,
        *,
        responses: Mapping[str, Any],
        hold: Hold | None,
        bound: Mapping[str, str | None],
        purpose: str,
        notify_now: NotifyNow | None,
        notify: NotifyLater | None,
        clock: Callable[[], float] = time.time,
        bits: Callable[[int], int] | None = None,
        stateful: bool = False,
        asked: Mapping[str, Any] | None = None,
        sealed: bool = True,
        until_step: bool = False,
        encode: Encode | None = None,
    ) -> None:
        self.server = server
        self.program = program
        self.arguments = arguments
        self.scope = scope
        self.responses = responses
        self.hold = hold
        self.bound = bound
        self.purpose = purpose
        self.notify_now = notify_now
        self.notify_later = notify
        self.clock = clock
        self.bits = bits
        self.stateful = stateful
        self.asked: Mapping[str, Any] = asked or {}
        self.machine: CallMachine | None = None
        self.finished: Returned | Raised | None = None  # a call that ended at once
        self.journal: Journal | None = None
        self.pending: dict[str, tuple[str, PeerQuestion[Any]]] = {}
        self.due: list[RunStep] = []  # steps to start
        self.notices: list[tuple[str, dict[str, Any]]] = []  # to send, waiting
        self.deadlines: dict[str, float] = {}  # running branch timers
        self.claiming = False  # the state's round must be read from the store
        self.sealed = sealed  # a request's round (else a task's: Parked)
        self.until_step = until_step  # stop at the first step (ReachedStep)
        self.encode = encode  # the request's result of an outcome, to keep
        self.reached = False
        self.slept = False  # reached a sleep: the task begins after this batch
        # While steps run (in rest()):
        self.nursery: trio.Nursery | None = None
        self.keeping = False  # the claim's keeper runs (see _wait)
        self.running: dict[str, trio.CancelScope] = {}
        self.send: trio.MemorySendChannel[_Done] | None = None

    # --- opening ---------------------------------------------------------------------

    def open(self, state: Mapping[str, Any] | None) -> None:
        """Restore the call from ``state`` (None: the first round). With a
        store and a state, the journal is read in :meth:`rest`."""
        hold = self.hold
        if state is None:
            self.restore(Journal(), {}, stateful=False)
            if isinstance(hold, RoundHold):
                assert self.journal is not None
                hold.call_id = self.journal.call_id
            return
        if not isinstance(hold, RoundHold):
            if "call" in state:
                raise invalid_state()  # sealed by a server with a store
            raw: Any = state.get("journal")
            journal = Journal.from_json(raw) if raw else Journal()
            self.restore(journal, state.get("asked", {}))
            return
        try:
            hold.refers(state)
        except RoundGone:
            raise invalid_state() from None
        self.claiming = True

    def restore(
        self, journal: Journal, asked: Mapping[str, Any], *, stateful: bool = True
    ) -> None:
        """Start the call's machine from ``journal``; ``asked`` pins the
        answers this round accepts (what the last round asked)."""
        self.journal = journal
        self.asked = asked
        self.stateful = stateful
        # What the last round asked, the call reached: a patch point before
        # it was passed under the code that asked (ctx.patched).
        if asked:
            journal.reach(str(pin[0]) for pin in asked.values() if pin)
        program = self.program
        opened = open_call(
            program.program(self.arguments),
            program.context(self.scope.principal),
            journal=journal,
            durable=self.hold is not None,
            clock=self.clock,
            bits=self.bits,
        )
        if isinstance(opened, CallMachine):
            self.machine = opened
        else:
            self.finished = opened

    # --- going on --------------------------------------------------------------------

    def now(self) -> Complete | InputRequired | ReachedStep | None:
        """Go as far as the round can without waiting: its outcome, or None
        when it must wait (a step, the store, a notification that waits):
        then go on with :meth:`rest`, in a task."""
        if self.claiming or not self._advance(can_wait=False) or self.running:
            return None
        if self._sleeps_here():
            return None  # it waits for a sleep (rest)
        hold = self.hold
        if self.reached or not self.sealed:
            return None
        if hold is not None and (not hold.first or self._outcome() is None):
            return None  # the round's last write waits on the store
        return self._conclude_now()

    async def rest(self) -> Complete | InputRequired | Parked | ReachedStep:
        """Go on to the round's outcome, waiting as needed.

        Raises:
            RequestError: the request's fault (-32602), or a used state.
            RoundBecameTask: a round that stops at its first step
                (``until_step``) is the one that made the call a task, again.
            StoreError: the store failed.
            Exception: whatever the call raised (a tool's error).
        """
        try:
            return await self._rest()
        except RoundGone:
            raise invalid_state() from None  # the one error of a bad state
        except RoundBecameTask:
            if self.until_step:
                raise  # the tasks extension's: it answers with the task
            raise used_state() from None
        except RoundUsed:
            raise used_state() from None

    async def _rest(self) -> Complete | InputRequired | Parked | ReachedStep:
        hold = self.hold
        if self.claiming:
            self.claiming = False
            assert isinstance(hold, RoundHold)
            try:
                journal, asked = await hold.claim()
            except RoundFinished as finished:  # its reply was lost: again
                return Complete(None, wire=finished.value)
            self.restore(journal, asked)
        try:
            await self._run()
        except RequestError:
            if hold is not None:
                await hold.release()  # the corrected retry may use the state
            raise
        except JournalTooLarge:
            if hold is not None:
                await hold.finish()  # the call fails: nothing resumes it
            raise
        finally:
            self.nursery = None
        return await self._conclude()

    async def _run(self) -> None:
        """Carry out and wait until only the round's end is left."""
        failed: Exception | None = None
        async with trio.open_nursery() as nursery:
            self.nursery = nursery
            self.send, receive = trio.open_memory_channel[_Done](math.inf)
            try:
                while (
                    not self._advance(can_wait=True)
                    or self.running
                    or self._sleeps_here()
                ):
                    await self._wait(receive)
            except Exception as exc:  # raised bare, not in the nursery's group
                failed = exc
            nursery.cancel_scope.cancel()
        if failed is not None:
            raise failed

    def _advance(self, *, can_wait: bool) -> bool:
        """Carry out commands; True once there is nothing left to carry out or
        send (steps may still run), False when the round must wait first."""
        machine = self.machine
        if machine is None:
            return True
        hold = self.hold
        while True:
            showing = bool(self.notices or self.due)
            if showing and hold is not None and hold.due:
                return False  # written first (rest)
            if self.notices:
                if self.notify_now is None:
                    return False  # sent by rest
                notices, self.notices = self.notices, []
                for notification in notices:
                    self.notify_now(*notification)
            if self.due:
                if not can_wait:
                    return False
                due, self.due = self.due, []
                for command in due:
                    self._start_step(command)
            if self.reached:
                return True
            commands = machine.commands()
            if not commands:
                return True
            for command in commands:
                carry_out(command, self)
                if self.reached:
                    return True
            if self.slept:  # once the batch's records (its Persist) are kept
                self.reached = True
                return True

    @staticmethod
    async def _keep_claim(hold: RoundHold, round_scope: trio.CancelScope) -> None:
        """Hold the round's claim while it runs; once another retry has
        taken the round over, stop it (its next write would be refused)."""
        await hold.keep_claim()
        round_scope.cancel()

    async def _wait(self, receive: trio.MemoryReceiveChannel[_Done]) -> None:
        """Do one thing the round waits on: write, send, or a step's reply."""
        hold = self.hold
        if hold is not None and hold.due and (self.notices or self.due):
            await hold.flush()
            return
        if self.notices:
            notices, self.notices = self.notices, []
            for method, params in notices:
                await self._send(method, params)
            return
        machine = self.machine
        assert machine is not None
        if not self.keeping and isinstance(hold, RoundHold) and not hold.first:
            # The round waits on a step or a sleep, which may outlast its
            # claim: keep it (a task's hold has its lease instead). Started
            # only here, so a round that only answers pays nothing for it.
            self.keeping = True
            nursery = self.nursery
            assert nursery is not None
            nursery.start_soon(self._keep_claim, hold, nursery.cancel_scope)
        deadline = min(self.deadlines.values(), default=math.inf)
        at = trio.current_time() + max(0.0, deadline - self.clock())
        with trio.move_on_at(at):
            done = await receive.receive()
            self.running.pop(done.key, None)
            if done.error is not None:
                machine.fail(done.key, done.error)
            else:
                machine.answer(done.key, done.reply)
            return
        now = self.clock()
        for key, when in list(self.deadlines.items()):
            if when <= now:
                self.deadlines.pop(key, None)
                machine.timer_fired(key)

    async def _send(self, method: str, params: dict[str, Any]) -> None:
        if self.notify_now is not None:
            self.notify_now(method, params)
        elif self.notify_later is not None:
            await self.notify_later(method, params)

    # --- the Carrier -----------------------------------------------------------------

    def ask(self, command: AskPeer) -> None:
        machine = self.machine
        assert machine is not None
        key, question = command.key, command.question
        try:
            check_capabilities(question, self.scope)
        except CapabilityError as exc:
            machine.fail(key, exc)
            return
        wire = wire_key(key, question, placed=not self.sealed)
        if wire in self.responses and self._accepts(wire, key):
            machine.answer(key, self._decode(wire, question))
            return
        unplaced = wire_key(key, question)
        if unplaced in self.responses and self._accepts(unplaced, key):
            # A task parked by a version before placed keys: its pin says the
            # answer is for this very question, so it is taken, not asked again.
            machine.answer(key, self._decode(unplaced, question))
            return
        self.pending[wire] = (key, question)

    def _accepts(self, wire: str, key: str) -> bool:
        # Only answers to what the sealed state says was asked, as asked.
        assert self.machine is not None
        return self.stateful and self.asked.get(wire) == [key, self.machine.digest(key)]

    def _decode(self, wire: str, question: PeerQuestion[Any]) -> Any:
        try:
            return decode_answer(question, self.responses[wire])
        except RemoteProtocolError as exc:
            raise RequestError(
                INVALID_PARAMS, f"inputResponses[{wire!r}] is not a valid answer: {exc}"
            ) from None

    def run_step(self, command: RunStep) -> None:
        if self.until_step:
            self.reached = True  # the task runs it (ReachedStep)
            return
        self.due.append(command)

    def _start_step(self, command: RunStep) -> None:
        assert self.nursery is not None
        scope = trio.CancelScope()  # cancelled when withdrawn (a deadline)
        self.running[command.key] = scope
        self.nursery.start_soon(self._perform, command, scope)

    async def _perform(self, command: RunStep, scope: trio.CancelScope) -> None:
        with scope:
            assert self.send is not None
            try:
                reply = await perform(self.server, self.scope, command)
            except Exception as exc:
                self.send.send_nowait(_Done(command.key, error=exc))
            else:
                self.send.send_nowait(_Done(command.key, reply))

    def withdraw(self, command: WithdrawQuestion) -> None:
        key = command.key
        self.pending = {w: p for w, p in self.pending.items() if p[0] != key}
        self.due = [d for d in self.due if d.key != key]
        scope = self.running.pop(key, None)
        if scope is not None:
            scope.cancel()

    def notify(self, command: Notify) -> None:
        notification = notice_notification(command.notice, self.scope, command.key)
        if notification is not None:
            self.notices.append(notification)  # sent by _advance, in order

    def persist(self, command: Persist) -> None:
        # Kept, and written before the round shows what follows them (rule
        # "Write-ahead"): a question only joins inputRequests, which go out
        # with the round's last write.
        assert self.machine is not None
        if self.hold is not None:
            self.hold.keep(command.records)
        self.machine.persisted()

    def set_timer(self, command: SetTimer) -> None:
        machine = self.machine
        assert machine is not None
        if self.until_step and machine.is_sleeping(command.key):
            self.slept = True  # a sleep begins the task too (ReachedStep)
            return
        bound = self.server.limits.max_request_sleep
        if self.sealed and machine.is_sleeping(command.key):
            held = self._held_for(command)
            if held > bound:
                machine.fail(command.key, _too_long(self.program, held, bound))
                return
        self.deadlines[command.key] = command.deadline

    def _held_for(self, command: SetTimer) -> float:
        """How long the sleep ``command`` sets can hold the request: what is
        left of it, or less when a branch around it times out first (its
        timer is set before its children run)."""
        now = command.deadline - command.seconds  # the machine's clock
        around = [
            at
            for key, at in self.deadlines.items()
            if command.key.startswith(key + ".")
        ]
        return min([command.deadline, *around]) - now

    def _sleeps_here(self) -> bool:
        """Whether a request's round waits in the request for a sleep: one
        is set and nothing else moves (no question is asked, the call goes
        on). A task's round never does: it parks (:class:`Parked`)."""
        machine = self.machine
        return (
            self.sealed
            and machine is not None
            and machine.outcome is None
            and machine.wake_at is not None
            and not self.pending
            and not self.reached
        )

    def cancel_timer(self, command: CancelTimer) -> None:
        self.deadlines.pop(command.key, None)

    def finish(self, command: Finish) -> None:
        for scope in self.running.values():
            scope.cancel()
        self.running.clear()

    # --- the end ---------------------------------------------------------------------

    def _outcome(self) -> Returned | Raised | None:
        if self.finished is not None:
            return self.finished
        machine = self.machine
        assert machine is not None
        outcome = machine.outcome
        return outcome if isinstance(outcome, Returned | Raised) else None

    def _wire(self, outcome: Returned | Raised) -> dict[str, Any] | None:
        """The result the request gets for ``outcome``, kept with the call's
        end for a retry whose reply was lost; None when it is not a result
        (the request's error, -32021...: its retry is told the state is
        used) or there is no ``encode``."""
        if self.encode is None:
            return None
        if isinstance(outcome, Raised):
            ended: Complete | BaseException = outcome.error
        else:
            ended = Complete(outcome.value)
        try:
            return self.encode(ended)
        except Exception:
            return None  # raised again where the request is answered

    def _conclude_now(self) -> Complete | InputRequired:
        """The end of a round that needs no write (no store, or a first round
        that completed)."""
        outcome = self._outcome()
        if isinstance(outcome, Returned):
            return Complete(outcome.value)
        if isinstance(outcome, Raised):
            raise outcome.error
        return self._seal(self._state_of())

    async def _conclude(self) -> Complete | InputRequired | Parked | ReachedStep:
        if self.reached:
            return ReachedStep()
        outcome = self._outcome()
        hold = self.hold
        if outcome is not None:
            wire = None
            if isinstance(hold, RoundHold):  # the call ended: its state is used
                # (a first round gave no state out: no retry to keep it for)
                wire = None if hold.first else self._wire(outcome)
                await hold.finish(wire)
            elif hold is not None:  # a task's: its result is the task's
                await hold.finish()
            if isinstance(outcome, Returned):
                return Complete(outcome.value, wire=wire)
            if wire is not None:  # a tool's error, made into its result once
                return Complete(None, wire=wire)
            raise outcome.error
        if hold is None:
            return self._seal(self._state_of())
        asked = self.now_asked()
        try:  # the journal stays bounded in a store too (its log's charge)
            carried = await hold.park(asked)
        except JournalTooLarge:
            await hold.finish()
            raise
        if not self.sealed:
            wake_at = min(self.deadlines.values(), default=None)
            return Parked(self.input_requests(), asked, wake_at)
        return self._seal(carried)

    def _state_of(self) -> dict[str, Any]:
        """What a stateless round's ``requestState`` carries besides the binding."""
        assert self.journal is not None
        cap = self.server.limits.max_journal_bytes
        return {
            "journal": capped_journal(self.journal.to_json(), cap),
            "asked": self.now_asked(),
        }

    def _seal(self, carried: Mapping[str, Any]) -> InputRequired:
        sealed: dict[str, Any] = {k: v for k, v in self.bound.items() if v is not None}
        if self.program.version is not None:
            sealed["version"] = self.program.version
        sealed.update(carried)
        state = self.server.sealer.seal(sealed, purpose=self.purpose)
        return InputRequired(self.input_requests(), state)

    def _asking(self) -> list[tuple[str, tuple[str, PeerQuestion[Any]]]]:
        """The waiting questions this round asks, by wire key: the first the
        call reached, at most ``max_questions_per_round`` (rule "Questions per
        round"); the rest are asked by a later round."""
        bound = self.server.limits.max_questions_per_round
        return list(itertools.islice(self.pending.items(), bound))

    def input_requests(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for wire, (key, question) in self._asking():
            method, params = question_request(question, self.scope, key)
            entry: dict[str, Any] = {"method": method}
            if params is not None:
                entry["params"] = params
            out[wire] = entry
        return out

    def now_asked(self) -> dict[str, Any]:
        """What this round asks, pinned: the next round accepts answers to it."""
        machine = self.machine
        assert machine is not None
        return {
            wire: [key, machine.digest(key)]
            for wire, (key, _question) in self._asking()
        }

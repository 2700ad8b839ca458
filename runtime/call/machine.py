"""One call's life, as a sans-IO state machine: inputs in, commands out.

Theory of operation
-------------------
A call of a tool (or a prompt) lives the same life however it is carried: a
live 2025-11-25 call on a session, a 2026-07-28 round that stops at the first
question the client has not answered, a task that any process sharing a store
may run, or an in-process host. :class:`CallMachine` is that life, written
once; each way of carrying a call is a thin *driver* over it.

In, as method calls (h11's ``receive_data``, Temporal's activation jobs):

* started, or restored from its records (:func:`open_call` with a journal:
  every recorded answer, step result, notice and deadline is replayed, and
  nothing recorded is asked, run or sent again);
* :meth:`~CallMachine.answer` / :meth:`~CallMachine.fail`: a question or a
  step the machine asked for came back;
* :meth:`~CallMachine.timer_fired`: a branch's deadline passed, or a
  sleep's;
* :meth:`~CallMachine.persisted` / :meth:`~CallMachine.persist_failed`: the
  records of the last :class:`~runtime.call.commands.Persist` are durable,
  or could not be written;
* :meth:`~CallMachine.cancel`: the call is cancelled.

Out, as :mod:`commands <runtime.call.commands>` from
:meth:`~CallMachine.commands`: ask, run a step, withdraw, notify, persist,
start or stop a timer, finish.

Rules (the single source of truth for every driver):

1. **Effects** are the :class:`~runtime.call.stepper.Stepper`'s business
   (keys, branches, replay from the journal, pinning by digest); the machine
   never looks inside a generator.
2. **Local questions** (``ctx.now()``, ``ctx.random()``) are answered here,
   with the clock and random bits the driver gave, and journaled like any
   answer.
3. **Steps** become :class:`~runtime.call.commands.RunStep` with their
   idempotency key (the call's id, the step's name and key: the same in
   every replay) and the deadline of the branches around them.
4. **Write-ahead.** With ``durable=True``, every answer, step result, notice
   key, deadline and patch marker becomes a record. Records collect until
   the call is about to show something (ask, run a step, notify, finish), or
   waits on the outside world; then one ``Persist`` of them goes out ahead
   of everything not handed out yet that shows something, and nothing after it is handed
   out until :meth:`~CallMachine.persisted`. So when the call shows
   something, every record its journal holds is written: nothing it shows
   depends on an answer that a crash could lose. A driver may
   acknowledge a ``Persist`` at once only if it writes those records, in
   order, before it carries out
   anything that follows (a 2026-07-28 round folds them into the write that
   moves the call on).
5. **Deadlines, not durations.** A branch's time limit is recorded as its
   deadline the first time the branch starts; a replay reuses it, and a
   deadline already past expires the branch at once. A sleep
   (:class:`~runtime.effects.Sleep`) is the same: its deadline is recorded
   the first time the tool reaches it (the first deadline stands, whatever
   a later version of the code asks there), a
   :class:`~runtime.call.commands.SetTimer` waits for what is left, and
   when it fires, or at once if the deadline has passed, the sleep is
   answered with its deadline and journaled like any answer. A sleep
   withdrawn (its branch ended) cancels its timer.
6. **Late answers are dropped.** An answer or failure for a key that is not
   pending (withdrawn, answered, the call over) is ignored, and the method
   says so (returns False).
7. **The end.** :class:`~runtime.call.commands.Finish` comes last, and ends
   every timer still set. After :meth:`~CallMachine.cancel`, the questions
   already handed out are withdrawn and nothing else comes before the Finish
   (nothing not yet handed out is shown, no timer is cancelled one by one);
   the outcome is :class:`~runtime.call.events.Cancelled`. After
   :meth:`~CallMachine.persist_failed`, the same, with the store's error as
   the outcome (:class:`~runtime.call.events.Raised`).

It never waits, never imports trio and keeps no time of its own.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Generator
from typing import Any, Final, cast, final

from ..effects.base import LocalQuestion, PeerQuestion, Question
from ..effects.sleep import Sleep
from ..steps.effect import Step
from ..steps.runner import step_key
from .commands import (
    AskPeer,
    CancelTimer,
    Command,
    Finish,
    Notify,
    Persist,
    RunStep,
    SetTimer,
    WithdrawQuestion,
)
from .events import Ask as AskEvent
from .events import Cancelled, Finished, Marked, Outcome, Raised, Returned, Tell
from .events import StartTimer as StartTimerEvent
from .events import StopTimer as StopTimerEvent
from .events import Withdraw as WithdrawEvent
from .journal import (
    Journal,
    Record,
    answer_record,
    notice_record,
    patch_record,
    timer_record,
)
from .observe import Observer
from .stepper import Stepper, start

__all__ = ["CallMachine", "open_call"]

_SHOWN: Final = (AskPeer, RunStep, Notify, Finish)  # what waits for records first
# Dropped on cancel: what is not shown now, and timers (the Finish ends them).
_TIMER_SLACK: Final = 0.01
"""Seconds a timer may have waited to be handed out and keep its ``seconds``
(exact under a virtual clock); a longer wait, behind a slow write, counts."""
_UNSENT: Final = (AskPeer, RunStep, Notify, Persist, SetTimer, CancelTimer)

Program = Callable[[Any], Generator[Any, Any, Any]]


def open_call(
    program: Program,
    context: Any,
    *,
    journal: Journal | None = None,
    durable: bool = False,
    clock: Callable[[], float] = time.time,
    bits: Callable[[int], int] | None = None,
) -> CallMachine | Returned | Raised:
    """The machine of a call of ``program``, started; or, for a program that
    ends before it starts (a plain function's value, or an error making its
    generator), just that outcome: nothing to drive, so no machine is made.

    Args:
        program: makes the call's root generator from ``context``.
        context: handed to the program and every branch child.
        journal: what the call recorded so far (restored from a store or a
            state), or None for a call that keeps no journal (a live call
            without a store). ``durable`` makes one if none is given.
        durable: emit :class:`~runtime.call.commands.Persist` for every
            record (rule 4 of the module doc).
        clock: seconds since the epoch, for ``ctx.now()`` and deadlines.
        bits: random bits for ``ctx.random()`` (default: the :mod:`random`
            module's shared generator).
    """
    if durable and journal is None:
        journal = Journal()
    started = start(program, context, journal=journal)
    if not isinstance(started, Stepper):
        return started
    return CallMachine(started, durable=durable, clock=clock, bits=bits)


@final
class CallMachine:
    """One call, from start to finish (see the module doc). Made by
    :func:`open_call`, or from a started :class:`Stepper`."""

    __slots__ = (
        "_barrier",
        "_ended",
        "_held",
        "_out",
        "_sleeps",
        "_timers",
        "_unasked",
        "_unwritten",
        "bits",
        "clock",
        "durable",
        "stepper",
    )

    def __init__(
        self,
        stepper: Stepper,
        *,
        durable: bool = False,
        clock: Callable[[], float] = time.time,
        bits: Callable[[int], int] | None = None,
    ) -> None:
        if durable and stepper.journal is None:
            raise ValueError("a durable call needs a stepper with a journal")
        self.stepper = stepper
        self.durable = durable
        self.clock = clock
        # Without bits, the random module's shared generator: seeding one per
        # call would cost more than a plain call.
        self.bits: Callable[[int], int] = random.getrandbits if bits is None else bits
        self._out: list[Command] = []  # not yet handed out, oldest first
        self._unwritten: list[Record] = []  # records waiting for a Persist
        self._timers: dict[str, float] | None = None  # running: key -> deadline
        self._sleeps: dict[str, float] | None = None  # sleeping: key -> deadline
        self._barrier = False  # a Persist is out, not yet acknowledged
        self._held = False  # commands waited behind that Persist's write
        self._ended: Outcome | None = None  # set by cancel() or persist_failed()
        self._unasked: set[str] | None = None  # local questions closed unanswered
        self._pump()

    # --- what the driver reads -------------------------------------------------------

    @property
    def call_id(self) -> str:
        """The call's id: the same in every replay with its journal."""
        return self.stepper.call_id

    @property
    def journal(self) -> Journal | None:
        return self.stepper.journal

    @property
    def observer(self) -> Observer | None:
        return self.stepper.observer

    @property
    def outcome(self) -> Outcome | None:
        """How the call ended (None while it runs)."""
        if self._ended is not None:
            return self._ended
        return self.stepper.outcome

    @property
    def wake_at(self) -> float | None:
        """The earliest deadline of the sleeps waiting (seconds since the
        epoch), or None: when a driver that parks the call must wake it."""
        sleeps = self._sleeps
        return min(sleeps.values()) if sleeps else None

    def is_sleeping(self, key: str) -> bool:
        """Whether the effect at ``key`` is a sleep waiting for its deadline."""
        return self._sleeps is not None and key in self._sleeps

    def commands(self) -> list[Command]:
        """The commands to carry out now, oldest first: up to and including
        the next :class:`~runtime.call.commands.Persist`, after which nothing
        more is handed out until :meth:`persisted`."""
        if self._barrier or not self._out:
            return []
        out = self._out
        held, self._held = self._held, False
        for index, command in enumerate(out):
            if type(command) is Persist:
                self._barrier = True
                self._out = out[index + 1 :]
                batch = out[: index + 1]
                return self._timed(batch) if held else batch
        self._out = []
        return self._timed(out) if held else out

    def _timed(self, batch: list[Command]) -> list[Command]:
        """``batch``, which waited behind a write, with each timer's
        ``seconds`` counted from now: a timer made before a Persist is handed
        out only once the write is done, and a driver waiting on its own clock
        must not wait the write's time again (at once, if the deadline passed
        meanwhile). A batch that waited for no write keeps its timers'
        ``seconds``: the wall time spent making them (a loaded machine's
        scheduling) is not the driver's to wait less by, and under a virtual
        clock its timers fire exactly."""
        if not any(type(command) is SetTimer for command in batch):
            return batch
        now = self.clock()
        timed: list[Command] = []
        for command in batch:
            if type(command) is SetTimer:
                left = command.deadline - now
                if left < command.seconds - _TIMER_SLACK:
                    command = SetTimer(command.key, command.deadline, max(0.0, left))
            timed.append(command)
        return timed

    def is_pending(self, key: str) -> bool:
        """Whether the question or step at ``key`` waits for its answer."""
        return self.stepper.is_pending(key)

    def question(self, key: str) -> Question[Any] | None:
        """The question (or step) pending at ``key``, or None."""
        return self.stepper.question(key)

    def digest(self, key: str) -> str:
        """The digest of the question pending at ``key`` (what pins an answer
        to it); raises LocalProtocolError if none is pending."""
        return self.stepper.digest(key)

    # --- what the driver tells it ----------------------------------------------------

    def answer(self, key: str, reply: Any) -> bool:
        """The question or step at ``key`` gave ``reply``; False if it was not
        pending (withdrawn, or the call is over): the reply is dropped."""
        stepper = self.stepper
        if not stepper.is_pending(key):
            return False
        stepper.answer(key, reply)
        if self.durable:
            self._record_answer(key)
        self._pump()
        return True

    def fail(self, key: str, error: BaseException) -> bool:
        """The question or step at ``key`` failed with ``error`` (raised into
        the tool at its yield); False if it was not pending."""
        stepper = self.stepper
        if not stepper.is_pending(key):
            return False
        self._forget_sleep(key)
        stepper.fail(key, error)
        self._pump()
        return True

    def timer_fired(self, key: str) -> None:
        """The deadline of the branch or the sleep at ``key`` passed (ignored
        if the branch has ended, or the sleep was answered or withdrawn)."""
        sleeps = self._sleeps
        if sleeps is not None and key in sleeps:
            self._wake(key, sleeps.pop(key))
            self._pump()
            return
        if self._timers is None or self._timers.pop(key, None) is None:
            return
        self.stepper.expire(key)
        self._pump()

    def persisted(self) -> None:
        """The last :class:`~runtime.call.commands.Persist`'s records are
        durable: the commands after it may be carried out."""
        self._barrier = False
        self._held = bool(self._out)  # these waited for the write

    def persist_failed(self, error: BaseException) -> None:
        """The last Persist's records could not be written: the call cannot go
        on (what it would show next could not be replayed). It ends with
        ``error`` as its outcome (rule 7)."""
        self._stop(Raised(error))

    def cancel(self) -> None:
        """Cancel the call: close every generator (their ``finally`` runs),
        withdraw what was asked, finish (rule 7)."""
        self._stop(Cancelled())

    def _stop(self, end: Cancelled | Raised) -> None:
        """End the call with ``end`` (rule 7), unless its Finish is out: a
        call whose end is decided but waits behind a Persist has not shown
        it, so it ends with ``end`` all the same."""
        if self._ended is not None:
            return  # stopped already
        stepper = self.stepper
        if stepper.outcome is None:
            self._ended = end
            stepper.cancel()
            self._unwritten.clear()  # what it would have shown is not shown now
            self._pump()  # the withdrawals and the end
        elif any(type(command) is Finish for command in self._out):
            self._ended = end
            self._out = [c for c in self._out if type(c) is not Finish]
            self._out.append(Finish(end))
        else:
            return  # its Finish is handed out: the call is over
        self._out = [c for c in self._out if not isinstance(c, _UNSENT)]
        self._barrier = False

    # --- turning the stepper's events into commands ----------------------------------

    def _pump(self) -> None:
        stepper = self.stepper
        events = stepper.events()
        while events:
            for event in events:
                self._take(event)
            events = stepper.events()
        if self._unwritten:  # waiting now: what it recorded is written first
            self._write_ahead()

    def _take(self, event: object) -> None:
        kind = type(event)
        if kind is AskEvent:
            ask = cast(AskEvent, event)
            question = ask.question
            if isinstance(question, LocalQuestion):
                self._answer_locally(ask.key, question)
            elif type(question) is Sleep:
                self._sleep(ask.key, question)
            elif type(question) is Step:
                step = question
                self._show(
                    RunStep(
                        ask.key,
                        step,
                        step_key(self.stepper.call_id, step, ask.key),
                        self._deadline_around(ask.key),
                    )
                )
            else:
                self._show(AskPeer(ask.key, cast("PeerQuestion[Any]", question)))
        elif kind is Tell:
            tell = cast(Tell, event)
            if self.durable:
                self._unwritten.append(notice_record(tell.key))
            self._show(Notify(tell.key, tell.notice))
        elif kind is WithdrawEvent:
            self._withdraw(cast(WithdrawEvent, event).key)
        elif kind is StartTimerEvent:
            timer = cast(StartTimerEvent, event)
            self._start_timer(timer.key, timer.seconds)
        elif kind is StopTimerEvent:
            self._stop_timer(cast(StopTimerEvent, event).key)
        elif kind is Marked:
            if self.durable:  # written ahead of what the call shows next
                marked = cast(Marked, event)
                self._unwritten.append(patch_record(marked.name, marked.taken))
        elif kind is Finished:
            ended = self._ended  # cancel()'s or persist_failed()'s, if either
            self._show(
                Finish(cast(Finished, event).outcome if ended is None else ended)
            )

    def _show(self, command: Command) -> None:
        """Hand ``command`` out after the records it must follow (rule 4:
        :meth:`_write_ahead`, once the events are taken)."""
        self._out.append(command)

    def _write_ahead(self) -> None:
        """Put the records not yet written in a Persist ahead of everything
        that shows something and is not handed out yet (rule 4).

        Not just ahead of what shows next: the stepper records a whole run's
        answers and notices before the machine takes its events, so a notice
        shown first may be taken before an answer recorded after it. One
        Persist then writes the lot: a Persist not handed out takes them in.
        """
        out = self._out
        at = len(out)
        for index, command in enumerate(out):
            if isinstance(command, _SHOWN):
                at = index
                break
        records = tuple(self._unwritten)
        self._unwritten = []
        for index in range(at - 1, -1, -1):
            earlier = out[index]
            if type(earlier) is Persist:
                out[index] = Persist(earlier.records + records)
                return
        out.insert(at, Persist(records))

    def _closed_before_reached(self, key: str) -> bool:
        """Whether ``key``'s frame was closed after it asked, in the same run
        (a sibling failed first): its Withdraw is on its way and withdraws
        nothing, so it is noted as never asked."""
        if self.stepper.is_pending(key):
            return False
        if self._unasked is None:
            self._unasked = set()
        self._unasked.add(key)
        return True

    def _answer_locally(self, key: str, question: LocalQuestion[Any]) -> None:
        stepper = self.stepper
        if self._closed_before_reached(key):
            return
        try:
            reply = question.compute(self.clock, self.bits)
        except Exception as exc:
            stepper.fail(key, exc)
            return
        stepper.answer(key, reply)
        if self.durable:
            self._record_answer(key)

    def _record_answer(self, key: str) -> None:
        journal = self.stepper.journal
        assert journal is not None
        entry = journal.entry(key)
        if entry is not None:
            self._unwritten.append(answer_record(key, *entry))

    def _withdraw(self, key: str) -> None:
        unasked = self._unasked
        if unasked is not None and key in unasked:
            unasked.remove(key)  # a local question: never handed out
            return
        if self._forget_sleep(key):
            return  # a sleep: nothing was asked, its timer is cancelled
        out = self._out
        for index, command in enumerate(out):
            kind = type(command)
            if (kind is AskPeer or kind is RunStep) and cast(
                AskPeer, command
            ).key == key:
                del out[index]  # never handed out: nothing to withdraw
                return
        out.append(WithdrawQuestion(key))

    def _start_timer(self, key: str, seconds: float) -> None:
        journal = self.stepper.journal
        deadline = None if journal is None else journal.deadline(key)
        if deadline is None:
            deadline = self.clock() + seconds
            if journal is not None:
                journal.set_deadline(key, deadline)
                if self.durable:
                    self._unwritten.append(timer_record(key, deadline))
            left = seconds
        else:
            left = deadline - self.clock()
        if left <= 0:
            self.stepper.expire(key)  # rule 5: it ran out before this replay
            return
        if self._timers is None:
            self._timers = {}
        self._timers[key] = deadline
        self._out.append(SetTimer(key, deadline, left))

    def _sleep(self, key: str, sleep: Sleep) -> None:
        """A sleep reached: its deadline recorded (or restored), then a timer
        for what is left, or answered now if nothing is (rule 5)."""
        stepper = self.stepper
        if self._closed_before_reached(key):
            return
        journal = stepper.journal
        now = self.clock()
        deadline = None if journal is None else journal.deadline(key)
        if deadline is None:
            deadline = sleep.deadline(now)
            if journal is not None:
                journal.set_deadline(key, deadline)
                if self.durable:
                    self._unwritten.append(timer_record(key, deadline))
        left = deadline - now
        if left <= 0:
            self._wake(key, deadline)
            return
        if self._sleeps is None:
            self._sleeps = {}
        self._sleeps[key] = deadline
        self._out.append(SetTimer(key, deadline, left))

    def _wake(self, key: str, deadline: float) -> None:
        """The sleep at ``key`` is over: answered with its deadline."""
        self.stepper.answer(key, deadline)
        if self.durable:
            self._record_answer(key)

    def _forget_sleep(self, key: str) -> bool:
        """Stop the sleep at ``key``, if one waits there (withdrawn, or failed
        by the driver): its timer is cancelled. Whether one did."""
        sleeps = self._sleeps
        if sleeps is None or sleeps.pop(key, None) is None:
            return False
        out = self._out
        for index, command in enumerate(out):
            if type(command) is SetTimer and command.key == key:
                del out[index]  # never handed out
                return True
        out.append(CancelTimer(key))
        return True

    def _stop_timer(self, key: str) -> None:
        if self._timers is None or self._timers.pop(key, None) is None:
            return  # expired at once, or fired
        out = self._out
        for index, command in enumerate(out):
            if type(command) is SetTimer and command.key == key:
                del out[index]
                return
        out.append(CancelTimer(key))

    def _deadline_around(self, key: str) -> float | None:
        """The earliest deadline of the branches around the effect at ``key``."""
        timers = self._timers
        if not timers:
            return None
        around = [at for branch, at in timers.items() if key.startswith(branch + ".")]
        return min(around) if around else None

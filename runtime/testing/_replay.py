"""Replaying a recorded journal against a tool's code: no peer, no I/O.

:func:`replay` runs a tool's call machine against a :class:`JournalDocument`
(what ``yieldmcp journal`` writes) and answers every question, step and
local question (``ctx.now()``, ``ctx.random()``) from it alone. Nothing is
asked, run or computed afresh: what the journal does not answer stops the
replay, and so does a recorded answer the tool never asks for.

How it decides, once the machine has nothing more to do:

* a question asked afresh at a key the journal records (the same kind with
  other content, or a step under another name) is a
  :class:`~runtime.errors.ReplayDivergence` naming the key, what the journal
  recorded there and what the tool asks now (another kind of question at a
  recorded key is one already, raised by the stepper);
* a branch whose deadline the journal records, still waiting, timed out in
  the recording: its timer fires, earliest deadline first;
* a question asked afresh at a key the journal does not record is
  :class:`~runtime.errors.JournalExhausted` (the journal ends before the
  tool does), naming what the tool asks next;
* a call that ended with recorded answers it never asked for diverged there.

It does not wait: no time passes, and a timer fires only as above.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar, cast, final

from ..call.commands import (
    AskPeer,
    CancelTimer,
    Finish,
    Notify,
    Persist,
    RunStep,
    SetTimer,
    WithdrawQuestion,
    carry_out,
)
from ..call.events import Cancelled, Raised, Returned
from ..call.journal import Journal, JournalDocument
from ..call.machine import CallMachine, open_call
from ..call.observe import OBSERVING, Observer, performing
from ..effects.base import Question
from ..elicitation.effects import Elicit
from ..errors import InternalError, JournalExhausted, ReplayDivergence
from ..sampling.effect import Sample
from ..tools.value import Tool

__all__ = ["load_journal", "replay"]

R = TypeVar("R")

_SHOWN_CHARS = 60  # of a sample's prompt, in a message


def load_journal(
    journal: JournalDocument | Mapping[str, Any] | str | os.PathLike[str],
) -> JournalDocument:
    """The journal document ``journal`` is, holds (its JSON) or names (a file).

    Raises:
        ValueError: not a journal document, or one this version cannot read
            (one line saying why, naming the file).
    """
    if isinstance(journal, JournalDocument):
        return journal
    if not isinstance(journal, str | os.PathLike):
        return JournalDocument.from_json(journal)  # its JSON, or not a document
    path = Path(journal)
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: cannot read a journal: {exc}") from None
    try:
        return JournalDocument.from_json(data)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None


def replay(
    tool: Tool[Any, R],
    journal: JournalDocument | Mapping[str, Any] | str | os.PathLike[str],
    params: Mapping[str, Any] | None = None,
) -> R:
    """Run ``tool`` against ``journal`` alone and return its result.

    Args:
        tool: the tool's code as it is now.
        journal: a :class:`~runtime.lowlevel.JournalDocument`, its JSON, or
            the path of a file ``yieldmcp journal`` wrote.
        params: the call's arguments; by default the ones the journal
            records (a 2026-07-28 round's journal has none: pass them).

    Returns:
        What the tool returns; an error the tool raises (as recorded: a
        ``ToolError``, a ``StepFailed`` replayed from its record) is raised.

    Raises:
        ReplayDivergence: the tool asks something other than the journal
            recorded (module doc), naming the key, what was recorded there
            and what is asked now.
        JournalExhausted: the journal ends before the tool does (a
            ``ReplayDivergence`` too), naming what the tool asks next.
        ValueError: ``journal`` is not a journal document, or has no
            arguments and none were given.
    """
    document = load_journal(journal)
    if params is None:
        if document.arguments is None:
            raise ValueError(
                f"the journal of {document.source} {document.id} does not record "
                f"its arguments: pass them, replay(tool, journal, params)"
            )
        params = document.arguments
    arguments = tool.parse_arguments(params)
    recorded = document.journal()
    watch = _Watch(recorded)
    token = OBSERVING.set(watch)
    try:
        opened = open_call(
            tool.program(arguments),
            tool.context(),
            journal=recorded,
            clock=lambda: 0.0,  # nothing answered afresh keeps it: see _Watch
            bits=random.Random(0).getrandbits,
        )
    finally:
        OBSERVING.reset(token)
    outcome = opened if not isinstance(opened, CallMachine) else _drive(opened, watch)
    if isinstance(outcome, Raised) and isinstance(outcome.error, ReplayDivergence):
        raise outcome.error  # met by the stepper: another kind of question
    watch.check_ended()
    if isinstance(outcome, Returned):
        return cast(R, outcome.value)
    if isinstance(outcome, Raised):
        raise outcome.error
    raise InternalError(f"replay ended without a result: {outcome!r}")


def _drive(machine: CallMachine, watch: _Watch) -> Returned | Raised | Cancelled:
    """Carry the machine's commands out until the call ends, firing the
    recorded deadlines of branches that wait (module doc)."""
    carrier = _Replaying(machine)
    try:
        while True:
            commands = machine.commands()
            while commands:
                for command in commands:
                    carry_out(command, carrier)
                commands = machine.commands()
            if machine.outcome is not None:
                return machine.outcome
            watch.check_diverged()
            due = carrier.recorded_timer(watch.deadlines)
            if due is None:
                watch.check_waiting()
                _stuck(carrier)
            else:
                machine.timer_fired(due)
    except BaseException:
        machine.cancel()  # close the tool's generators: their finally runs
        for command in machine.commands():
            carry_out(command, carrier)
        raise


def _stuck(carrier: _Replaying) -> None:
    """Raise for a call that waits on nothing the journal records and asked
    nothing afresh: a timer whose deadline it does not record."""
    waiting = min(carrier.timers, default=None)
    if waiting is None:
        raise InternalError("a replayed call waits on nothing")
    raise JournalExhausted(waiting, "a timer the journal does not record")


@final
class _Replaying:
    """Carries out a replayed machine's commands: nothing goes out; a
    question or step asked afresh waits (its :class:`_Watch` judges it)."""

    __slots__ = ("machine", "timers")

    def __init__(self, machine: CallMachine) -> None:
        self.machine = machine
        self.timers: dict[str, float] = {}

    def recorded_timer(self, recorded: Mapping[str, float]) -> str | None:
        """The running timer with the earliest deadline the journal records."""
        due = [(at, key) for key, at in self.timers.items() if key in recorded]
        if not due:
            return None
        _at, key = min(due)
        del self.timers[key]
        return key

    def ask(self, command: AskPeer) -> None:
        pass  # never answered: the journal had no answer

    def run_step(self, command: RunStep) -> None:
        pass  # never run: the journal had no result

    def notify(self, command: Notify) -> None:
        pass  # sent when recorded

    def persist(self, command: Persist) -> None:
        self.machine.persisted()

    def withdraw(self, command: WithdrawQuestion) -> None:
        pass

    def set_timer(self, command: SetTimer) -> None:
        self.timers[command.key] = command.deadline

    def cancel_timer(self, command: CancelTimer) -> None:
        self.timers.pop(command.key, None)

    def finish(self, command: Finish) -> None:
        self.timers.clear()


@final
class _Watch:
    """Hears which questions a replay answers from the journal and which it
    asks afresh (an :class:`~runtime.call.observe.Observer`), and tells the
    observer around the replay, if any, everything it hears."""

    def __init__(self, journal: Journal) -> None:
        # What the journal records before the replay uses (and drops) any of
        # it: each key's digest and label, and the deadlines.
        self.recorded: dict[str, tuple[str, str | None]] = {}
        keys = journal.keys()  # in the order recorded
        for key in keys:
            entry = journal.entry(key)
            assert entry is not None
            digest, _reply, label = entry
            self.recorded[key] = (digest, label)
        self.deadlines: dict[str, float] = journal.deadlines()
        self.used: set[str] = set()  # answered from the journal
        # Whoever watched calls made here before the replay (a test's
        # ``picture``) hears the replay too.
        self.outer: Observer | None = OBSERVING.get()
        self.fresh: dict[str, Question[Any]] = {}  # asked afresh, not withdrawn

    # --- judging ---------------------------------------------------------------------

    def check_diverged(self) -> None:
        """Raise for a question asked afresh at a key the journal records."""
        for key, question in self.fresh.items():
            if key in self.recorded:
                raise ReplayDivergence(key, self._recorded(key), _asked(question))

    def check_waiting(self) -> None:
        """Raise for the first question asked afresh (the journal ran out)."""
        self.check_diverged()
        for key, question in self.fresh.items():
            raise JournalExhausted(key, _asked(question))

    def check_ended(self) -> None:
        """Raise if the call ended on anything but the journal: a question
        asked afresh (``ctx.now()`` is answered, not waited on), or a
        recorded answer it never asked for."""
        self.check_waiting()
        for key in self.recorded:
            if key not in self.used:
                raise ReplayDivergence(
                    key, self._recorded(key), "nothing (the call ended before it)"
                )

    def _recorded(self, key: str) -> str:
        digest, label = self.recorded[key]
        return f"{label or 'an answer'} (digest {digest[:12]})"

    # --- the observer: noted, and told to the one around the replay ---------------

    def began(self, call_id: str) -> None:
        if self.outer is not None:
            self.outer.began(call_id)

    def asked(self, key: str, question: Any) -> None:
        self.fresh[key] = cast("Question[Any]", question)
        if self.outer is not None:
            self.outer.asked(key, question)

    def replayed(self, key: str, question: Any, recorded: Any) -> None:
        self.used.add(key)
        if self.outer is not None:
            self.outer.replayed(key, question, recorded)

    def answered(self, key: str, reply: Any) -> None:
        if self.outer is not None:
            self.outer.answered(key, reply)

    def failed(self, key: str, error: BaseException) -> None:
        if self.outer is not None:
            self.outer.failed(key, error)

    def withdrawn(self, key: str) -> None:
        self.fresh.pop(key, None)  # its branch ended: the recording's did too
        if self.outer is not None:
            self.outer.withdrawn(key)

    def told(self, key: str, notice: Any, fresh: bool) -> None:
        if self.outer is not None:
            self.outer.told(key, notice, fresh)

    def branched(self, key: str, limits: Any, children: int) -> None:
        if self.outer is not None:
            self.outer.branched(key, limits, children)

    def joined(self, key: str, error: BaseException | None) -> None:
        if self.outer is not None:
            self.outer.joined(key, error)

    def finished(self, outcome: Any) -> None:
        if self.outer is not None:
            self.outer.finished(outcome)

    def performing(self, key: str) -> contextlib.AbstractContextManager[None]:
        return performing(self.outer, key)


def _asked(question: Question[Any]) -> str:
    """What ``question`` asks, in a few words, with the digest that pins it."""
    detail = ""
    if isinstance(question, Elicit):
        detail = f" {cast('Elicit[Any]', question).key!r}"
    elif isinstance(question, Sample):
        messages = cast("Sample[Any]", question).messages
        if messages:
            text = messages[-1].text
            shown = text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS] + "…"
            detail = f" {shown!r}"
    return f"{question.label()}{detail} (digest {question.digest()[:12]})"

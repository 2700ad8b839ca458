"""The call machine, driven by hand (no trio, no I/O), on the smallest
examples of what broke its rules (:mod:`runtime.call.machine`): one per fix.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

from runtime import Context
from runtime.lowlevel import (
    AskPeer,
    CallMachine,
    Cancelled,
    Finish,
    Journal,
    Notify,
    Persist,
    Raised,
    Record,
    SetTimer,
    WithdrawQuestion,
    open_call,
)
from tests.programs import (
    Answer,
    BranchStep,
    LogStep,
    NowStep,
    Program,
    RaiseStep,
    RandomStep,
    SampleStep,
    Trace,
    answer_for,
    execute,
    failure_label,
)

START = 1_000_000.0  # the fake clock's first reading
CONTEXT = Context(elicits={"k": Answer})  # a tool's, without a tool around it


class FakeClock:
    """Wall-clock time that moves when the test says, and by a millisecond at
    each reading, so that every ``ctx.now()`` reads a value of its own."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        self.now += 0.001
        return self.now


def random_bits(life: int) -> Callable[[int], int]:
    """Random bits for one life of a call: values no other life draws."""
    drawn = itertools.count(life * 1_000_000)
    return lambda bits: next(drawn) % (1 << bits)


def ident(record: Record) -> tuple[str, str]:
    """A record's kind and key (records compare by these: rule 4)."""
    if "n" in record:
        return ("notice", record["n"])
    if "t" in record:
        return ("timer", record["t"])
    return ("answer", record["k"])


def _open(
    program: Program,
    *,
    durable: bool = False,
    clock: FakeClock | None = None,
    journal: Journal | None = None,
) -> CallMachine:
    opened = open_call(
        lambda ctx: execute(ctx, program, "r", Trace()),
        CONTEXT,
        journal=journal,
        durable=durable,
        clock=clock or FakeClock(),
        bits=random_bits(1),
    )
    assert isinstance(opened, CallMachine)
    return opened


@pytest.mark.parametrize("read", [NowStep("a"), RandomStep("a")])
def test_a_local_question_closed_in_the_run_that_asked_it_is_not_answered(
    read: NowStep | RandomStep,
) -> None:
    """A sibling that fails at once closes the child that read the clock in
    the same run: the machine neither answers the read (it raised
    LocalProtocolError) nor withdraws what it never handed out."""
    machine = _open((BranchStep(((read,), (RaiseStep("b"),))),))
    [finish] = machine.commands()
    assert isinstance(finish, Finish)
    assert isinstance(finish.outcome, Raised)
    assert failure_label(finish.outcome.error) == "b"


@pytest.mark.parametrize("stop", ["cancel", "persist_failed"])
def test_a_call_stopped_while_its_finish_waits_on_a_write_ends_stopped(
    stop: str,
) -> None:
    """The answer that ends the call is recorded; its Finish waits behind the
    Persist. Cancelled (or the write failing) then, the call ends as rule 7
    says, and the Finish it had not shown is not shown."""
    machine = _open((SampleStep("a"),), durable=True)
    [ask] = machine.commands()
    assert isinstance(ask, AskPeer)
    assert machine.answer(ask.key, answer_for(ask.question, frozenset()))
    [persist] = machine.commands()
    assert isinstance(persist, Persist)
    error = OSError("the store is full")
    if stop == "cancel":
        machine.cancel()
        end: Cancelled | Raised = Cancelled()
    else:
        machine.persist_failed(error)
        end = Raised(error)
    assert machine.commands() == [Finish(end)]
    assert machine.outcome == end


def test_a_cancelled_call_withdraws_its_questions_and_cancels_no_timer() -> None:
    machine = _open((BranchStep(((SampleStep("a"),),), 10.0),))
    assert [type(c) for c in machine.commands()] == [SetTimer, AskPeer]
    machine.cancel()
    assert machine.commands() == [WithdrawQuestion("0.0/0"), Finish(Cancelled())]


def test_every_record_is_written_before_the_first_thing_shown() -> None:
    """Two notices in one run: the stepper records both before the machine
    takes the first, so one Persist writes both before either is sent."""
    machine = _open((LogStep("a"), LogStep("b")), durable=True)
    [persist] = machine.commands()
    assert isinstance(persist, Persist)
    assert [ident(r) for r in persist.records] == [("notice", "0"), ("notice", "1")]
    machine.persisted()
    assert [type(c) for c in machine.commands()] == [Notify, Notify, Finish]


@pytest.mark.parametrize("down", [5.0, 15.0])
def test_a_restored_branch_keeps_its_deadline_or_expires_at_once(down: float) -> None:
    """Rule 5 in one example: a branch of 10 s, restored after ``down`` s."""
    clock = FakeClock()
    program: Program = (BranchStep(((SampleStep("a"),),), 10.0),)
    machine = _open(program, durable=True, clock=clock)
    timer, persist = machine.commands()
    assert isinstance(timer, SetTimer)
    assert isinstance(persist, Persist)
    assert persist.records == ({"t": "0", "at": timer.deadline},)
    machine.persisted()
    assert [type(c) for c in machine.commands()] == [AskPeer]
    clock.now += down  # the process dies, and a new one opens the call
    journal = Journal.from_records(persist.records, machine.call_id)
    restored = _open(program, durable=True, clock=clock, journal=journal)
    commands = restored.commands()
    if down < 10.0:
        assert commands[0] == SetTimer("0", timer.deadline, commands[0].seconds)
        assert [type(c) for c in commands] == [SetTimer, AskPeer]
    else:
        [finish] = commands
        assert isinstance(finish, Finish)
        assert isinstance(finish.outcome, Raised)
        assert failure_label(finish.outcome.error) == "timeout r/0"

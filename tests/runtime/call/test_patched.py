"""``ctx.patched(name)``: Temporal's ``workflow.patched``, in the call core.

A call recorded under old code and replayed under new code must take the old
path wherever the old code already went past the patch point, and the new
path everywhere else. So ``patched`` is False while replaying the part of a
call recorded before the patch existed (the journal goes on past the point,
and holds no marker), and True when the point is reached live. Its value is
recorded (a marker), so later replays agree; and it takes no key, so a
journal recorded without it still replays: the effects around it keep their
keys.

Old code and new code here are two tools over the same steps: ``old`` runs
``count`` steps; ``new`` is the same with ``ctx.patched("extra")`` before
step ``at``, and on the patched path one more effect-free line. Which steps
ran is counted, so a replay that ran a recorded step again is seen.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime import Context, Op, tool
from runtime.errors import EffectNeverYielded
from runtime.lowlevel import (
    CallMachine,
    Finish,
    Journal,
    Persist,
    Returned,
    RunStep,
    StepReply,
    open_call,
    run,
)
from runtime.testing import ScriptedPeer, run_scripted

RAN: list[int] = []


def work(n: int) -> int:
    RAN.append(n)
    return n * 10


def old_tool(count: int) -> Any:
    @tool(name="job", version="1")
    def job(ctx: Context) -> Op[list[Any]]:
        out: list[Any] = []
        for n in range(count):
            out.append((yield from ctx.step(work, n)))
        return out

    return job


def new_tool(count: int, at: int) -> Any:
    @tool(name="job", version="2", continues=("1",))
    def job(ctx: Context) -> Op[list[Any]]:
        out: list[Any] = []
        for n in range(count):
            if n == at:
                out.append("new" if (yield from ctx.patched("extra")) else "old")
            out.append((yield from ctx.step(work, n)))
        if at >= count:
            out.append("new" if (yield from ctx.patched("extra")) else "old")
        return out

    return job


def recorded(count: int, steps_done: int) -> Journal:
    """The journal of an old call that finished ``steps_done`` of its steps
    (and died in the next, or finished)."""
    journal = Journal()
    machine = open_call(
        old_tool(count).program(old_tool(count).parse_arguments({})),
        old_tool(count).context(),
        journal=journal,
    )
    assert isinstance(machine, CallMachine)
    for n in range(steps_done):
        (command,) = machine.commands()
        machine.answer(command.key, StepReply(value=n * 10))  # type: ignore[attr-defined]
    return journal


def replay(tool_: Any, journal: Journal) -> list[Any]:
    RAN.clear()
    return run_scripted(tool_, {}, ScriptedPeer(), journal=journal)


def test_a_new_call_takes_the_new_path_and_records_the_marker() -> None:
    journal = Journal()
    assert replay(new_tool(2, 1), journal) == [0, "new", 10]
    assert journal.patch("extra") is True
    assert RAN == [0, 1]


def test_an_old_call_past_the_point_takes_the_old_path_and_runs_nothing_again() -> None:
    journal = recorded(3, 3)  # the old call finished under old code
    assert replay(new_tool(3, 1), journal) == [0, "old", 10, 20]
    assert RAN == []  # the keys did not shift: every step replayed
    assert journal.patch("extra") is False


def test_an_old_call_reaching_the_point_live_takes_the_new_path() -> None:
    journal = recorded(3, 1)  # died in step 1: the point (before it) not passed
    assert replay(new_tool(3, 1), journal) == [0, "new", 10, 20]
    assert RAN == [1, 2]
    assert journal.patch("extra") is True


def test_a_point_after_the_last_effect_is_reached_live() -> None:
    journal = recorded(2, 2)
    assert replay(new_tool(2, 2), journal) == [0, 10, "new"]
    assert RAN == []


@pytest.mark.parametrize("steps_done", [1, 3])
def test_the_value_is_recorded_so_a_second_replay_agrees(steps_done: int) -> None:
    journal = recorded(3, steps_done)
    first = replay(new_tool(3, 1), journal)
    again = Journal.from_json(journal.to_json())  # a 2026-07-28 state's trip
    assert replay(new_tool(3, 1), again) == first
    assert RAN == []


def test_the_marker_is_a_durable_record_and_reads_back() -> None:
    made = new_tool(2, 0)
    machine = open_call(
        made.program(made.parse_arguments({})), made.context(), durable=True
    )
    assert isinstance(machine, CallMachine)
    records: list[dict[str, Any]] = []
    finished = None
    while finished is None:
        for command in machine.commands():
            if isinstance(command, Persist):
                records.extend(command.records)
                machine.persisted()
            elif isinstance(command, RunStep):
                machine.answer(command.key, StepReply(value=7))
            elif isinstance(command, Finish):
                finished = command.outcome
    assert finished == Returned(["new", 7, 7])
    assert {"p": "extra", "v": True} in records
    # A journal with the marker and every step: the marker decides, not the
    # steps recorded after the point.
    read = Journal.from_records(records, "call-1")
    assert replay(made, read) == ["new", 7, 7]
    assert RAN == []


def test_a_marker_memoizes_the_name_for_the_rest_of_the_call() -> None:
    @tool(name="loop")
    def loop(ctx: Context) -> Op[list[Any]]:
        seen: list[Any] = []
        for n in range(3):
            seen.append((yield from ctx.patched("p")))
            seen.append((yield from ctx.step(work, n)))
        return seen

    @tool(name="loop")
    def loop_old(ctx: Context) -> Op[list[Any]]:
        seen: list[Any] = []
        for n in range(3):
            seen.append((yield from ctx.step(work, n)))
        return seen

    journal = Journal()
    run_scripted(loop_old, {}, ScriptedPeer(), journal=journal)
    # Past the first point under old code: False there, and so at the later
    # points too (Temporal memoizes per name), though the journal ends before.
    first_step_only = Journal.from_records(
        [r for r in journal.records() if r.get("k") == "0"], "c"
    )
    assert replay(loop, first_step_only) == [False, 0, False, 10, False, 20]


def test_in_a_branch_only_the_childs_own_past_counts() -> None:
    def child(n: int) -> Any:
        def run(ctx: Context) -> Generator[Any, Any, Any]:
            first = yield from ctx.step(work, n)
            if n == 1:
                return [first, (yield from ctx.patched("c1"))]
            return [first, (yield from ctx.step(work, n + 100))]

        return run

    @tool(name="fan")
    def fan(ctx: Context) -> Op[Any]:
        return (yield from ctx.branch(child(0), child(1)))

    @tool(name="fan")
    def fan_old(ctx: Context) -> Op[Any]:
        def plain(n: int) -> Any:
            def run(ctx: Context) -> Generator[Any, Any, Any]:
                first = yield from ctx.step(work, n)
                if n == 1:
                    return [first]
                return [first, (yield from ctx.step(work, n + 100))]

            return run

        return (yield from ctx.branch(plain(0), plain(1)))

    journal = Journal()
    run_scripted(fan_old, {}, ScriptedPeer(), journal=journal)
    # Child 1 ended after its step: its point (after it) was never passed,
    # though child 0 recorded a later ordinal.
    assert replay(fan, journal) == ([0, 1000], [10, True])
    assert RAN == []


def test_a_patched_never_yielded_is_reported() -> None:
    @tool(name="forgot")
    def forgot(ctx: Context) -> Op[int]:
        ctx.patched("p")
        return (yield from ctx.step(work, 1))

    with pytest.warns(EffectNeverYielded, match=r"ctx\.patched\(\.\.\.\)"):
        run_scripted(forgot, {}, ScriptedPeer())


@pytest.mark.parametrize("bad", ["", 3, None])
def test_a_patch_name_is_a_non_empty_str(bad: Any) -> None:
    with pytest.raises(TypeError, match="patch name"):
        Context().patched(bad)


@settings(max_examples=60, deadline=None)
@given(
    count=st.integers(0, 5),
    at=st.integers(0, 5),
    done=st.integers(0, 5),
)
def test_patched_is_false_exactly_where_the_old_call_went_past_it(
    count: int, at: int, done: int
) -> None:
    at, done = min(at, count), min(done, count)
    journal = recorded(count, done)
    got = replay(new_tool(count, at), journal)
    live = done <= at  # the old call recorded nothing at or after the point
    expected: list[Any] = [n * 10 for n in range(count)]
    expected.insert(at, "new" if live else "old")
    assert got == expected
    assert list(range(done, count)) == RAN  # nothing recorded ran again
    assert journal.patch("extra") is live
    again = Journal.from_json(journal.to_json())
    assert replay(new_tool(count, at), again) == expected
    assert RAN == []


def test_a_question_asked_after_the_point_means_the_call_passed_it() -> None:
    # Died (or parked) in step 1, which was asked but not recorded: a round
    # or a task knows what its call asked, and says so.
    journal = recorded(3, 1)
    journal.reach(["1"])
    assert replay(new_tool(3, 1), journal) == [0, "old", 10, 20]
    assert journal.patch("extra") is False


def test_a_false_marker_is_not_written_so_a_replay_shows_nothing_new() -> None:
    # A call taken on again replays to the question it had asked: a write
    # before it would hold the question back behind a barrier.
    made = new_tool(3, 1)
    machine = open_call(
        made.program(made.parse_arguments({})),
        made.context(),
        journal=recorded(3, 2),
        durable=True,
    )
    assert isinstance(machine, CallMachine)
    (command,) = machine.commands()
    assert isinstance(command, RunStep)
    assert command.key == "2"
    assert machine.journal is not None
    assert machine.journal.patch("extra") is False


async def test_the_trio_driver_answers_patch_points_too() -> None:
    journal = recorded(3, 3)
    RAN.clear()
    got = await run(new_tool(3, 1), {}, ScriptedPeer(), journal=journal)
    assert got == [0, "old", 10, 20]
    assert RAN == []
    assert await run(new_tool(3, 1), {}, ScriptedPeer()) == [0, "new", 10, 20]


@pytest.mark.parametrize(
    "marker", [{"p": "x"}, {"p": "x", "v": 1}, {"p": 3, "v": True}]
)
def test_a_malformed_marker_is_refused(marker: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="malformed journal record"):
        Journal.from_records([marker], "c")
    with pytest.raises(ValueError, match="malformed journal"):
        Journal.from_json({"answers": {}, "notices": [], "patches": {"x": "yes"}})


def fan_tool(sizes: list[int], patch: tuple[int, int] | None) -> Any:
    """Children ``i`` run ``sizes[i]`` steps each; with ``patch=(child, at)``
    that child checks ``ctx.patched("c")`` before its step ``at``."""

    def child(index: int, size: int) -> Any:
        def run(ctx: Context) -> Generator[Any, Any, Any]:
            out: list[Any] = []
            for n in range(size + 1):
                if patch == (index, n):
                    taken = yield from ctx.patched("c")
                    out.append("new" if taken else "old")
                if n < size:
                    out.append((yield from ctx.step(work, index * 100 + n)))
            return out

        return run

    @tool(name="fan")
    def fan(ctx: Context) -> Op[Any]:
        children = [child(i, size) for i, size in enumerate(sizes)]
        return list((yield from ctx.branch(*children)))

    return fan


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_in_branches_patched_is_false_exactly_where_its_child_went_past_it(
    data: st.DataObject,
) -> None:
    sizes = data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=3))
    index = data.draw(st.integers(0, len(sizes) - 1))
    at = data.draw(st.integers(0, sizes[index]))
    done = data.draw(st.integers(0, sizes[index]))  # steps of that child kept
    full = Journal()
    run_scripted(fan_tool(sizes, None), {}, ScriptedPeer(), journal=full)
    prefix = f"0.{index}/"
    kept = [
        r
        for r in full.records()
        if not str(r.get("k", "")).startswith(prefix)
        or int(str(r["k"])[len(prefix) :]) < done
    ]
    journal = Journal.from_records(kept, "call")
    got = replay(fan_tool(sizes, (index, at)), journal)
    live = done <= at
    expected: list[Any] = [
        [i * 100 * 10 + n * 10 for n in range(size)] for i, size in enumerate(sizes)
    ]
    expected[index].insert(at, "new" if live else "old")
    assert got == expected
    assert sorted(RAN) == [index * 100 + n for n in range(done, sizes[index])]

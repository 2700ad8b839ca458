"""Generated tool programs, run by the real interpreter, agree with a reference.

Checked under every completion order Hypothesis cares to draw: results come back
in child order, every question is answered or withdrawn exactly once,
cancellation leaves nothing running and runs every ``finally``, and replaying a
journal reproduces the result with no questions asked.
"""

from __future__ import annotations

from typing import Any

import trio
import trio.testing
from hypothesis import given
from hypothesis import strategies as st

from runtime.lowlevel import Journal, run
from runtime.testing import HeldPeer, ScriptedPeer, run_scripted
from tests.programs import (
    Failed,
    Ok,
    Program,
    Trace,
    all_labels,
    answer_for,
    failure_label,
    program_tool,
    programs,
    reference,
    work_now,
    worked,
)


@st.composite
def cases(draw: st.DrawFn) -> tuple[Program, frozenset[str]]:
    program = draw(programs)
    labels = sorted(all_labels(program))
    failing = draw(st.sets(st.sampled_from(labels), max_size=2)) if labels else set()
    return program, frozenset(failing)


def outcome_of(call: Any) -> Ok | Failed | str:
    try:
        return Ok(call())
    except BaseException as error:
        return failure_label(error)


def agrees(actual: Ok | Failed | str, expected: Ok | Failed) -> bool:
    if isinstance(expected, Ok):
        return actual == expected
    return isinstance(actual, str) and actual in expected.candidates


@given(cases())
def test_scripted_runs_agree_with_the_reference(
    case: tuple[Program, frozenset[str]],
) -> None:
    program, failing = case
    trace = Trace()
    peer = ScriptedPeer(
        samples=lambda q: answer_for(q, failing),
        elicits={"k": lambda q: answer_for(q, failing)},
        steps={"work": work_now},
    )
    actual = outcome_of(lambda: run_scripted(program_tool(program, trace), {}, peer))
    assert agrees(actual, reference(program, failing))
    assert sorted(trace.started) == sorted(trace.finished)
    keys = [a.key for a in peer.asked]
    assert len(keys) == len(set(keys))


@given(cases())
def test_replay_from_the_journal_reproduces_the_result_silently(
    case: tuple[Program, frozenset[str]],
) -> None:
    program, failing = case
    peer = ScriptedPeer(
        samples=lambda q: answer_for(q, failing),
        elicits={"k": lambda q: answer_for(q, failing)},
        steps={"work": work_now},
    )
    journal = Journal()
    first = outcome_of(
        lambda: run_scripted(program_tool(program, Trace()), {}, peer, journal=journal)
    )
    answered = len(journal)
    replay_peer = ScriptedPeer(
        samples=lambda q: answer_for(q, failing),
        elicits={"k": lambda q: answer_for(q, failing)},
        steps={"work": work_now},
    )
    restored = Journal.from_json(journal.to_json())
    again = outcome_of(
        lambda: run_scripted(
            program_tool(program, Trace()), {}, replay_peer, journal=restored
        )
    )
    assert again == first
    # Only the questions that failed (never recorded) are asked again.
    assert restored.hits == answered
    assert all(a.key not in journal for a in replay_peer.asked)


@given(cases(), st.data())
def test_live_and_replayed_from_any_prefix_of_the_journal_agree(
    case: tuple[Program, frozenset[str]], data: st.DataObject
) -> None:
    program, failing = case

    def peer() -> ScriptedPeer:
        return ScriptedPeer(
            samples=lambda q: answer_for(q, failing),
            elicits={"k": lambda q: answer_for(q, failing)},
            steps={"work": work_now},
        )

    journal = Journal()
    live = outcome_of(
        lambda: run_scripted(
            program_tool(program, Trace()), {}, peer(), journal=journal
        )
    )
    recorded = journal.to_json()
    keys = list(recorded["answers"])
    cut = data.draw(st.integers(min_value=0, max_value=len(keys)), label="prefix")
    prefix = {**recorded, "answers": {k: recorded["answers"][k] for k in keys[:cut]}}
    worked.clear()
    replayed = outcome_of(
        lambda: run_scripted(
            program_tool(program, Trace()),
            {},
            peer(),
            journal=Journal.from_json(prefix),
        )
    )
    assert replayed == live
    # A step recorded in the prefix never runs again; the others run once.
    ran = [key.rsplit("@", 1)[1] for key in worked]
    assert len(ran) == len(set(ran))
    assert not set(ran) & set(keys[:cut])


async def _drive(
    program: Program, failing: frozenset[str], data: st.DataObject, *, may_cancel: bool
) -> tuple[Ok | Failed | str | None, HeldPeer, Trace]:
    trace = Trace()
    peer = HeldPeer()
    released: list[str] = []
    outcome: list[Ok | Failed | str] = []

    async def call() -> None:
        try:
            outcome.append(Ok(await run(program_tool(program, trace), {}, peer)))
        except Exception as error:
            outcome.append(failure_label(error))

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(call)
            while True:
                await trio.testing.wait_all_tasks_blocked()
                if outcome or not peer.held:
                    break
                if may_cancel and data.draw(st.booleans(), label="cancel now"):
                    nursery.cancel_scope.cancel()
                    break
                key = data.draw(st.sampled_from(sorted(peer.held)), label="release")
                released.append(key)
                peer.release(key, answer_for(peer.held[key], failing))
    asked = [a.key for a in peer.asked]
    assert len(asked) == len(set(asked)), "a question was asked twice"
    assert set(released).isdisjoint(peer.withdrawn), "answered and withdrawn"
    assert set(asked) == set(released) | set(peer.withdrawn) | set(peer.held)
    assert not peer.held, "a question is still held after the call ended"
    assert sorted(trace.started) == sorted(trace.finished), "a finally did not run"
    return (outcome[0] if outcome else None), peer, trace


@given(cases(), st.data())
async def test_any_completion_order_gives_the_reference_result(
    case: tuple[Program, frozenset[str]], data: st.DataObject
) -> None:
    program, failing = case
    actual, _peer, _trace = await _drive(program, failing, data, may_cancel=False)
    assert actual is not None
    assert agrees(actual, reference(program, failing))


@given(cases(), st.data())
async def test_cancelling_at_any_point_leaves_nothing_running(
    case: tuple[Program, frozenset[str]], data: st.DataObject
) -> None:
    program, failing = case
    actual, peer, trace = await _drive(program, failing, data, may_cancel=True)
    if actual is None:  # cancelled: every generator closed, every question settled
        assert trace.started == [] or sorted(trace.started) == sorted(trace.finished)
        assert not peer.held

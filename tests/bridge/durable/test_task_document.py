"""The task document's changes (pure): an ended task stays as it ended, answers
leave ``inputRequests`` as they arrive, a lease is held by one owner and keeps
a running task alive, and every status moves through the one table."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from bridge.durable.tasks import TERMINAL, TRANSITIONS, TaskDoc, TaskStatus
from bridge.server.tasks import document as doc

KEYS = ["a", "b", "c"]


def _new() -> TaskDoc:
    return TaskDoc.new(
        tool="t",
        arguments={"big": "x" * 100},
        capabilities={},
        ttl_ms=1000,
        poll_ms=100,
        principal=None,
        now=1.0,
    )


_op = st.one_of(
    st.tuples(st.just("park"), st.sets(st.sampled_from(KEYS))),
    st.tuples(st.just("deliver"), st.sets(st.sampled_from([*KEYS, "zz"]))),
    st.tuples(st.just("cancel"), st.none()),
    st.tuples(st.just("complete"), st.none()),
    st.tuples(st.just("fail"), st.none()),
    st.tuples(st.just("claim"), st.sampled_from(["one", "two"])),
    st.tuples(st.just("say"), st.text(max_size=3)),
)


def _apply(task: TaskDoc, op: tuple[str, Any], now: float) -> TaskDoc:
    kind, arg = op
    if kind == "park":
        requests = {k: {"method": "elicitation/create"} for k in arg}
        new = task.park(task.responses, requests, {}, now)
    elif kind == "deliver":
        new = task.deliver({k: {"action": "accept"} for k in arg}, now)
    elif kind == "cancel":
        new = task.cancel(now)
    elif kind == "complete":
        new = task.finish(result={"content": []}, now=now)
    elif kind == "claim":
        new = task.claim(arg, 10.0, now)
    elif kind == "say":
        new = task.say(arg, now)
    else:
        new = task.finish(error={"code": -1, "message": "x"}, now=now)
    return task if new is None else new


@given(st.lists(_op, max_size=12))
def test_an_ended_task_never_changes_again(ops: list[tuple[str, Any]]) -> None:
    task = _new()
    ended: TaskDoc | None = None
    for number, op in enumerate(ops, start=2):
        task = _apply(task, op, float(number))
        if ended is not None:
            assert task == ended
        elif task.status in TERMINAL:
            ended = task
            assert task.lease is None
            assert task.input_requests == task.responses == {}


@given(st.lists(_op, max_size=12))
def test_every_status_change_is_in_the_transition_table(
    ops: list[tuple[str, Any]],
) -> None:
    task = _new()
    for number, op in enumerate(ops, start=2):
        new = _apply(task, op, float(number))
        if new.status is not task.status:
            assert new.status in {
                to for (was, _), to in TRANSITIONS.items() if was is task.status
            }
        task = new


@given(st.lists(_op, max_size=12))
def test_a_waiting_task_waits_on_exactly_its_unanswered_questions(
    ops: list[tuple[str, Any]],
) -> None:
    task = _new()
    for number, op in enumerate(ops, start=2):
        task = _apply(task, op, float(number))
        waiting = task.input_requests
        if task.status is TaskStatus.INPUT_REQUIRED:
            assert waiting
            assert not set(waiting) & set(task.responses)
        elif task.status in TERMINAL:
            assert waiting == {}
        shown = doc.detailed("id", task)
        assert ("inputRequests" in shown) == (task.status is TaskStatus.INPUT_REQUIRED)
        assert TaskDoc.from_json(task.to_json()) == task


def test_a_lease_is_held_by_one_owner_until_it_runs_out() -> None:
    task = _new()
    held = task.claim("one", 10.0, now=100.0)
    assert held is not None
    assert held.claim("two", 10.0, now=105.0) is None
    assert held.claim("one", 10.0, now=105.0) is not None  # renewed
    taken = held.claim("two", 10.0, now=111.0)
    assert taken is not None
    assert taken.lease is not None
    assert taken.lease.owner == "two"
    ended = taken.finish(result={}, now=112.0)
    assert ended is not None
    assert ended.claim("three", 10.0, now=200.0) is None


def test_a_renewed_lease_keeps_a_running_task_from_expiring() -> None:
    task = _new()  # ttl 1 s, last changed at 1.0
    assert task.expires_at == 2.0
    held = task.claim("runner", 30.0, now=50.0)
    assert held is not None
    assert held.expires_at == 81.0  # a lease's end, plus the TTL
    assert doc.detailed("id", held)["lastUpdatedAt"] == doc.iso(1.0)

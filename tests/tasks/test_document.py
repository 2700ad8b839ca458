"""The task document's changes (pure): an ended task stays as it ended, answers
leave ``inputRequests`` as they arrive, and a lease is held by one owner."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from bridge.server.tasks import document as doc

KEYS = ["a", "b", "c"]


def _new() -> dict[str, Any]:
    return doc.new_document(
        tool="t",
        arguments={},
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
)


def _apply(task: dict[str, Any], op: tuple[str, Any], now: float) -> dict[str, Any]:
    kind, arg = op
    if kind == "park":
        requests = {k: {"method": "elicitation/create"} for k in arg}
        new = doc.park(task, doc.take_responses(task), requests, {}, now)
    elif kind == "deliver":
        new = doc.deliver(task, {k: {"action": "accept"} for k in arg}, now)
    elif kind == "cancel":
        new = doc.cancel(task, now)
    elif kind == "complete":
        new = doc.finish(task, result={"content": []}, now=now)
    else:
        new = doc.finish(task, error={"code": -1, "message": "x"}, now=now)
    return task if new is None else new


@given(st.lists(_op, max_size=12))
def test_an_ended_task_never_changes_again(ops: list[tuple[str, Any]]) -> None:
    task = _new()
    ended: dict[str, Any] | None = None
    for number, op in enumerate(ops, start=2):
        task = _apply(task, op, float(number))
        if ended is not None:
            assert task == ended
        elif task["status"] in doc.TERMINAL:
            ended = task


@given(st.lists(_op, max_size=12))
def test_a_waiting_task_waits_on_exactly_its_unanswered_questions(
    ops: list[tuple[str, Any]],
) -> None:
    task = _new()
    for number, op in enumerate(ops, start=2):
        task = _apply(task, op, float(number))
        waiting = task["inputRequests"]
        if task["status"] == "input_required":
            assert waiting
            assert not set(waiting) & set(task["responses"])
        elif task["status"] in doc.TERMINAL:
            assert waiting == {}
        shown = doc.detailed("id", task)
        assert ("inputRequests" in shown) == (task["status"] == "input_required")


def test_a_lease_is_held_by_one_owner_until_it_runs_out() -> None:
    task = _new()
    held = doc.claim(task, "one", 10.0, now=100.0)
    assert held is not None
    assert doc.claim(held, "two", 10.0, now=105.0) is None
    assert doc.claim(held, "one", 10.0, now=105.0) is not None  # renewed
    taken = doc.claim(held, "two", 10.0, now=111.0)
    assert taken is not None
    assert taken["lease"]["owner"] == "two"
    ended = doc.finish(taken, result={}, now=112.0)
    assert ended is not None
    assert doc.claim(ended, "three", 10.0, now=200.0) is None

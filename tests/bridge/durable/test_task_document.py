"""The task document's changes (pure): an ended task stays as it ended, answers
leave ``inputRequests`` as they arrive, a lease is held by one owner and keeps
a running task alive, and every status moves through the one table."""

from __future__ import annotations

from typing import Any

import pytest
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
    st.tuples(st.just("answered_here"), st.sets(st.sampled_from([*KEYS, "zz"]))),
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
    elif kind == "answered_here":  # by the server's model, which is named
        answers = {k: {"role": "assistant"} for k in arg}
        new = task.answered_here(answers, [f"model-{k}" for k in sorted(arg)], now)
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


def test_a_sleeping_task_waits_until_its_wake_up_then_goes_on() -> None:
    """A task parked with a wake-up time (``ctx.sleep``) waits, as one
    parked on a question does, until then: it gives its lease up, stays
    ``working``, is kept past its TTL until it wakes, and round-trips JSON."""
    claimed = _new().claim("one", 10.0, 2.0)
    assert claimed is not None
    asleep = claimed.park({}, {}, {}, 3.0, wake_at=100.0)
    assert asleep is not None
    assert asleep.status is TaskStatus.WORKING
    assert asleep.waits(50.0)
    assert asleep.sleeping(50.0)
    assert not asleep.waits(100.0)  # it is time: a runner goes on
    assert not asleep.sleeping(100.0)
    assert asleep.release("one", 100.0) is None
    released = asleep.release("one", 50.0)
    assert released is not None
    assert released.lease is None
    assert released.expires_at == 100.0 + 1.0  # a TTL after it wakes
    assert TaskDoc.from_json(released.to_json()) == released
    # An answer to a question it also asks means it goes on at once.
    asking = claimed.park({}, {"a": {"method": "x"}}, {}, 3.0, wake_at=100.0)
    assert asking is not None
    assert asking.waits(50.0)
    answered = asking.deliver({"a": {"action": "accept"}}, 4.0)
    assert answered is not None
    assert not answered.waits(50.0)
    # Its end forgets the wake-up time.
    ended = released.cancel(60.0)
    assert ended is not None
    assert ended.wake_at is None
    assert not ended.waits(50.0)


def test_the_models_that_answered_here_are_kept_in_order_and_stored() -> None:
    task = _new().park({}, {"a": {}, "b": {}, "c": {}}, {}, 2.0)
    first = task.answered_here({"a": {}}, ["m1", "m2"], 3.0)
    assert first is not None
    second = first.answered_here({"b": {}, "zz": {}}, ["m2", "m3"], 4.0)
    assert second is not None
    assert second.server_models == ("m1", "m2", "m3")
    assert second.input_requests == {"c": {}}  # answered ones leave the list
    assert second.answered_here({"zz": {}}, ["m4"], 5.0) is None  # nothing asked
    assert TaskDoc.from_json(second.to_json()) == second


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("ttlMs", 10**400),  # valid JSON: expires_at was an OverflowError
        ("ttlMs", 0),
        ("pollIntervalMs", -5),
        ("created", float("nan")),  # iso() failed on it in tasks/get
        ("updated", float("inf")),
        ("wakeAt", float("-inf")),
        ("created", 253402300800.0),  # year 10000: iso() failed in tasks/get
        ("updated", -1e20),
    ],
)
def test_a_stranger_s_task_document_of_numbers_out_of_range_is_malformed(
    field: str, value: Any
) -> None:
    # Recovery's scan passes over a malformed document; an OverflowError
    # went through it, and took the server down at every start.
    data = {**_new().to_json(), field: value}
    with pytest.raises(ValueError, match=r"out of range|1970 to 9999|not of its type"):
        TaskDoc.from_json(data)
    assert TaskDoc.from_json(_new().to_json()) == _new()


_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats()  # NaN and infinities: Python's reader takes them
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
_FIELDS = [*_new().to_json(), "lease", "wakeAt", "caller", "result", "error",
           "principal", "serverModels"]  # fmt: skip


@given(st.dictionaries(st.sampled_from(_FIELDS), _json | st.just(None), max_size=4))
def test_any_json_in_any_field_reads_as_a_task_or_as_one_value_error(
    changes: dict[str, Any],
) -> None:
    # A stranger's row reaches every reader (tasks/get, the runner, recovery):
    # any other exception was an internal error with a traceback, or worse.
    data = {**_new().to_json(), **changes}
    read: TaskDoc | None = None
    why = ""
    try:
        read = TaskDoc.from_json(data)
    except ValueError as exc:
        why = str(exc)
    if read is None:
        assert len(why) < 80, why  # a few words naming the field...
        for value in changes.values():  # ...never the stranger's text
            if isinstance(value, str) and len(value) > 3:
                assert value not in why
        return
    assert TaskDoc.from_json(read.to_json()) == read  # what it reads, it writes
    doc.detailed("t", read)  # and tasks/get shows it
    doc.caller(read)

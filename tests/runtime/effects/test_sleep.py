"""``ctx.sleep``: the effect a tool yields, and a sleep's life in run_scripted.

The machine's rules for a sleep (its deadline recorded, a restart waiting
only for the rest) are :mod:`tests.runtime.call.test_machine`'s; here, what a
tool author writes and what ``runtime.testing`` does with it.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable

import pytest

from runtime import Context, Limits, Op, tool
from runtime.lowlevel import BranchTimeout, InvalidEffect, Journal, Sleep
from runtime.testing import ScriptedPeer, run_scripted

UTC = datetime.UTC


def test_a_sleep_is_a_duration_or_a_deadline_and_never_both() -> None:
    ctx = Context()
    assert ctx.sleep(90) == Sleep(seconds=90)
    assert ctx.sleep(datetime.timedelta(minutes=2)) == Sleep(seconds=120.0)
    at = datetime.datetime(2030, 1, 1, tzinfo=UTC)
    assert ctx.sleep(until=at) == Sleep(until=at.timestamp())
    with pytest.raises(InvalidEffect, match="exactly one"):
        ctx.sleep()
    with pytest.raises(InvalidEffect, match="exactly one"):
        ctx.sleep(5, until=at)
    with pytest.raises(InvalidEffect, match="timezone-aware"):
        ctx.sleep(until=datetime.datetime(2030, 1, 1))
    with pytest.raises(InvalidEffect, match=">= 0"):
        ctx.sleep(-1)
    with pytest.raises(InvalidEffect, match="finite"):
        ctx.sleep(float("inf"))


def test_a_sleep_past_the_year_9999_or_of_no_number_is_one_clear_error() -> None:
    # A deadline past what a datetime holds broke the stores: Redis refused
    # its expiry (an integer out of range), and the server running the task
    # went down. Bounded where it is asked, it is the tool's own error.
    ctx = Context()
    with pytest.raises(InvalidEffect, match="year 9999"):
        ctx.sleep(1e300)
    with pytest.raises(InvalidEffect, match="year 9999"):
        Sleep(until=1e300)
    with pytest.raises(InvalidEffect, match="year 9999"):
        ctx.sleep(10**400)  # an int param from JSON: no float holds it
    latest = datetime.datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)
    assert ctx.sleep(until=latest) == Sleep(until=latest.timestamp())
    ages = ctx.sleep(253_000_000_000)  # allowed, but from 2026 it ends past 9999
    assert ages.deadline(time.time()) == latest.timestamp()
    with pytest.raises(InvalidEffect, match="a number of seconds, got True"):
        ctx.sleep(True)  # pyright: ignore[reportArgumentType]
    with pytest.raises(InvalidEffect, match="a number of seconds, got '5'"):
        ctx.sleep("5")  # pyright: ignore[reportArgumentType]
    with pytest.raises(InvalidEffect, match="`until` is a datetime, got 'x'"):
        ctx.sleep(until="x")  # pyright: ignore[reportArgumentType]
    with pytest.raises(InvalidEffect, match="finite"):
        ctx.sleep(float("nan"))


def test_a_sleeps_deadline_is_its_until_or_now_plus_its_seconds() -> None:
    assert Sleep(seconds=5).deadline(100.0) == 105.0
    assert Sleep(until=50.0).deadline(100.0) == 50.0
    # What pins a recorded answer: what is asked, not when.
    assert Sleep(seconds=5).digest() != Sleep(seconds=6).digest()
    assert Sleep(seconds=5).digest() != Sleep(until=5.0).digest()


@tool
def reminder(hours: float, ctx: Context) -> Op[float]:
    """Wait ``hours``, then say how long the clock moved."""
    began = yield from ctx.now()
    yield from ctx.sleep(datetime.timedelta(hours=hours))
    ended = yield from ctx.now()
    return ended - began


def test_run_scripted_does_not_wait_and_its_clock_jumps_the_sleep() -> None:
    started = time.monotonic()
    journal = Journal()
    assert run_scripted(reminder, {"hours": 1}, ScriptedPeer(), journal=journal) == 3600
    assert time.monotonic() - started < 1.0
    assert journal.deadline("1") == 3600.0  # the clock read 0.0 when it slept
    assert journal.entry("1") is not None  # and the sleep's end is journaled


def test_run_scripted_replays_a_sleep_that_ended_without_waiting_again() -> None:
    journal = Journal()
    run_scripted(reminder, {"hours": 1}, ScriptedPeer(), journal=journal)
    again = Journal.from_json(journal.to_json())
    assert run_scripted(reminder, {"hours": 1}, ScriptedPeer(), journal=again) == 3600
    assert again.hits == 3  # the clock twice, and the sleep: nothing anew


@tool
def slow_children(ctx: Context) -> Op[str]:
    def child(seconds: float) -> Callable[[Context], Op[float]]:
        def body(ctx: Context) -> Op[float]:
            yield from ctx.sleep(seconds)
            return seconds

        return body

    try:
        yield from ctx.branch(child(5), child(50), limits=Limits(timeout=10))
    except BranchTimeout:
        return "timed out"
    return "done"


def test_a_branch_whose_children_sleep_past_its_limit_times_out() -> None:
    """The clock jumps to the earliest timer: the first sleep ends, then the
    branch's limit passes before the second sleep does."""
    assert run_scripted(slow_children, {}, ScriptedPeer()) == "timed out"

"""The trio driver: real concurrency, cancellation, time limits."""

from __future__ import annotations

import random

import pytest
import trio
import trio.testing

from runtime import Context, Limits, Op, tool
from runtime.lowlevel import BranchTimeout, Journal, PeerError, run
from runtime.testing import HeldPeer, ScriptedPeer, text


def echo(ctx: Context, prompt: str) -> Op[str]:
    reply = yield from ctx.sample(prompt)
    return reply.text


@tool
def fan(ctx: Context) -> Op[tuple[str, str, str]]:
    return (
        yield from ctx.branch(
            lambda c: echo(c, "a"), lambda c: echo(c, "b"), lambda c: echo(c, "c")
        )
    )


async def test_sibling_samples_are_in_flight_at_the_same_time() -> None:
    peer = HeldPeer()
    async with trio.open_nursery() as nursery:
        results: list[object] = []

        async def call() -> None:
            results.append(await run(fan, {}, peer))

        nursery.start_soon(call)
        with trio.fail_after(5):
            await peer.wait_pending(3)
        assert sorted(peer.held) == ["0.0/0", "0.1/0", "0.2/0"]
        for key, answer in (("0.2/0", "C"), ("0.0/0", "A"), ("0.1/0", "B")):
            peer.release(key, text(answer))
    assert results == [("A", "B", "C")]


async def test_a_failing_sibling_withdraws_the_others_pending_questions() -> None:
    peer = HeldPeer()
    async with trio.open_nursery() as nursery:
        errors: list[BaseException] = []

        async def call() -> None:
            try:
                await run(fan, {}, peer)
            except ExceptionGroup as group:
                errors.append(group)

        nursery.start_soon(call)
        with trio.fail_after(5):
            await peer.wait_pending(3)
        peer.release("0.1/0", PeerError(-32603, "provider down"))
    (group,) = errors
    assert isinstance(group, ExceptionGroup)
    assert group.subgroup(PeerError) is not None
    assert sorted(peer.withdrawn) == ["0.0/0", "0.2/0"]


async def test_cancelling_the_call_closes_every_generator() -> None:
    finalized: list[str] = []

    def child(ctx: Context, name: str) -> Op[str]:
        try:
            return (yield from echo(ctx, name))
        finally:
            finalized.append(name)

    @tool
    def guarded(ctx: Context) -> Op[object]:
        try:
            return (
                yield from ctx.branch(lambda c: child(c, "a"), lambda c: child(c, "b"))
            )
        finally:
            finalized.append("root")

    peer = HeldPeer()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(run, guarded, {}, peer)
        with trio.fail_after(5):
            await peer.wait_pending(2)
        nursery.cancel_scope.cancel()
    assert finalized == ["b", "a", "root"]
    assert sorted(peer.withdrawn) == ["0.0/0", "0.1/0"]


async def test_branch_time_limit_cancels_the_branch(
    autojump_clock: trio.testing.MockClock,
) -> None:
    @tool
    def slow(ctx: Context) -> Op[str]:
        try:
            yield from ctx.branch(lambda c: echo(c, "a"), limits=Limits(timeout=30))
        except BranchTimeout as timeout:
            return f"timed out: {timeout.branch_key}"
        return "finished"

    peer = HeldPeer()  # never answers
    start = trio.current_time()
    assert await run(slow, {}, peer) == "timed out: 0"
    assert trio.current_time() - start == pytest.approx(30)
    assert peer.withdrawn == ["0.0/0"]


async def test_a_branch_that_finishes_in_time_stops_its_timer(
    autojump_clock: trio.testing.MockClock,
) -> None:
    @tool
    def quick(ctx: Context) -> Op[str]:
        (a,) = yield from ctx.branch(lambda c: echo(c, "a"), limits=Limits(timeout=30))
        yield from ctx.sample("after")
        return a

    assert await run(quick, {}, ScriptedPeer(samples=[text("x"), text("y")])) == "x"


@tool
def napping(ctx: Context) -> Op[str]:
    yield from ctx.sleep(10)
    return "awake"


async def test_the_driver_sleeps_for_real_until_the_deadline(
    autojump_clock: trio.testing.MockClock,
) -> None:
    start = trio.current_time()
    journal = Journal()
    assert await run(napping, {}, ScriptedPeer(), clock=lambda: 1000.0, journal=journal)
    assert trio.current_time() - start == pytest.approx(10)
    assert journal.deadline("0") == 1010.0


async def test_a_restored_sleep_waits_only_for_what_is_left(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The deadline recorded by an earlier life (1010) stands: at 1007 the
    driver waits 3 s, not the 10 the tool asks."""
    journal = Journal()
    journal.set_deadline("0", 1010.0)
    start = trio.current_time()
    assert await run(napping, {}, ScriptedPeer(), clock=lambda: 1007.0, journal=journal)
    assert trio.current_time() - start == pytest.approx(3)


async def test_local_questions_use_the_given_clock() -> None:
    @tool
    def when(ctx: Context) -> Op[float]:
        return (yield from ctx.now())

    assert await run(when, {}, ScriptedPeer(), clock=lambda: 1234.5) == 1234.5


async def test_randomness_comes_from_the_given_rng() -> None:
    @tool
    def roll(ctx: Context) -> Op[float]:
        return (yield from ctx.random())

    expected = random.Random(7).getrandbits(53) / (1 << 53)
    assert await run(roll, {}, ScriptedPeer(), rng=random.Random(7)) == expected


async def test_tool_errors_propagate_from_run() -> None:
    @tool
    def broken(ctx: Context) -> Op[None]:
        yield from ctx.sample("x")
        raise RuntimeError("tool bug")

    with pytest.raises(RuntimeError, match="tool bug"):
        await run(broken, {}, ScriptedPeer(samples=[text("ok")]))


@tool
def ask_once(ctx: Context) -> Op[str]:
    return (yield from echo(ctx, "a"))


async def test_a_durable_call_whose_last_write_fails_raises_the_stores_error() -> None:
    """The answer that ends the call cannot be written: the call must not
    return as if it were (a replay could not give it again)."""
    written: list[object] = []

    async def log(records: object) -> None:
        written.append(records)
        raise OSError("the store is full")

    with pytest.raises(OSError, match="the store is full"):
        await run(ask_once, {}, ScriptedPeer(samples=[text("A")]), log=log)
    assert len(written) == 1

"""A store that stops answering fails the request with -32603 within the store
timeout, and the same state goes on once the store is back.

What a network partition without a reset looks like from our side: the
store's kernel still acknowledges what we send, and nothing comes back. For
PostgreSQL and Redis that is SIGSTOP on the server's processes (the postmaster
and every backend); for SQLite, another process holding the database's write
lock. Each real store is stopped while a 2026-07-28 round is under way (in a
step, after the round claimed its state), so the round's next write hangs.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
from pydantic import BaseModel

from bridge.server import Server
from bridge.server.limits import ServerLimits
from bridge.stores import StoreUnavailable, open_store
from runtime import Context, Op, tool
from runtime.errors import PeerError
from tests.bridge.wire import modern_meta, wire_peer
from tests.store_servers import (
    PostgresServer,
    RedisServer,
    postgres_server,
    redis_server,
    sqlite_locked,
)

TIMEOUT = 1.5  # --store-timeout for these tests
SLACK = 2.0  # what the machine may add (it is shared)
STEP = 0.5  # how long the step the store is stopped in still runs
CLAIM = 2.0  # --round-claim-seconds: when the interrupted round may be taken over
WATCHDOG = 30.0  # a store never resumed later than this (a test must not hang)


class Note(BaseModel):
    text: str


class _Step:
    """Tells the test when the slow step began (one test at a time)."""

    started: trio.Event | None = None


async def slow() -> str:
    if _Step.started is not None:
        _Step.started.set()
    await trio.sleep(STEP)
    return "slept"


def after() -> str:
    return "then"


@tool(name="survey", elicits={"note": Note}, version="1")
def survey(ctx: Context) -> Op[str]:
    first = yield from ctx.elicit("note", "First?")
    # The round claims its state before this step; the store stops during
    # it, so the write that hangs is the step's result, recorded before the
    # next step runs (a write that may still land once the store is back,
    # which the retry then reuses).
    slept = yield from ctx.step_as("slow")(slow)
    then = yield from ctx.step_as("after")(after)
    second = yield from ctx.elicit("note", "Second?")
    texts = [a.content.text if a.content else "-" for a in (first, second)]
    return f"{texts[0]} {slept} {then} {texts[1]}"


def _answer(text: str) -> dict[str, Any]:
    return {"note": {"action": "accept", "content": {"text": text}}}


async def _call(
    server: Server, state: str | None = None, text: str | None = None
) -> Any:
    params: dict[str, Any] = {"name": "survey", "arguments": {}, "_meta": modern_meta()}
    if state is not None:
        params["requestState"] = state
    if text is not None:
        params["inputResponses"] = _answer(text)
    async with wire_peer(server) as peer:
        try:
            return await peer.request("tools/call", params)
        except PeerError as exc:
            return exc


@contextlib.contextmanager
def _signalled(pids: list[int]) -> Iterator[None]:
    """SIGSTOP ``pids`` for the block; SIGCONT after it, or after
    :data:`WATCHDOG` seconds whatever happens (so a store call that never
    times out shows as a failed assertion, not a hung test)."""

    def resume() -> None:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)

    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    watchdog = threading.Timer(WATCHDOG, resume)
    watchdog.start()
    try:
        yield
    finally:
        watchdog.cancel()
        resume()


Hang = Callable[[], contextlib.AbstractContextManager[None]]


async def _a_round_fails_within_the_timeout_then_goes_on(url: str, hang: Hang) -> None:
    store = open_store(url)
    limits = ServerLimits(store_timeout=TIMEOUT, round_claim_seconds=CLAIM)
    server = Server(
        [survey], state_keys=[secrets.token_bytes(32)], store=store, limits=limits
    )
    first = await _call(server)
    assert first["resultType"] == "input_required", first
    state = first["requestState"]
    _Step.started = trio.Event()
    outcome: list[Any] = []
    try:
        async with trio.open_nursery() as nursery:

            async def second_round() -> None:
                outcome.append(await _call(server, state, "a"))

            nursery.start_soon(second_round)
            with trio.fail_after(30):
                await _Step.started.wait()
            with hang():
                began = trio.current_time()
                with trio.fail_after(WATCHDOG + 10):
                    while not outcome:
                        await trio.sleep(0.01)
                took = trio.current_time() - began
        failed = outcome[0]
        assert isinstance(failed, PeerError), failed
        assert (failed.code, failed.message) == (
            -32603,
            "Internal error: the server's store failed; try again",
        )
        assert took < STEP + TIMEOUT + SLACK, took

        # The store is back: the same state goes on (once the interrupted
        # round's claim has run out, as docs/durable.md says).
        with trio.fail_after(CLAIM + 30):
            while True:
                retried = await _call(server, state, "a")
                if not (
                    isinstance(retried, PeerError)
                    and retried.data == {"reason": "request_state_used"}
                ):
                    break
                await trio.sleep(0.2)
        assert not isinstance(retried, PeerError), retried
        assert retried["resultType"] == "input_required", retried
        done = await _call(server, retried["requestState"], "b")
        assert done["content"][0]["text"] == "a slept then b", done
    finally:
        _Step.started = None
        assert server.store is not None
        await server.store.aclose()


@pytest.fixture(scope="module")
def stoppable_postgres() -> Iterator[PostgresServer]:
    """A PostgreSQL of this module's own: stopping it stops no other test."""
    with postgres_server() as server:
        yield server


@pytest.fixture(scope="module")
def stoppable_redis() -> Iterator[RedisServer]:
    with redis_server() as server:
        yield server


async def test_a_stopped_postgres_fails_the_round_within_the_timeout(
    stoppable_postgres: PostgresServer,
) -> None:
    server = stoppable_postgres
    await _a_round_fails_within_the_timeout_then_goes_on(
        server.url, lambda: _signalled(server.pids())
    )


async def test_a_stopped_redis_fails_the_round_within_the_timeout(
    stoppable_redis: RedisServer,
) -> None:
    server = stoppable_redis
    await _a_round_fails_within_the_timeout_then_goes_on(
        server.url, lambda: _signalled(server.pids())
    )


async def test_a_locked_sqlite_fails_the_round_within_the_timeout(
    tmp_path: Path,
) -> None:
    path = tmp_path / "store.sqlite3"
    await _a_round_fails_within_the_timeout_then_goes_on(
        f"sqlite:{path}", lambda: sqlite_locked(path)
    )


def test_a_stopped_redis_fails_a_call_after_the_socket_timeout(
    stoppable_redis: RedisServer,
) -> None:
    # The backend alone, with no trio deadline above it: its own timeout.
    store = open_store(stoppable_redis.url, timeout=0.5)
    try:
        with _signalled(stoppable_redis.pids()):
            began = time.monotonic()
            with pytest.raises(StoreUnavailable, match="Timeout"):
                store.get("task", "t")
            assert time.monotonic() - began < 0.5 + SLACK
        assert store.get("task", "t") is None
    finally:
        store.close()

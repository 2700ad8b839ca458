"""A durable 2025-11-25 session whose store stops answering: one deadline, one error.

A real Redis is stopped (SIGSTOP: what a partition that resets nothing looks
like from our side), or another process holds the SQLite file's write lock
(a backup, a stuck writer), at each point a 2025-11-25 request needs the
store: its ``initialize`` (the session's document), a ``tools/call`` (whether the
request started a call before), and a call under way (its journal). Each
store operation has ``--store-timeout``; a request makes several in turn,
and each waited its own deadline: a ``yieldmcp call --era legacy`` took 35 s
to fail, with a tool's failure for an error. Now the request fails within
about one deadline with the 2026-07-28 path's error, and once the store is
back (its beat finds it) calls go on.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest
import trio

from bridge.server import Server
from bridge.server.limits import ServerLimits
from bridge.stores import open_store
from runtime import Context, Op, tool
from tests.bridge.http_kit import Raw, SseReader, served
from tests.store_servers import RedisServer, redis_server, sqlite_locked

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

TIMEOUT = 1.5  # --store-timeout for these tests
SLACK = 1.2  # what the machine may add (it is shared): less than a deadline
STEP = 0.5  # how long the step the store is stopped in still runs
WATCHDOG = 30.0  # a store never resumed later than this (a test must not hang)
STORE_FAILED = {
    "code": -32603,
    "message": "Internal error: the server's store failed; try again",
}


class _Step:
    """Tells the test when the slow step began (one test at a time)."""

    started: trio.Event | None = None


async def _slow() -> str:
    if _Step.started is not None:
        _Step.started.set()
    await trio.sleep(STEP)
    return "slept"


def _then() -> str:
    return "then"


@tool(name="steps", version="1")
def steps(ctx: Context) -> Op[str]:
    slept = yield from ctx.step_as("slow")(_slow)
    then = yield from ctx.step_as("then")(_then)
    return f"{slept} {then}"


@pytest.fixture(scope="module")
def stoppable_redis() -> Iterator[RedisServer]:
    """A Redis of this module's own: stopping it stops no other test."""
    with redis_server() as server:
        yield server


@attrs.frozen
class Stoppable:
    """A store, and how to make it stop answering for a block."""

    url: str
    stopped: Callable[[], contextlib.AbstractContextManager[None]]


@pytest.fixture(params=["redis", "sqlite"])
def stoppable(
    request: pytest.FixtureRequest, stoppable_redis: RedisServer, tmp_path: Path
) -> Stoppable:
    if request.param == "redis":
        return Stoppable(stoppable_redis.url, lambda: _stopped(stoppable_redis))
    path = tmp_path / "store.sqlite3"
    return Stoppable(f"sqlite:{path}", lambda: sqlite_locked(path, watchdog=WATCHDOG))


@contextlib.contextmanager
def _stopped(server: RedisServer) -> Iterator[None]:
    """SIGSTOP the store for the block; SIGCONT after it, or after
    :data:`WATCHDOG` seconds whatever happens."""

    def resume() -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(server.pid, signal.SIGCONT)

    os.kill(server.pid, signal.SIGSTOP)
    watchdog = threading.Timer(WATCHDOG, resume)
    watchdog.start()
    try:
        yield
    finally:
        watchdog.cancel()
        resume()


@contextlib.asynccontextmanager
async def _client(url: str) -> AsyncIterator[Raw]:
    store = open_store(url)
    limits = ServerLimits(store_timeout=TIMEOUT)
    served_server = Server([steps], store=store, limits=limits)
    try:
        async with (
            served(served_server) as url,
            httpx.AsyncClient(timeout=WATCHDOG + 10) as http,
        ):
            yield Raw(http, url)
    finally:
        await store_close(served_server)


async def store_close(server: Server) -> None:
    assert server.store is not None
    await server.store.aclose()


async def _initialize(raw: Raw) -> httpx.Response:
    params = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    }
    return await raw.post(raw.request("init", "initialize", params))


async def _answer(raw: Raw, request_id: Any) -> dict[str, Any]:
    """The response to ``tools/call`` ``request_id`` (plain JSON or SSE)."""
    call = {"name": "steps", "arguments": {}}
    async with raw.stream("POST", raw.request(request_id, "tools/call", call)) as (
        response,
        reader,
    ):
        assert response.status_code == 200
        if not response.headers["content-type"].startswith("text/event-stream"):
            await response.aread()
            return response.json()
        return await _final(reader)


async def _final(reader: SseReader) -> dict[str, Any]:
    while (event := await reader.next()) is not None:
        if event.data:
            message: dict[str, Any] = json.loads(event.data)
            if "id" in message and "method" not in message:
                return message
    raise AssertionError("the stream ended without the response")


async def test_an_initialize_the_store_fails_is_refused_and_leaves_no_session(
    stoppable: Stoppable,
) -> None:
    # It was answered (after a deadline) with a session that lived in this
    # process only, unknown to the others.
    async with _client(stoppable.url) as raw:
        with stoppable.stopped():
            began = trio.current_time()
            with trio.fail_after(WATCHDOG):
                refused = await _initialize(raw)
            took = trio.current_time() - began
        assert refused.status_code == 200
        assert refused.json()["error"] == STORE_FAILED
        assert "mcp-session-id" not in refused.headers
        assert took < TIMEOUT + SLACK, took


async def test_a_call_the_store_fails_is_refused_within_one_deadline(
    stoppable: Stoppable,
) -> None:
    # Whether the request started a call before, its document, its response:
    # each waited its own deadline (3 of them), and the client got a tool's
    # failure ("The server's store failed (error id ...)").
    async with _client(stoppable.url) as raw:
        with trio.fail_after(WATCHDOG):
            await raw.initialize(capabilities={})
            assert (await _answer(raw, 1))["result"]["content"][0]["text"] == (
                "slept then"
            )
        with stoppable.stopped():
            began = trio.current_time()
            with trio.fail_after(WATCHDOG):
                refused = await _answer(raw, 2)
                # The store is known away now: what follows does not wait.
                deleted = await raw.http.delete(raw.url, headers=raw.headers())
            took = trio.current_time() - began
        assert refused["error"] == STORE_FAILED
        assert deleted.status_code == 200
        assert took < TIMEOUT + SLACK, took


async def test_a_call_whose_record_the_store_fails_ends_within_one_deadline(
    stoppable: Stoppable,
) -> None:
    # The step's result could not be written: the call ended with a tool's
    # failure after that deadline and another for writing its response.
    _Step.started = trio.Event()
    try:
        async with _client(stoppable.url) as raw:
            with trio.fail_after(WATCHDOG):
                await raw.initialize(capabilities={})
            answers: list[dict[str, Any]] = []
            async with trio.open_nursery() as nursery:

                async def call() -> None:
                    answers.append(await _answer(raw, 1))

                nursery.start_soon(call)
                with trio.fail_after(WATCHDOG):
                    await _Step.started.wait()
                with stoppable.stopped():
                    began = trio.current_time()
                    with trio.fail_after(WATCHDOG):
                        while not answers:
                            await trio.sleep(0.01)
                    took = trio.current_time() - began
    finally:
        _Step.started = None
    assert answers[0]["error"] == STORE_FAILED
    assert took < STEP + TIMEOUT + SLACK, took


async def test_calls_go_on_once_the_store_is_back(
    stoppable: Stoppable,
) -> None:
    async with _client(stoppable.url) as raw:
        with trio.fail_after(WATCHDOG):
            await raw.initialize(capabilities={})
        with stoppable.stopped(), trio.fail_after(WATCHDOG):
            assert (await _answer(raw, 1))["error"] == STORE_FAILED
        # Until this process's beat (every second here) finds the store
        # back, its requests fail at once; then they go on.
        with trio.fail_after(WATCHDOG):
            request_id = 2
            while "error" in (answer := await _answer(raw, request_id)):
                assert answer["error"] == STORE_FAILED
                request_id += 1
                await trio.sleep(0.2)
        assert answer["result"]["content"][0]["text"] == "slept then"


async def test_a_resume_the_store_cannot_place_is_tried_again_not_refused(
    stoppable_redis: RedisServer,
) -> None:
    # A stream this process does not know may be another's call: with the
    # store away it was answered 400 "cannot resume", which tells a client
    # the call is gone for good. 503: it resumes again later. (Redis only: a
    # write lock on SQLite leaves reads be, and the store's answer is right.)
    async with _client(stoppable_redis.url) as raw:
        with trio.fail_after(WATCHDOG):
            await raw.initialize(capabilities={})
        with _stopped(stoppable_redis), trio.fail_after(WATCHDOG):
            headers = {
                **raw.headers(),
                "accept": "text/event-stream",
                "last-event-id": f"{(1 << 32) + 7}-3",
            }
            del headers["content-type"]
            response = await raw.http.get(raw.url, headers=headers)
        assert response.status_code == 503, response.text
        assert "try again" in response.text

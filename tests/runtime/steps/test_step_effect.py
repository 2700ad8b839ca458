"""``ctx.step``: what a tool author relies on, in process.

Retries and their notices, the idempotency key, failures, stubs in the
testing kit, an async step over real loopback HTTP, ``async def`` tools, and
a ``handoff`` whose ``before`` cannot be recorded.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial

import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from runtime import Context, Op, StepFailed, handoff, idempotency_key, tool
from runtime.errors import InvalidEffect, ScriptExhausted
from runtime.lowlevel import InvalidTool, Journal, Log, run
from runtime.testing import ScriptedPeer, accept, run_scripted, text
from runtime.testing.strategies import step_results
from tests.fixtures import step_tools

attempts: list[str] = []


def flaky() -> str:
    attempts.append(idempotency_key())
    if len(attempts) < 3:
        raise ConnectionError(f"try {len(attempts)}")
    return "done"


@tool
def retried(ctx: Context) -> Op[str]:
    call = ctx.step_as("flaky", retries=3, backoff=0.01, retry_on=(ConnectionError,))
    return (yield from call(flaky))


async def test_retries_run_again_under_one_key_and_each_attempt_is_logged() -> None:
    attempts.clear()
    peer = ScriptedPeer()
    assert await run(retried, {}, peer) == "done"
    assert len(attempts) == 3
    assert len(set(attempts)) == 1  # one idempotency key for every attempt
    assert attempts[0].endswith(":flaky@0")
    logs = [n for _k, n in peer.notices if isinstance(n, Log)]
    assert [log.data for log in logs] == [
        "step 'flaky': attempt 1 failed: ConnectionError: try 1",
        "step 'flaky': attempt 2 failed: ConnectionError: try 2",
    ]


@tool
def not_retried(ctx: Context) -> Op[str]:
    call = ctx.step_as("flaky", retries=3, backoff=0, retry_on=(TimeoutError,))
    try:
        return (yield from call(flaky))
    except StepFailed as exc:
        return f"{exc.step}: {exc.type_name}: {exc.message}"


def test_only_the_named_exceptions_are_retried() -> None:
    attempts.clear()
    assert run_scripted(not_retried, {}, ScriptedPeer()) == (
        "flaky: ConnectionError: try 1"
    )
    assert len(attempts) == 1


def test_a_recorded_failure_replays_without_running_the_function() -> None:
    attempts.clear()
    journal = Journal()
    first = run_scripted(not_retried, {}, ScriptedPeer(), journal=journal)
    again = run_scripted(not_retried, {}, ScriptedPeer(), journal=journal)
    assert first == again == "flaky: ConnectionError: try 1"
    assert len(attempts) == 1


def test_bad_step_options_are_refused_where_they_are_written() -> None:
    ctx = Context()
    with pytest.raises(InvalidEffect, match="retries must be an int >= 0"):
        ctx.step_as(retries=-1)
    with pytest.raises(InvalidEffect, match="retry_on must be a tuple"):
        ctx.step_as(retry_on=(int,))  # type: ignore[arg-type]


def test_the_idempotency_key_is_only_read_inside_a_step() -> None:
    with pytest.raises(InvalidEffect, match="only available inside a step"):
        idempotency_key()


# --- the testing kit -----------------------------------------------------------------


def test_steps_are_stubbed_by_name_in_a_scripted_peer() -> None:
    peer = ScriptedPeer(steps={"get_json": [{"weather": "sunny"}]})
    result = run_scripted(step_tools.fetch, {"url": "http://unused.invalid"}, peer)
    assert result == "sunny"


def test_a_step_stub_may_be_a_fake_function() -> None:
    peer = ScriptedPeer(steps={"get_json": lambda url: {"weather": f"fake {url}"}})
    assert run_scripted(step_tools.fetch, {"url": "u"}, peer) == "fake u"


def test_an_async_step_must_be_stubbed_for_run_scripted() -> None:
    with pytest.raises(ScriptExhausted, match="cannot run async step 'get_json'"):
        run_scripted(step_tools.fetch, {"url": "u"}, ScriptedPeer())


async def test_stubs_replace_steps_under_runtime_run_too() -> None:
    peer = ScriptedPeer(steps={"get_json": [{"weather": "rain"}]})
    assert await run(step_tools.fetch, {"url": "u"}, peer) == "rain"


# --- an async step over loopback HTTP ------------------------------------------------


@asynccontextmanager
async def fake_api(body: dict[str, str]) -> AsyncIterator[str]:
    """A one-route HTTP API on 127.0.0.1, answering ``body`` as JSON."""
    payload = json.dumps(body).encode()

    async def answer(stream: trio.SocketStream) -> None:
        received = b""
        while b"\r\n\r\n" not in received:
            chunk = await stream.receive_some()
            if not chunk:
                return
            received += chunk
        head = (
            f"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
            f"content-length: {len(payload)}\r\nconnection: close\r\n\r\n"
        )
        await stream.send_all(head.encode() + payload)
        await stream.aclose()

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            partial(trio.serve_tcp, answer, 0, host="127.0.0.1")
        )
        port = listeners[0].socket.getsockname()[1]
        yield f"http://127.0.0.1:{port}/weather"
        nursery.cancel_scope.cancel()


async def test_an_async_step_uses_httpx_against_loopback() -> None:
    async with fake_api({"weather": "12 C, clear"}) as url:
        assert (
            await run(step_tools.fetch, {"url": url}, ScriptedPeer()) == "12 C, clear"
        )


# --- async def tools and handoff -----------------------------------------------------


class City(BaseModel):
    name: str


@tool
async def shout(params: City, ctx: Context) -> str:
    """An async def tool: one step."""
    await trio.sleep(0)
    return params.name.upper()


async def test_an_async_def_tool_runs_as_one_step() -> None:
    assert await run(shout, {"name": "oslo"}, ScriptedPeer()) == "OSLO"
    assert shout.output is str


def test_a_handoff_before_without_a_return_annotation_is_refused() -> None:
    def before(params: City):  # type: ignore[no-untyped-def]
        return {"side": "X"}

    def client(handoff: object, ctx: Context) -> Op[str]:
        return "x"
        yield

    with pytest.raises(InvalidTool, match="annotate the return type of"):
        handoff(before=before, client=client, after=lambda h, r: r)


def test_the_step_benchmark_runs() -> None:
    import subprocess
    import sys

    from tests.helpers import ROOT

    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks/steps.py"), "--quick"],
        capture_output=True,
        text=True,
        check=True,
    )
    last = json.loads(done.stdout.splitlines()[-1])
    assert set(last) == {"call, no steps", "thread step", "async step", "replayed step"}


@given(st.data())
def test_any_step_result_replays_as_it_ran(data: st.DataObject) -> None:
    from tests.helpers import load_example

    weather = load_example("weather")
    result = data.draw(step_results(weather.fetch_weather), label="fetch_weather")

    def peer() -> ScriptedPeer:
        return ScriptedPeer(
            elicits={"where": [accept(city="Oslo")]},
            samples=[text("Fine.")],
            steps={"fetch_weather": [result]},
        )

    def outcome(journal: Journal) -> str:
        try:
            return run_scripted(weather.weather, {}, peer(), journal=journal)
        except StepFailed as failed:
            return f"failed: {failed.type_name}: {failed.message}"

    journal = Journal()
    live = outcome(journal)
    assert outcome(Journal.from_json(journal.to_json())) == live
    if isinstance(result, Exception):
        assert live == f"failed: {type(result).__name__}: {result}"
    else:
        assert live.startswith(f"{result.city}: ")


@tool
async def add(a: int, b: int = 2) -> int:
    """An async def tool with plain typed parameters."""
    await trio.sleep(0)
    return a + b


async def test_an_async_def_tool_with_plain_parameters_runs_as_one_step() -> None:
    assert add.input_schema["required"] == ["a"]
    assert await run(add, {"a": 3}, ScriptedPeer()) == 5

"""2025-11-25 HTTP sessions survive kill -9 of the server: real processes, a real store.

``yieldmcp serve tests/fixtures/session_tools.py --http ... --store URL`` runs as
a subprocess. A call parks on a question (or runs a sequence of slow steps);
the server is killed with SIGKILL; the same server starts again on the same
port, or another process on another port shares the store. The client comes
back (our client on its own: it resumes the call's stream with
``Last-Event-ID`` and posts its answer again while the server is away) and the
call completes: no question is asked twice, and a step that finished before
the kill does not run again (the tools log every step to a file).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from bridge.client import Client
from bridge.client.http import http_transport
from bridge.durable.live import SESSIONS
from bridge.durable.log import CALLS
from bridge.stores import open_store
from tests.bridge.http_kit import Raw, SseReader, message_of
from tests.helpers import ROOT
from tests.processes import free_port, kill, ready, url_of
from tests.system.parking import Parking

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

SERVED = str(ROOT / "tests/fixtures/session_tools.py")


class Served:
    """``yieldmcp serve`` of the session tools on one store, killable."""

    def __init__(self, tmp: Path, store: str, slow: float = 0.0, *extra: str) -> None:
        self.tmp, self.store, self.slow, self.extra = tmp, store, slow, extra
        self.counter = tmp / "steps.log"
        self.counter.touch()

    def steps(self) -> list[str]:
        return self.counter.read_text().splitlines()

    @contextlib.contextmanager
    def process(self, port: int) -> Iterator[subprocess.Popen[bytes]]:
        env = {
            **os.environ,
            "SESSION_TOOLS_COUNTER": str(self.counter),
            "SESSION_TOOLS_SLOW": str(self.slow),
        }
        command = [sys.executable, "-m", "bridge.cli", "serve", SERVED]
        command += ["--http", f"127.0.0.1:{port}", "--store", self.store]
        command += self.extra
        with (self.tmp / f"server-{port}.err").open("ab") as err:
            process = subprocess.Popen(
                command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=err
            )
        try:
            yield process
        finally:
            kill(process)


@contextlib.asynccontextmanager
async def started(
    served: Served, port: int | None = None
) -> AsyncIterator[tuple[int, subprocess.Popen[bytes]]]:
    """A server on ``port`` (a free one by default), ready."""
    port = free_port() if port is None else port
    with served.process(port) as process:
        await ready(port, process)
        yield port, process


@pytest.mark.parametrize("answer", ["after the restart", "while it is down"])
async def test_our_client_finishes_a_parked_call_across_a_kill(
    tmp_path: Path, sqlite_url: str, answer: str
) -> None:
    served = Served(tmp_path, sqlite_url)
    handler = Parking("name", {"name": "Ada"}, {"colour": "green"})
    outcome: list[Any] = []
    with trio.fail_after(120):
        port = free_port()
        with served.process(port) as process:
            await ready(port, process)
            async with (
                http_transport(url_of(port), retry=0.25, max_resumes=200) as wire,
                Client.connect(wire, era="legacy", elicitation=handler) as client,
                trio.open_nursery() as nursery,
            ):

                async def run() -> None:
                    outcome.append(await client.call_tool("interview"))

                nursery.start_soon(run)
                await handler.parked.wait()
                kill(process)
                if answer == "while it is down":
                    handler.release.set()  # its POST fails: the client retries
                    await trio.sleep(0.5)
                with served.process(port) as again:
                    await ready(port, again)
                    handler.release.set()
                    while not outcome:
                        await trio.sleep(0.05)
    assert outcome[0].content[0].text == "hello Ada, who likes green"
    assert handler.asked == ["name", "colour"]  # none asked twice
    assert served.steps() == ["greet Ada"]  # the step ran once, before the kill


async def _next_message(reader: SseReader) -> tuple[str, dict[str, Any]]:
    while True:
        event = await reader.next()
        assert event is not None, "the stream ended early"
        if event.data:
            assert event.id
            return event.id, message_of(event)


def _accept(ask: dict[str, Any], **content: str) -> dict[str, Any]:
    answer = {"action": "accept", "content": content}
    return {"jsonrpc": "2.0", "id": ask["id"], "result": answer}


def _call(raw: Raw, request_id: Any, name: str) -> dict[str, Any]:
    return raw.request(request_id, "tools/call", {"name": name, "arguments": {}})


async def _parked_on_colour(
    served: Served, http: httpx.AsyncClient
) -> tuple[Raw, str, dict[str, Any]]:
    """Call ``interview`` (request 3) on a new server, answer its first
    question, and kill the server once the second is asked: the client, the
    last event id it saw, and the second question."""
    async with started(served) as (first, process):
        raw = Raw(http, url_of(first))
        await raw.initialize()
        async with raw.stream("POST", _call(raw, 3, "interview")) as (_, reader):
            _, ask_name = await _next_message(reader)
            await raw.post(_accept(ask_name, name="Bo"))
            _, _log = await _next_message(reader)
            last_id, ask_colour = await _next_message(reader)
            kill(process)
    return raw, last_id, ask_colour


async def test_another_process_on_the_store_finishes_a_parked_call(
    tmp_path: Path, store_url: str
) -> None:
    served = Served(tmp_path, store_url)
    with trio.fail_after(120):
        async with httpx.AsyncClient(timeout=60) as http:
            raw, last_id, ask_colour = await _parked_on_colour(served, http)
            async with started(served) as (second, _process):
                raw.url = url_of(second)
                posted = await raw.post(_accept(ask_colour, colour="red"))
                assert posted.status_code == 202
                async with raw.stream("GET", last_event_id=last_id) as (
                    response,
                    reader,
                ):
                    assert response.status_code == 200
                    rest = [raw.check(message_of(e)) for e in await reader.rest()]
    assert [m.get("method") for m in rest] == [None]  # no question again
    assert rest[-1]["id"] == 3
    assert rest[-1]["result"]["content"][0]["text"] == "hello Bo, who likes red"
    assert served.steps() == ["greet Bo"]


async def test_a_kill_during_a_sequence_of_steps_reruns_only_the_step_in_flight(
    tmp_path: Path, sqlite_url: str
) -> None:
    served = Served(tmp_path, sqlite_url, slow=1.0)
    with trio.fail_after(120):
        async with httpx.AsyncClient(timeout=60) as http:
            async with started(served) as (port, process):
                raw = Raw(http, url_of(port))
                await raw.initialize()
                async with raw.stream("POST", _call(raw, 4, "sequence")) as (
                    _,
                    reader,
                ):
                    priming = await reader.next()
                    assert priming is not None
                    assert priming.id
                    while "start 1" not in served.steps():
                        await trio.sleep(0.02)
                    kill(process)  # during the second step
            async with started(served, port):
                last = str(priming.id)
                async with raw.stream("GET", last_event_id=last) as (response, reader):
                    assert response.status_code == 200
                    rest = [raw.check(message_of(e)) for e in await reader.rest()]
    assert rest[-1]["result"]["content"][0]["text"] == "total 60"
    assert served.steps() == [
        "start 0", "end 0", "start 1", "start 1", "end 1",
        "start 2", "end 2", "start 3", "end 3",
    ]  # fmt: skip


async def test_a_request_posted_again_after_a_kill_follows_the_call_it_started(
    tmp_path: Path, sqlite_url: str
) -> None:
    # The process died before the client saw any event of the call, so the
    # client has no event id to resume with and posts the request again: it
    # must get the call the first POST started (taken on from the store), not
    # a refusal and not a second call.
    served = Served(tmp_path, sqlite_url)
    with trio.fail_after(120):
        async with httpx.AsyncClient(timeout=60) as http:
            raw, _, ask_colour = await _parked_on_colour(served, http)
            async with started(served) as (second, _process):
                raw.url = url_of(second)
                call = _call(raw, 3, "interview")  # the same request again
                async with raw.stream("POST", call) as (response, reader):
                    assert response.status_code == 200
                    _, asked = await _next_message(reader)
                    assert asked["params"]["message"] == "Favourite colour?"
                    await raw.post(_accept(asked, colour="red"))
                    rest = [raw.check(message_of(e)) for e in await reader.rest()]
    assert ask_colour["params"]["message"] == "Favourite colour?"
    assert rest[-1]["id"] == 3
    assert rest[-1]["result"]["content"][0]["text"] == "hello Bo, who likes red"
    assert served.steps() == ["greet Bo"]  # one call: its step ran once


async def test_a_request_posted_again_after_its_call_ended_gets_its_response(
    tmp_path: Path, sqlite_url: str
) -> None:
    # The call ended and its response was written down, but the process died
    # before the client read it: the request posted again gets that response,
    # and the tool does not run again.
    served = Served(tmp_path, sqlite_url, slow=0.05)
    store = open_store(sqlite_url)
    with trio.fail_after(120):
        async with httpx.AsyncClient(timeout=60) as http:
            async with started(served) as (first, process):
                raw = Raw(http, url_of(first))
                await raw.initialize()
                call = _call(raw, 4, "sequence")
                async with raw.stream("POST", call) as (response, _reader):
                    while not _ended_in(store, str(raw.session_id)):
                        await trio.sleep(0.02)
                    kill(process)
            async with started(served) as (second, _process):
                raw.url = url_of(second)
                response = await raw.post(call)
                assert response.status_code == 200
                answer = raw.checked_body(response)
    store.close()
    assert answer["id"] == 4
    assert answer["result"]["content"][0]["text"] == "total 60"
    assert served.steps().count("start 0") == 1  # the tool did not run again


def _ended_in(store: Any, session_id: str) -> bool:
    """Whether a call of the session is written down as ended."""
    for entry in store.read(SESSIONS, session_id):
        doc = store.get(CALLS, entry["c"])
        if doc is not None and "done" in doc.value:
            return True
    return False


async def test_the_official_client_resumes_a_parked_call_across_a_quick_restart(
    tmp_path: Path, sqlite_url: str
) -> None:
    # The SDK's client reconnects with Last-Event-ID twice, ``retry:`` apart,
    # and never posts an answer again: the server must be back within those
    # attempts (a longer --retry-ms gives a slow restart room), and the
    # answer sent once it is.
    from mcp import Client as SdkClient
    from mcp import types
    from mcp.client.streamable_http import streamable_http_client

    served = Served(tmp_path, sqlite_url, 0.0, "--retry-ms", "8000")
    asked: list[str] = []
    parked, release = trio.Event(), trio.Event()

    async def elicit(_context: Any, params: Any) -> types.ElicitResult:
        asked.append(params.message)
        if "name" in params.message:
            return types.ElicitResult(action="accept", content={"name": "Cy"})
        parked.set()
        await release.wait()
        return types.ElicitResult(action="accept", content={"colour": "blue"})

    with trio.fail_after(120):
        port = free_port()
        with served.process(port) as process:
            await ready(port, process)
            sdk = SdkClient(
                streamable_http_client(url_of(port)),
                mode="legacy",
                elicitation_callback=elicit,
            )
            async with sdk as session, trio.open_nursery() as nursery:
                result: list[Any] = []

                async def run() -> None:
                    result.append(await session.call_tool("interview", {}))

                nursery.start_soon(run)
                await parked.wait()
                kill(process)
                with served.process(port) as again:
                    await ready(port, again)
                    release.set()
                    while not result:
                        await trio.sleep(0.05)
    text = result[0].content[0]
    assert json.dumps(text.model_dump()).count("hello Cy, who likes blue") == 1
    assert asked == ["Your name?", "Favourite colour?"]
    assert served.steps() == ["greet Cy"]

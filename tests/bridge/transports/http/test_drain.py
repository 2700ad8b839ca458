"""SIGTERM drains ``yieldmcp serve --http``: real processes on real ports.

A rolling deploy stops a server with SIGTERM: it must stop taking new work
(new connections refused, new requests on open connections answered 503
with ``Retry-After``), let the calls in flight finish for up to
``--drain-seconds``, leave what is parked on its client to another process
when a store keeps it, and exit 0 — as one process, and as the parent of
``--workers``.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from bridge.client import Client
from bridge.client.http import http_transport
from tests.bridge.http_kit import LEGACY, Raw, SseReader, message_of
from tests.helpers import ROOT
from tests.processes import Logged, free_port, logged_serve, url_of
from tests.system.parking import Parking

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

SERVED = str(ROOT / "tests/fixtures/drain_tools.py")
SLACK = 4.0  # what the shared machine may add to a bound
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
WORKERS = {"one process": (), "two workers": ("--workers", "2")}


@contextlib.asynccontextmanager
async def serving(*extra: str, port: int = 0) -> AsyncIterator[Logged]:
    async with logged_serve(SERVED, *extra, port=port) as running:
        yield running


def modern_call(name: str, request_id: int = 1, **arguments: Any) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments, "_meta": MODERN_META}
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": params,
    }


async def post(
    http: httpx.AsyncClient, url: str, body: dict[str, Any]
) -> httpx.Response:
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
    }
    headers["mcp-method"] = body["method"]
    if body["method"] == "tools/call":
        headers["mcp-name"] = body["params"]["name"]
    return await http.post(url, content=json.dumps(body), headers=headers)


async def exits(running: Logged, within: float) -> int:
    with trio.fail_after(within):
        return await running.finish()


@pytest.mark.parametrize("extra", WORKERS.values(), ids=WORKERS.keys())
async def test_a_call_in_flight_finishes_and_then_the_server_exits_0(
    extra: tuple[str, ...],
) -> None:
    async with serving(*extra) as running, httpx.AsyncClient(timeout=60) as http:
        answers: list[httpx.Response] = []
        async with trio.open_nursery() as nursery:

            async def call() -> None:
                answers.append(
                    await post(http, running.url, modern_call("slow", seconds=2))
                )

            nursery.start_soon(call)
            await trio.sleep(0.7)  # the call is in its step
            running.terminate()
        (answer,) = answers
        assert answer.status_code == 200, answer.text
        assert answer.json()["result"]["content"][0]["text"].startswith("slept 2 in")
        assert await exits(running, SLACK) == 0
    assert b"Traceback" not in running.log


@pytest.mark.parametrize("store", [False, True], ids=["no store", "a store"])
async def test_a_2025_call_running_a_step_is_waited_for(
    store: bool, tmp_path: Path
) -> None:
    extra = ("--store", f"sqlite:{tmp_path / 'store.sqlite3'}") if store else ()
    outcome: list[Any] = []
    async with serving(*extra) as running:
        async with (
            http_transport(running.url) as wire,
            Client.connect(wire, era="legacy") as client,
            trio.open_nursery() as nursery,
        ):
            stepping = trio.Event()

            async def call() -> None:
                outcome.append(
                    await client.call_tool(
                        "slow", {"seconds": 2}, on_progress=lambda *_: stepping.set()
                    )
                )

            nursery.start_soon(call)
            await stepping.wait()  # in its step: running, not waiting on us
            running.terminate()
        assert await exits(running, SLACK) == 0
    assert outcome[0].content[0].text.startswith("slept 2 in")


async def test_new_work_during_the_drain_gets_503_and_new_connections_are_refused() -> (
    None
):
    async with (
        serving() as running,
        httpx.AsyncClient(timeout=60) as caller,
        httpx.AsyncClient(timeout=60) as kept,
    ):
        listing = {"jsonrpc": "2.0", "id": 9, "method": "tools/list",
                   "params": {"_meta": MODERN_META}}  # fmt: skip
        listed = await post(kept, running.url, listing)
        assert listed.status_code == 200  # (its connection stays open)
        answers: list[httpx.Response] = []
        async with trio.open_nursery() as nursery:

            async def call() -> None:
                answers.append(
                    await post(caller, running.url, modern_call("slow", seconds=3))
                )

            nursery.start_soon(call)
            await trio.sleep(0.7)
            running.terminate()
            await trio.sleep(0.5)  # draining now
            refused = await post(kept, running.url, modern_call("slow", 2, seconds=0))
            assert refused.status_code == 503
            assert refused.headers["retry-after"].isdigit()
            assert refused.headers["connection"] == "close"
            async with httpx.AsyncClient(timeout=10) as newcomer:
                with pytest.raises(httpx.ConnectError):
                    await post(newcomer, running.url, modern_call("slow", 3, seconds=0))
        (answer,) = answers
        assert answer.status_code == 200  # the call in flight finished
        assert await exits(running, SLACK) == 0


@pytest.mark.parametrize("extra", WORKERS.values(), ids=WORKERS.keys())
async def test_drain_seconds_cuts_a_call_that_takes_longer(
    extra: tuple[str, ...],
) -> None:
    async with (
        serving("--drain-seconds", "1", *extra) as running,
        httpx.AsyncClient(timeout=60) as http,
    ):
        outcome: list[Any] = []
        async with trio.open_nursery() as nursery:

            async def call() -> None:
                try:
                    outcome.append(
                        await post(http, running.url, modern_call("slow", seconds=60))
                    )
                except httpx.TransportError as exc:
                    outcome.append(exc)

            nursery.start_soon(call)
            await trio.sleep(0.7)
            sent = running.terminate()
            assert await exits(running, 1 + SLACK) == 0
            took = time.monotonic() - sent
        assert 1 <= took < 1 + SLACK
        (cut,) = outcome
        assert isinstance(cut, httpx.TransportError)  # cut, not answered
    assert b"Traceback" not in running.log


@contextlib.asynccontextmanager
async def parked_call(raw: Raw) -> AsyncIterator[tuple[SseReader, dict[str, Any]]]:
    """``ask`` on a 2025-11-25 session, parked on its question: the call's
    stream and the question."""
    body = raw.request(1, "tools/call", {"name": "ask", "arguments": {}})
    async with raw.stream("POST", body) as (response, reader):
        assert response.status_code == 200
        while (event := await reader.next()) is not None:
            if event.data and message_of(event).get("method") == "elicitation/create":
                yield reader, message_of(event)
                return
        pytest.fail("the call asked nothing")


async def test_without_a_store_a_parked_call_is_waited_for_and_answered() -> None:
    async with (
        serving() as running,
        httpx.AsyncClient(timeout=60) as one,
        httpx.AsyncClient(timeout=60) as other,
    ):
        raw = Raw(one, running.url)
        await raw.initialize()
        answering = Raw(other, running.url)
        answering.session_id, answering.version = raw.session_id, LEGACY
        ping = await answering.post(answering.request("p", "ping"))
        assert ping.status_code == 200  # (a kept-alive connection to answer on)
        async with parked_call(raw) as (reader, question):
            running.terminate()
            await trio.sleep(1.0)  # draining, and the call waits on its client
            accepted = {"action": "accept", "content": {"ok": True}}
            reply = {"jsonrpc": "2.0", "id": question["id"], "result": accepted}
            # On a connection already open: an answer is no new work.
            assert (await answering.post(reply)).status_code == 202
            answered = [
                message_of(event)
                async for event in _events(reader)
                if "result" in message_of(event)
            ]
        assert answered[0]["result"]["content"][0]["text"] == "answered accept"
        assert await exits(running, SLACK) == 0


async def _events(reader: SseReader) -> AsyncIterator[Any]:
    while (event := await reader.next()) is not None:
        if event.data:
            yield event


async def test_without_a_store_a_parked_call_is_cut_at_the_bound() -> None:
    async with (
        serving("--drain-seconds", "1") as running,
        httpx.AsyncClient(timeout=60) as one,
    ):
        raw = Raw(one, running.url)
        await raw.initialize()
        with contextlib.suppress(httpx.TransportError):
            async with parked_call(raw):
                sent = running.terminate()
                assert await exits(running, 1 + SLACK) == 0
                assert 1 <= time.monotonic() - sent < 1 + SLACK


async def test_with_a_store_a_parked_call_is_left_for_the_next_process(
    tmp_path: Path,
) -> None:
    store = f"sqlite:{tmp_path / 'store.sqlite3'}"
    port = free_port()
    handler = Parking("none", {}, {"ok": True})
    outcome: list[Any] = []
    with trio.fail_after(120):
        async with (
            serving("--store", store, port=port) as first,
            http_transport(url_of(port), retry=0.25, max_resumes=200) as wire,
            Client.connect(wire, era="legacy", elicitation=handler) as client,
            trio.open_nursery() as nursery,
        ):

            async def run() -> None:
                outcome.append(await client.call_tool("ask"))

            nursery.start_soon(run)
            await handler.parked.wait()
            sent = first.terminate()
            # Not waited for (the default bound is 30 s): it is in the store.
            assert await exits(first, SLACK) == 0
            assert time.monotonic() - sent < SLACK
            async with serving("--store", store, port=port):
                handler.release.set()
                while not outcome:
                    await trio.sleep(0.05)
    assert outcome[0].content[0].text == "answered accept"
    assert handler.asked == ["confirm"]  # not asked twice

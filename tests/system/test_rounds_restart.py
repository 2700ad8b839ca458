"""2026-07-28 calls survive kill -9 of the server: real processes, a real store.

``yieldmcp serve tests/fixtures/durable_tool.py --http ... --store URL`` runs
as a subprocess with a fixed ``YIELDMCP_STATE_KEY``. A call parks on a
question; the server is killed with SIGKILL; the same server is started again
(or a different process on another port, sharing the store and the key); the
client's retry with the same ``requestState`` completes the call. The tool's
steps log each execution to a file, and the clients count the questions they
are asked: no question is asked twice, and no finished step runs again.
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
import mcp.types as types
import pytest
import trio
from mcp import Client

from bridge.client import connect
from bridge.durable.log import CALLS
from bridge.server.state_token import new_key
from bridge.stores import open_store
from tests.helpers import ROOT
from tests.processes import free_port, kill, ready, url_of
from tests.system.parking import Parking

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

SERVED = str(ROOT / "tests/fixtures/durable_tool.py")
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    "io.modelcontextprotocol/clientInfo": {"name": "restart-test", "version": "1"},
}
SEAT = {"seat": {"action": "accept", "content": {"seat": "12A"}}}
CONFIRM = {"confirm": {"action": "accept", "content": {"ok": True}}}


@pytest.fixture
def sqlite_store(sqlite_url: str) -> str:
    """The embedded store, for the tests that vary the client, not the store."""
    return sqlite_url


class Served:
    """``yieldmcp serve`` of the durable tool on one store, killable."""

    def __init__(self, tmp: Path, store: str) -> None:
        self.tmp, self.store, self.key = tmp, store, new_key()
        self.log, self.gate = tmp / "steps.log", tmp / "gate"
        self.log.touch()

    def steps(self) -> list[str]:
        return self.log.read_text().split()

    def said(self) -> str:
        """What the servers logged (``-v``: their INFO lines), for a failure's
        message: which process ran what, and what each read from the store."""
        logs = sorted(self.tmp.glob("server-*.err"))
        text = "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')}" for p in logs)
        return text[-6000:]

    @contextlib.contextmanager
    def process(self, port: int) -> Iterator[subprocess.Popen[bytes]]:
        env = {
            **os.environ,
            "YIELDMCP_STATE_KEY": self.key,
            "DURABLE_LOG": str(self.log),
            "DURABLE_GATE": str(self.gate),
        }
        command = [sys.executable, "-m", "bridge.cli", "serve", SERVED]
        command += ["--http", f"127.0.0.1:{port}", "--store", self.store]
        command += ["--round-claim-seconds", "1", "-v"]
        with (self.tmp / f"server-{port}.err").open("ab") as err:
            process = subprocess.Popen(
                command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=err
            )
        try:
            yield process
        finally:
            kill(process)


def finished_calls(store: str) -> list[Any]:
    """The call documents in the store: each a finished call's."""
    opened = open_store(store)
    try:
        return [doc.value for _id, doc in opened.scan(CALLS)]
    finally:
        opened.close()


@contextlib.asynccontextmanager
async def started(served: Served) -> AsyncIterator[tuple[int, Any]]:
    """A server on a free port, ready; its port and process."""
    port = free_port()
    with served.process(port) as process:
        await ready(port, process)
        yield port, process


async def call(port: int, name: str, **extra: Any) -> dict[str, Any]:
    """One ``tools/call`` round over plain HTTP: the JSON-RPC response."""
    params = {"name": name, "arguments": {}, "_meta": META, **extra}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": name,
    }
    async with httpx.AsyncClient(timeout=60) as http:
        response = await http.post(
            url_of(port), content=json.dumps(body), headers=headers
        )
    return response.json()


async def test_a_different_process_on_the_store_finishes_a_parked_call(
    tmp_path: Path, store_url: str
) -> None:
    served = Served(tmp_path, store_url)
    async with started(served) as (first, process):
        one = (await call(first, "book"))["result"]
        assert list(one["inputRequests"]) == ["seat"]
        two = (
            await call(
                first, "book", requestState=one["requestState"], inputResponses=SEAT
            )
        )["result"]
        assert list(two["inputRequests"]) == ["confirm"]
        kill(process)
    async with started(served) as (second, _process):
        done = await call(
            second, "book", requestState=two["requestState"], inputResponses=CONFIRM
        )
        again = await call(
            second, "book", requestState=two["requestState"], inputResponses=CONFIRM
        )
    assert done["result"]["content"][0]["text"] == "held 12A charged 120 True T-1"
    assert served.steps() == ["reserve", "price", "charge", "ticket"], served.said()
    # The same request again, as after a lost reply: the result the call
    # ended with, and no step runs again.
    assert again["result"]["content"] == done["result"]["content"]


async def test_a_kill_during_a_sequence_of_steps_reruns_only_the_step_in_flight(
    tmp_path: Path, store_url: str
) -> None:
    served = Served(tmp_path, store_url)
    async with started(served) as (first, process):
        one = (await call(first, "chain"))["result"]
        retry = {"requestState": one["requestState"], "inputResponses": SEAT}
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_dies, call(first, "chain", **retry))
            with trio.move_on_after(60):
                while "slow-start" not in served.steps():
                    await trio.sleep(0.05)
            assert "slow-start" in served.steps(), served.said()
            kill(process)  # the request in flight dies with it
    served.gate.touch()
    async with started(served) as (second, _process):
        with trio.fail_after(60):
            while True:  # until the dead round's claim runs out (1 s)
                done = await call(second, "chain", **retry)
                if "result" in done:
                    break
                assert done["error"]["data"] == {"reason": "request_state_used"}
                await trio.sleep(0.2)
    assert done["result"]["content"][0]["text"] == "12A charged 120 slow done T-1"
    assert served.steps() == [
        "price", "charge", "slow-start", "slow-start", "slow-end", "ticket"
    ], served.said()  # fmt: skip


async def _dies(request: Any) -> None:
    with pytest.raises(httpx.TransportError):
        await request


async def test_our_client_finishes_a_call_across_a_restart(
    tmp_path: Path, sqlite_store: str
) -> None:
    store_url = sqlite_store
    served = Served(tmp_path, store_url)
    handler = Parking("seat", {"seat": "12A"}, {"ok": True})
    async with (
        started(served) as (port, process),
        connect(url_of(port), era="2026-07-28", elicitation=handler) as client,
        trio.open_nursery() as nursery,
    ):
        outcome: list[Any] = []

        async def run() -> None:
            outcome.append(await client.call_tool("book"))

        nursery.start_soon(run)
        await handler.parked.wait()
        kill(process)
        with served.process(port) as again:
            await ready(port, again)
            handler.release.set()
            with trio.fail_after(60):
                while not outcome:
                    await trio.sleep(0.05)
    assert outcome[0].text == "held 12A charged 120 True T-1"
    assert handler.asked == ["seat", "confirm"]
    assert served.steps() == ["reserve", "price", "charge", "ticket"], served.said()
    [end] = finished_calls(store_url)
    assert (end["round"], end["done"]) == (2, True)
    assert end["value"]["content"][0]["text"] == "held 12A charged 120 True T-1"


async def test_the_official_client_finishes_a_call_across_a_restart(
    tmp_path: Path, sqlite_store: str
) -> None:
    store_url = sqlite_store
    served = Served(tmp_path, store_url)
    asked: list[str] = []
    parked, release = trio.Event(), trio.Event()

    async def elicitation(context: Any, params: Any) -> types.ElicitResult:
        asked.append(params.message)
        if params.message == "Which seat?":
            return types.ElicitResult(action="accept", content={"seat": "12A"})
        parked.set()
        await release.wait()
        return types.ElicitResult(action="accept", content={"ok": True})

    outcome: list[Any] = []
    async with (
        started(served) as (port, process),
        Client(
            url_of(port), mode="2026-07-28", elicitation_callback=elicitation
        ) as client,
        trio.open_nursery() as nursery,
    ):

        async def run() -> None:
            outcome.append(await client.call_tool("book", {}))

        nursery.start_soon(run)
        await parked.wait()
        kill(process)
        with served.process(port) as again:
            await ready(port, again)
            release.set()
            with trio.fail_after(60):
                while not outcome:
                    await trio.sleep(0.05)
    assert outcome[0].content[0].text == "held 12A charged 120 True T-1"
    assert asked == ["Which seat?", "charged 120 for 12A: confirm?"]
    assert served.steps() == ["reserve", "price", "charge", "ticket"], served.said()
    [end] = finished_calls(store_url)
    assert (end["round"], end["done"]) == (2, True)
    assert end["value"]["content"][0]["text"] == "held 12A charged 120 True T-1"

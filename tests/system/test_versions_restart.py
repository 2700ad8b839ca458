"""A deploy that changes a tool while its calls are in flight: real processes.

``yieldmcp serve tests/fixtures/versioned_tool.py --store sqlite:...`` runs
version "1" of ``book``: a 2026-07-28 call parks on its question (the client
holds its ``requestState``) and a task parks on the same question. The
server is killed (-9). A server running a version "2" that does not list "1"
in ``continues`` refuses the state with the one-line error, and does not use
it up. A server running a "2" that continues "1" finishes both the call and
the task, on the old path (``ctx.patched`` False: they had passed the
change), running no recorded step again; a new call takes the new path.
The official ``mcp`` client, parked on the question while the server is
replaced, finishes its call on the new version the same way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import mcp.types as types
import pytest
import trio
from mcp import Client

from bridge.server.state_token import new_key
from tests.bridge.server.tasks.kit import RpcError, TaskWire
from tests.helpers import ROOT
from tests.processes import Serving, free_port, started

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

SERVED = str(ROOT / "tests/fixtures/versioned_tool.py")
CONFIRM = {"confirm": {"action": "accept", "content": {"ok": True}}}


def _server(
    tmp: Path, store: str, key: str, version: str, port: int | None = None
) -> Serving:
    env = {
        "YIELDMCP_STATE_KEY": key,
        "VERSIONED_TOOL": version,
        "VERSIONED_LOG": str(tmp / "steps.log"),
    }
    return Serving(SERVED, tmp, "--store", store, env=env, port=port)


async def _retry(wire: TaskWire, state: str) -> dict[str, Any]:
    params = {"name": "book", "arguments": {}, "requestState": state}
    return await wire.request("tools/call", {**params, "inputResponses": CONFIRM})


async def test_a_new_version_continues_or_refuses_what_the_old_one_parked(
    tmp_path: Path, sqlite_url: str
) -> None:
    key = new_key()
    old = _server(tmp_path, sqlite_url, key, "1")
    strict = _server(tmp_path, sqlite_url, key, "2-strict")
    new = _server(tmp_path, sqlite_url, key, "2")
    async with httpx.AsyncClient(timeout=30) as http:
        with trio.fail_after(60):
            async with started(old):
                plain, tasks = (
                    TaskWire(http, old.url, tasks=False),
                    TaskWire(http, old.url),
                )
                parked = await plain.call("book")
                assert list(parked["inputRequests"]) == ["confirm"]
                task_id = (await tasks.call("book"))["taskId"]
                await tasks.until(task_id, "input_required")
                old.kill()
            async with started(strict):
                strict_wire = TaskWire(http, strict.url, tasks=False)
                with pytest.raises(RpcError) as refused:
                    await _retry(strict_wire, parked["requestState"])
                strict.kill()
            async with started(new):
                plain, tasks = (
                    TaskWire(http, new.url, tasks=False),
                    TaskWire(http, new.url),
                )
                done = await _retry(plain, parked["requestState"])
                await tasks.answer(task_id, "confirm", CONFIRM["confirm"])
                task = await tasks.until(task_id)
                fresh = await plain.call("book")
                fresh_done = await _retry(plain, fresh["requestState"])
    assert refused.value.code == -32602
    assert refused.value.message == (
        "requestState was made by another version of 'book' (the server's code "
        "changed during the call); call it again without requestState"
    )
    assert done["content"][0]["text"] == "seat 12A accept"
    assert task["status"] == "completed"
    assert task["result"]["content"][0]["text"] == "seat 12A accept"
    assert fresh_done["content"][0]["text"] == "seat 12A insured accept"
    # One step per call: the two parked under "1" were not run again.
    assert (tmp_path / "steps.log").read_text().split() == ["reserve"] * 3


async def test_the_official_client_finishes_its_call_on_the_new_version(
    tmp_path: Path, sqlite_url: str
) -> None:
    key, port = new_key(), free_port()
    old = _server(tmp_path, sqlite_url, key, "1", port)
    new = _server(tmp_path, sqlite_url, key, "2", port)
    parked, release = trio.Event(), trio.Event()

    async def elicitation(context: Any, params: Any) -> types.ElicitResult:
        parked.set()  # asked by version "1"; answered once "2" serves
        await release.wait()
        return types.ElicitResult(action="accept", content={"ok": True})

    outcome: list[Any] = []
    with trio.fail_after(60):
        async with (
            started(old),
            Client(
                old.url, mode="2026-07-28", elicitation_callback=elicitation
            ) as client,
            trio.open_nursery() as nursery,
        ):

            async def call() -> None:
                outcome.append(await client.call_tool("book", {}))

            nursery.start_soon(call)
            await parked.wait()
            old.kill()
            async with started(new):
                release.set()
                while not outcome:
                    await trio.sleep(0.05)
    assert outcome[0].content[0].text == "seat 12A accept"
    assert (tmp_path / "steps.log").read_text().split() == ["reserve"]

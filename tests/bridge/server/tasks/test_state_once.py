"""A requestState is used once on every path, ``task_from="step"`` included.

``yieldmcp serve tests/fixtures/attack_tools.py --http ...`` runs as a real
process. Its ``delete_after_confirm`` asks for a confirmation in the request
(``input_required``), and its round that reaches the destructive step makes a
task instead, which runs the step (a line in a file per run). The client's
confirmed retry (the same ``requestState`` and ``inputResponses``) is sent six
times, three of them at once: exactly one task is made and the step runs once
(issue 37: this path skipped the one-time claim, and six retries made six
tasks that deleted six times). A retry while the round runs is told
``request_state_used``; one after it made the task is the same request
again, whose reply may have been lost, and is told of that task. A retry
with other answers is refused.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from bridge.durable.tasks import TASKS
from bridge.stores import open_store
from tests.bridge.server.tasks.kit import RpcError, TaskWire
from tests.helpers import ROOT
from tests.processes import serving

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

SERVED = str(ROOT / "tests/fixtures/attack_tools.py")
RETRIES_AT_ONCE = 3
RETRIES_AFTER = 3


async def _retried(wire: TaskWire, params: dict[str, Any]) -> list[Any]:
    """``params`` sent three times at once, then three times in turn: each
    reply, or the RpcError it raised."""
    outcomes: list[Any] = []

    async def send() -> None:
        try:
            outcomes.append(await wire.request("tools/call", params))
        except RpcError as refused:
            outcomes.append(refused)

    async with trio.open_nursery() as nursery:
        for _ in range(RETRIES_AT_ONCE):
            nursery.start_soon(send)
    for _ in range(RETRIES_AFTER):
        await send()
    return outcomes


def _tasks_in(store_url: str) -> int:
    store = open_store(store_url)
    try:
        return len(list(store.scan(TASKS)))
    finally:
        store.close()


@pytest.mark.parametrize("store", ["sqlite", "memory"])
async def test_a_confirmed_state_makes_one_task_and_runs_its_step_once(
    tmp_path: Path, store: str
) -> None:
    store_url = f"sqlite:{tmp_path / 'store.sqlite3'}"
    flags = ["--store", store_url] if store == "sqlite" else []
    deleted = tmp_path / "deleted.log"
    deleted.touch()
    async with (
        serving(SERVED, tmp_path, *flags) as (server,),
        httpx.AsyncClient(timeout=30) as http,
    ):
        wire = TaskWire(http, server.url)
        with trio.fail_after(60):
            arguments = {"path": str(deleted)}
            asked = await wire.call("delete_after_confirm", **arguments)
            assert asked["resultType"] == "input_required", asked
            (key,) = asked["inputRequests"]
            confirmed = {
                "name": "delete_after_confirm",
                "arguments": arguments,
                "requestState": asked["requestState"],
                "inputResponses": {key: {"action": "accept", "content": {"ok": True}}},
            }
            outcomes = await _retried(wire, confirmed)
            other = {key: {"action": "accept", "content": {"ok": False}}}
            with pytest.raises(RpcError) as changed:
                await wire.request("tools/call", {**confirmed, "inputResponses": other})
            made = [o for o in outcomes if isinstance(o, dict)]
            for task in made:  # every task made runs to its end
                assert task["resultType"] == "task", task
                done = await wire.until(task["taskId"])
                assert done["status"] == "completed", done
            await trio.sleep(0.5)  # a step started late would show by now
        in_store = _tasks_in(store_url) if store == "sqlite" else None
    refused = [o for o in outcomes if isinstance(o, RpcError)]
    task_ids = {task["taskId"] for task in made}
    assert len(task_ids) == 1, f"{len(task_ids)} tasks made from one requestState"
    assert deleted.read_text().splitlines() == ["deleted"], "the step ran again"
    assert all(r.data == {"reason": "request_state_used"} for r in refused), [
        str(r) for r in refused
    ]
    # The retries sent after the first reply are told of the task it made.
    assert all(isinstance(o, dict) for o in outcomes[RETRIES_AT_ONCE:]), outcomes
    assert changed.value.data == {"reason": "request_state_used"}
    if store == "sqlite":
        assert in_store == 1

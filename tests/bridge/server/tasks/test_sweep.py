"""A running task is never swept, nor is its journal.

``yieldmcp serve tests/fixtures/attack_tools.py --http ... --task-ttl 2`` runs
as a real process; a task's one step runs 5 s, longer than the TTL. The task
is kept while it runs (the client polls it throughout), completes, and its
result is readable. Issue 37: a task's TTL counted from its last change, and
renewing its lease was not one, so the task was swept while its step ran and
the result was lost.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator
from pathlib import Path

import httpx
import pytest
import trio

from tests.bridge.server.tasks.kit import RpcError, TaskWire
from tests.helpers import ROOT
from tests.processes import serving

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

SERVED = str(ROOT / "tests/fixtures/attack_tools.py")
TTL = 2.0
STEP = 5.0


@contextlib.asynccontextmanager
async def _wire(tmp_path: Path, store: str, *flags: str) -> AsyncGenerator[TaskWire]:
    """A ``yieldmcp serve`` of the attack tools with ``flags`` (and a SQLite
    store for ``store="sqlite"``), and a wire to it."""
    if store == "sqlite":
        flags = (*flags, "--store", f"sqlite:{tmp_path / 'store.sqlite3'}")
    async with (
        serving(SERVED, tmp_path, *flags) as (server,),
        httpx.AsyncClient(timeout=30) as http,
    ):
        yield TaskWire(http, server.url)


@pytest.mark.parametrize("store", ["memory", "sqlite"])
async def test_a_task_running_past_its_ttl_completes_and_is_readable(
    tmp_path: Path, store: str
) -> None:
    seen: list[str] = []
    with trio.fail_after(60):
        async with _wire(tmp_path, store, "--task-ttl", str(TTL)) as wire:
            task_id = (await wire.call("slow_step", seconds=STEP))["taskId"]
            try:
                while not seen or seen[-1] not in ("completed", "failed"):
                    seen.append((await wire.get(task_id))["status"])
                    await trio.sleep(0.25)
            except RpcError as refused:
                seen.append(str(refused))
            final = seen[-1]
            result = (await wire.get(task_id))["result"] if final == "completed" else {}
    assert final == "completed", f"the running task went: {final}"
    assert result["content"][0]["text"] == f"slept {STEP:g}"


@pytest.mark.parametrize("store", ["memory", "sqlite"])
async def test_a_step_past_the_ttl_leaves_the_journal_and_runs_nothing_again(
    tmp_path: Path, store: str
) -> None:
    # The lease kept the task's document, but its journal expired a TTL after
    # its last write: swept during the long step, so the round after the
    # question replayed without it and ran the first step again (and a
    # process taking the task on after a kill would have too).
    flags = ["--task-ttl", str(TTL), "--task-lease", "1"]  # a sweep every 0.5 s
    ran = tmp_path / "ran"
    with trio.fail_after(60):
        async with _wire(tmp_path, store, *flags) as wire:
            made = await wire.call("long_then_ask", path=str(ran), seconds=STEP)
            task_id = made["taskId"]
            asked = await wire.until(task_id, "input_required")
            assert asked["status"] == "input_required", asked
            await wire.answer(task_id, "ok", {"action": "accept", "content": {}})
            done = await wire.until(task_id)
    assert done["status"] == "completed", done
    assert done["result"]["content"][0]["text"] == f"first slept {STEP:g} accept"
    assert ran.read_text().split() == ["first"]


@pytest.mark.parametrize("store", ["memory", "sqlite"])
async def test_a_task_answered_late_and_queued_still_has_its_journal(
    tmp_path: Path, store: str
) -> None:
    # tasks/update moved the document's expiry (the answer's time + the TTL)
    # but not the journal's (its last write + a lease + the TTL): a task
    # answered late in its TTL that waited for a place (or for recovery)
    # past the journal's expiry replayed without it and ran its finished
    # step again (a reviewer's script: 4 of 4 runs).
    flags = ["--max-tasks", "1", "--task-ttl", "6", "--task-lease", "1"]
    ran = tmp_path / "ran"
    with trio.fail_after(60):
        async with _wire(tmp_path, store, *flags) as wire:
            made = await wire.call("long_then_ask", path=str(ran), seconds=0)
            task_id = made["taskId"]
            await wire.until(task_id, "input_required")
            parked = trio.current_time()
            await trio.sleep_until(parked + 4.5)
            await wire.call("slow_step", seconds=4.0)  # takes the only place
            await trio.sleep_until(parked + 5.0)
            await wire.answer(task_id, "ok", {"action": "accept", "content": {}})
            done = await wire.until(task_id)  # once the place frees: parked + 8.5
    assert done["status"] == "completed", done
    assert ran.read_text().split() == ["first"]

"""Tasks survive kill -9 of their server: real processes on a real store.

``yieldmcp serve tests/fixtures/task_tools.py --http ... --store sqlite:PATH`` runs as
a subprocess with a one-second task lease. A task is started; the process is
killed with SIGKILL in the middle of a sequence of steps (or while the task
waits on a question); another process on the same store resumes it once the
lease has run out. Each step writes a line to a file: a step that finished
before the kill never runs again.
"""

from __future__ import annotations

import contextlib
import subprocess
from pathlib import Path

import httpx
import pytest
import trio

from tests.bridge.server.tasks.kit import TaskWire
from tests.helpers import ROOT
from tests.processes import kill, one_server

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

SERVED = str(ROOT / "tests/fixtures/task_tools.py")


def _serving(
    store: str, tmp: Path
) -> contextlib.AbstractAsyncContextManager[tuple[str, subprocess.Popen[bytes]]]:
    """``yieldmcp serve`` on a free port with a one-second task lease, ready:
    its URL and process."""
    return one_server(SERVED, tmp, "--store", store, "--task-lease", "1")


def _runs(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()] if path.exists() else []


async def test_kill_9_in_the_middle_of_steps_then_another_process_finishes(
    store_url: str, tmp_path: Path
) -> None:
    counter = tmp_path / "steps.txt"
    async with httpx.AsyncClient(timeout=30) as http:
        async with _serving(store_url, tmp_path) as (url, process):
            wire = TaskWire(http, url)
            with trio.fail_after(60):
                created = await wire.call("counted_steps", path=str(counter), pause=0.5)
                while len(_runs(counter)) < 2:
                    await trio.sleep(0.01)
            kill(process)
        before = _runs(counter)
        assert len(before) < 5  # killed in the middle
        async with _serving(store_url, tmp_path) as (url, _process):
            wire = TaskWire(http, url)
            with trio.fail_after(60):
                done = await wire.until(created["taskId"])
    assert done["status"] == "completed"
    assert done["result"]["content"][0]["text"].startswith("ran 5 steps, total 15")
    runs = _runs(counter)
    assert sorted(set(runs)) == [1, 2, 3, 4, 5]
    for number in before[:-1]:  # the last may have been in flight
        assert runs.count(number) == 1


async def test_kill_9_while_a_task_waits_then_it_is_answered_elsewhere(
    sqlite_url: str, tmp_path: Path
) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        async with _serving(sqlite_url, tmp_path) as (url, process):
            wire = TaskWire(http, url)
            with trio.fail_after(60):
                task_id = (await wire.call("ask_two"))["taskId"]
                waiting = await wire.until(task_id, "input_required")
                first, second = sorted(waiting["inputRequests"])
                answer = {"action": "accept", "content": {"name": "L"}}
                await wire.update(task_id, {first: answer})
                await wire.until(task_id, "input_required")
            kill(process)
        async with _serving(sqlite_url, tmp_path) as (url, _process):
            wire = TaskWire(http, url)
            with trio.fail_after(60):
                still = await wire.get(task_id)
                assert list(still["inputRequests"]) == [second]
                right = {"action": "accept", "content": {"name": "R"}}
                await wire.update(task_id, {second: right})
                done = await wire.until(task_id)
    assert done["result"]["content"][0]["text"] == "L and R"


async def test_two_live_processes_share_a_task(sqlite_url: str, tmp_path: Path) -> None:
    async with (
        httpx.AsyncClient(timeout=30) as http,
        _serving(sqlite_url, tmp_path) as (first, _one),
        _serving(sqlite_url, tmp_path) as (second, _two),
    ):
        on_one, on_two = TaskWire(http, first), TaskWire(http, second)
        with trio.fail_after(60):
            task_id = (await on_one.call("ask_ok"))["taskId"]
            await on_two.until(task_id, "input_required")
            await on_two.answer(task_id, "ok", {"action": "accept", "content": {}})
            done = await on_two.until(task_id)
            seen_by_one = await on_one.get(task_id)
    assert done["result"]["content"][0]["text"] == "answer: accept"
    assert seen_by_one["status"] == "completed"

"""A store that stops answering while a task runs does not take its server
down: the task's runner stops, and the task is resumed once the store is
back (its lease runs out), by the same process.

The store is SQLite, its write lock held by another process for longer than
``--store-timeout`` while the task's step runs: its lease cannot be renewed
nor its step's result written. Before the fix, that StoreError left the
runner's nursery in an ExceptionGroup the tasks service did not catch, and
``yieldmcp serve`` exited, failing every call it served.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
import trio

from tests.bridge.server.tasks.kit import TaskWire
from tests.helpers import ROOT
from tests.processes import serving
from tests.store_servers import sqlite_locked

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

SERVED = str(ROOT / "tests/fixtures/outage_tools.py")


async def test_a_store_outage_during_a_task_leaves_the_server_serving(
    tmp_path: Path,
) -> None:
    store = tmp_path / "store.sqlite3"
    marks = tmp_path / "marks.txt"
    flags = ("--store", f"sqlite:{store}", "--store-timeout", "0.5")
    async with (
        serving(SERVED, tmp_path, *flags, "--task-lease", "1") as [server],
        httpx.AsyncClient(timeout=30) as http,
    ):
        wire = TaskWire(http, server.url)
        created = await wire.call("slow", path=str(marks), seconds=1.5)
        task_id = created["taskId"]
        with trio.fail_after(20):
            while not marks.exists():
                await trio.sleep(0.02)
        with sqlite_locked(store):
            await trio.sleep(1.5)  # renewals and the step's result fail
        assert server.process is not None
        assert server.process.poll() is None, server.said()
        with trio.fail_after(30):
            task = await wire.until(task_id, "completed")
        assert task["status"] == "completed", task
        assert server.process.poll() is None, server.said()

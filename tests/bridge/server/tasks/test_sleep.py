"""A task that sleeps holds nothing: no runner, no lease, no place among the
tasks a process runs; its document says when to wake it, and the alarm of
any server sharing the store wakes it then.

In-process servers on a shared memory store, real HTTP on loopback. What
survives a ``kill -9`` is ``tests/system/test_sleep_restart.py``'s.
"""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import trio

from bridge.durable.tasks import TaskDoc, TaskStatus
from bridge.server import Server
from bridge.server.limits import ServerLimits
from bridge.server.tasks import tasks_of
from bridge.stores import MemoryStore
from tests.bridge.http_kit import served
from tests.bridge.server.tasks.kit import TaskWire
from tests.fixtures import sleep_tools

QUICK = ServerLimits(task_lease=1.0, max_request_sleep=0.1)


async def _sleeping(store: MemoryStore, task_id: str) -> TaskDoc:
    """The task's document once it sleeps with no runner."""
    while True:
        found = store.get("task", task_id)
        if found is not None:
            doc = TaskDoc.from_json(found.value)
            if doc.wake_at is not None and doc.lease is None:
                return doc
        await trio.sleep(0.01)


async def test_a_sleeping_task_holds_no_lease_and_wakes_at_its_deadline(
    tmp_path: Path,
) -> None:
    store = MemoryStore()
    server = Server(sleep_tools.ALL, name="one", store=store, limits=QUICK)
    marks = tmp_path / "marks"
    async with served(server) as url, httpx.AsyncClient(timeout=30) as http:
        wire = TaskWire(http, url)
        with trio.fail_after(30):
            began = time.time()
            # Over the request bound: as a task, it sleeps all the same.
            created = await wire.call("nap", seconds=1.0, path=str(marks))
            task_id = created["taskId"]
            doc = await _sleeping(store, task_id)
            assert doc.status is TaskStatus.WORKING
            assert doc.wake_at is not None
            assert began + 1.0 <= doc.wake_at < began + 3.0
            while task_id in tasks_of(server).running:  # its runner ends...
                await trio.sleep(0.01)
            assert time.time() < doc.wake_at  # ...while the task sleeps on
            assert (await wire.get(task_id))["status"] == "working"
            done = await wire.until(task_id)
            ended = time.time()
    assert done["status"] == "completed", done
    assert done["result"]["content"][0]["text"].startswith("slept 1.0")
    assert doc.wake_at <= ended < doc.wake_at + 2.0  # on time, not a look later
    assert marks.read_text().split() == ["before", "after"]


async def test_another_server_on_the_store_wakes_a_task_whose_server_stopped(
    tmp_path: Path,
) -> None:
    """The server that parked the task stops; the other learns of the
    sleeper at its next look (every half lease) and wakes it."""
    store = MemoryStore()
    one = Server(sleep_tools.ALL, name="one", store=store, limits=QUICK)
    two = Server(sleep_tools.ALL, name="two", store=store, limits=QUICK)
    marks = tmp_path / "marks"
    async with httpx.AsyncClient(timeout=30) as http, served(two) as second:
        async with served(one) as first:
            with trio.fail_after(30):
                created = await TaskWire(http, first).call(
                    "nap", seconds=1.0, path=str(marks)
                )
                await _sleeping(store, created["taskId"])
        with trio.fail_after(30):
            done = await TaskWire(http, second).until(created["taskId"])
    assert done["status"] == "completed", done
    assert marks.read_text().split() == ["before", "after"]


async def test_a_task_asleep_past_its_ttl_is_kept_until_it_wakes(
    tmp_path: Path,
) -> None:
    """Its document and its journal expire a TTL after it wakes, not after
    its last change: the sweep (every half lease) leaves it alone."""
    store = MemoryStore()
    limits = ServerLimits(task_lease=0.2, task_ttl=0.3, max_request_sleep=0.1)
    server = Server(sleep_tools.ALL, name="one", store=store, limits=limits)
    marks = tmp_path / "marks"
    async with served(server) as url, httpx.AsyncClient(timeout=30) as http:
        wire = TaskWire(http, url)
        with trio.fail_after(30):
            created = await wire.call("nap", seconds=1.0, path=str(marks))
            done = await wire.until(created["taskId"])
    assert done["status"] == "completed", done
    assert marks.read_text().split() == ["before", "after"]


async def test_a_sleeping_task_cancelled_stays_cancelled_past_its_wake_up(
    tmp_path: Path,
) -> None:
    store = MemoryStore()
    server = Server(sleep_tools.ALL, name="one", store=store, limits=QUICK)
    marks = tmp_path / "marks"
    async with served(server) as url, httpx.AsyncClient(timeout=30) as http:
        wire = TaskWire(http, url)
        with trio.fail_after(30):
            task_id = (await wire.call("nap", seconds=0.5, path=str(marks)))["taskId"]
            await _sleeping(store, task_id)
            await wire.cancel(task_id)
            await trio.sleep(1.0)  # past its wake-up time
            task = await wire.get(task_id)
    assert task["status"] == "cancelled"
    assert marks.read_text().split() == ["before"]


async def test_with_task_from_step_a_sleep_begins_the_task() -> None:
    """The question is asked in the request; the round that reaches the
    sleep makes the task there, which then sleeps as any task does."""
    server = Server(sleep_tools.ALL, name="one", limits=QUICK)
    async with served(server) as url, httpx.AsyncClient(timeout=30) as http:
        wire = TaskWire(http, url)
        with trio.fail_after(30):
            first = await wire.call("ask_then_nap", seconds=0.5)
            assert first["resultType"] == "input_required"
            params = {
                "name": "ask_then_nap",
                "arguments": {"seconds": 0.5},
                "requestState": first["requestState"],
                "inputResponses": {"ok": {"action": "accept", "content": {}}},
            }
            created = await wire.request("tools/call", params)
            assert created["resultType"] == "task"
            done = await wire.until(created["taskId"])
    assert done["status"] == "completed", done
    assert done["result"]["content"][0]["text"] == "slept on accept"

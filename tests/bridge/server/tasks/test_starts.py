"""A task started while its runner is leaving is run again, not dropped.

``tasks/update`` starts the task's runner after it keeps an answer. A runner
that has just parked the task (it read no answer) is still counted as
running until it ends; a start in that window used to be dropped, and the
task sat ``working`` with no runner until recovery found it, half a lease
(15 s by default) later. The conformance suite's
``tasks-mrtr-partial-fulfillment`` (two answers sent one after the other)
failed on that in CI.
"""

from __future__ import annotations

import httpx
import trio

from bridge.server import Server
from bridge.server.limits import ServerLimits
from bridge.server.tasks.service import Tasks
from tests.bridge.http_kit import served
from tests.bridge.server.tasks.kit import TaskWire
from tests.fixtures import attack_tools as attack
from tests.fixtures import task_tools as tools


async def test_a_start_while_the_runner_leaves_runs_it_again() -> None:
    runs: list[str] = []

    async def run(tasks: Tasks, task_id: str) -> bool:
        runs.append(task_id)
        if len(runs) == 1:
            tasks.start(task_id)  # an answer kept as this runner parks
            await trio.lowlevel.checkpoint()
        return True  # parked

    server = Server(tools.ALL, name="starts")
    with trio.fail_after(10):
        async with server.running():
            tasks = Tasks(server, None, run)
            tasks.start("t1", "caller")
            while "t1" in tasks.running or len(runs) < 2:
                await trio.sleep(0.01)
    assert runs == ["t1", "t1"]
    assert "t1" not in tasks.running
    assert tasks.callers == {"t1": "caller"}  # parked: still its caller's


async def test_starts_before_a_runner_reads_are_one_run_later_ones_another() -> None:
    runs: list[str] = []
    reading = trio.Event()
    go_on = trio.Event()

    async def run(tasks: Tasks, task_id: str) -> bool:
        runs.append(task_id)
        if len(runs) == 1:
            reading.set()
            await go_on.wait()
        return False

    server = Server(tools.ALL, name="starts")
    with trio.fail_after(10):
        async with server.running():
            tasks = Tasks(server, None, run)
            tasks.start("t1")
            tasks.start("t1")  # before its runner began: the same run
            await reading.wait()
            tasks.start("t1")  # while it runs: once more after it
            tasks.start("t1")
            go_on.set()
            while "t1" in tasks.running:
                await trio.sleep(0.01)
            assert runs == ["t1", "t1"]
            tasks.start("t1")  # after it ended: a run of its own
            while "t1" in tasks.running:
                await trio.sleep(0.01)
    assert runs == ["t1", "t1", "t1"]


async def test_an_answer_to_a_full_process_runs_once_a_place_frees() -> None:
    # Its tasks/update said "complete", but a full process started nothing,
    # and nothing started it when a place freed: it sat "working" until the
    # next recovery pass (half a lease, 15 s), or was swept first.
    tools_used = [attack.ask_ok, attack.slow_step]
    server = Server(tools_used, name="full", limits=ServerLimits(max_tasks=1))
    async with served(server) as url, httpx.AsyncClient(timeout=30) as http:
        wire = TaskWire(http, url)
        with trio.fail_after(30):
            asking = (await wire.call("ask_ok"))["taskId"]  # parks: no place
            await wire.until(asking, "input_required")
            running = (await wire.call("slow_step", seconds=1.0))["taskId"]
            await wire.answer(asking, "ok", {"action": "accept", "content": {}})
            assert (await wire.until(running))["status"] == "completed"
        with trio.fail_after(5):  # not half a lease (15 s) later
            done = await wire.until(asking)
    assert done["status"] == "completed"
    assert done["result"]["content"][0]["text"] == "answer: accept"

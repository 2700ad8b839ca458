"""A sleeping task survives kill -9 of its server: real processes on a store.

``yieldmcp serve tests/fixtures/sleep_tools.py --http ... --store URL`` runs
as a subprocess with a one-second task lease. A task marks a line, sleeps
(``ctx.sleep``) and marks another. While it sleeps its document holds no
lease and says when to wake it; the process is killed with SIGKILL during
the sleep, and another on the same store (the same one restarted, or one
already running) wakes the task at the deadline recorded before the kill
and finishes it, the step before the sleep not run again. A live 2025-11-25
call killed during its sleep is taken on by the restarted process, which
waits only for what is left of the sleep.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from bridge.client import Client
from bridge.client.http import http_transport
from bridge.durable.tasks import TaskDoc
from bridge.stores import open_store
from tests.bridge.server.tasks.kit import TaskWire
from tests.helpers import ROOT
from tests.processes import free_port, kill, one_server, ready, url_of

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

SERVED = str(ROOT / "tests/fixtures/sleep_tools.py")
NAP = 2.0  # seconds the task sleeps


def _serving(
    store: str, tmp: Path
) -> contextlib.AbstractAsyncContextManager[tuple[str, subprocess.Popen[bytes]]]:
    """``yieldmcp serve`` on a free port with a one-second task lease, ready:
    its URL and process."""
    return one_server(SERVED, tmp, "--store", store, "--task-lease", "1")


async def _asleep(store_url: str, task_id: str) -> TaskDoc:
    """The task's document, read from the store, once it sleeps: parked with
    a wake-up time and no lease."""
    store = open_store(store_url)
    try:
        while True:
            found = store.get("task", task_id)
            if found is not None:
                doc = TaskDoc.from_json(found.value)
                if doc.wake_at is not None and doc.lease is None:
                    return doc
            await trio.sleep(0.02)
    finally:
        store.close()


def _deadlines(store_url: str, task_id: str) -> list[Any]:
    """The deadlines the task's journal records (timer records)."""
    store = open_store(store_url)
    try:
        return [r["at"] for r in store.read("call", task_id) if "t" in r]
    finally:
        store.close()


async def test_kill_9_while_a_task_sleeps_then_the_restarted_server_wakes_it(
    store_url: str, tmp_path: Path
) -> None:
    marks = tmp_path / "marks"
    async with httpx.AsyncClient(timeout=30) as http:
        async with _serving(store_url, tmp_path) as (url, process):
            with trio.fail_after(60):
                began = time.time()
                created = await TaskWire(http, url).call(
                    "nap", seconds=NAP, path=str(marks)
                )
                task_id = created["taskId"]
                asleep = await _asleep(store_url, task_id)
            kill(process)
        assert asleep.wake_at is not None
        assert asleep.wake_at >= began + NAP
        async with _serving(store_url, tmp_path) as (url, _process):
            with trio.fail_after(60):
                done = await TaskWire(http, url).until(task_id)
                ended = time.time()
    assert done["status"] == "completed", done
    assert ended >= asleep.wake_at
    # The deadline recorded before the kill is the one it woke at, and the
    # step before the sleep ran once.
    assert _deadlines(store_url, task_id) == [asleep.wake_at]
    assert marks.read_text().split() == ["before", "after"]


async def test_a_sleeping_task_is_woken_by_another_process_when_its_own_dies(
    sqlite_url: str, tmp_path: Path
) -> None:
    marks = tmp_path / "marks"
    async with (
        httpx.AsyncClient(timeout=30) as http,
        _serving(sqlite_url, tmp_path) as (second, _other),
    ):
        async with _serving(sqlite_url, tmp_path) as (first, process):
            with trio.fail_after(60):
                created = await TaskWire(http, first).call(
                    "nap", seconds=NAP, path=str(marks)
                )
                task_id = created["taskId"]
                asleep = await _asleep(sqlite_url, task_id)
            kill(process)
        with trio.fail_after(60):
            done = await TaskWire(http, second).until(task_id)
            ended = time.time()
    assert done["status"] == "completed", done
    assert asleep.wake_at is not None
    assert ended >= asleep.wake_at
    assert marks.read_text().split() == ["before", "after"]


LIVE_NAP = 4.0  # seconds: longer than a restart, so what is left is seen


async def test_a_live_2025_call_killed_while_it_sleeps_waits_only_the_rest(
    sqlite_url: str, tmp_path: Path
) -> None:
    """Had the restart started the sleep over, the tool would have slept
    LIVE_NAP from when the restarted process took the call on; it sleeps
    until the deadline recorded before the kill, or not at all if that
    passed while the server was down."""
    marks = tmp_path / "marks"
    port = free_port()
    command = [sys.executable, "-m", "bridge.cli", "serve", SERVED]
    command += ["--http", f"127.0.0.1:{port}", "--store", sqlite_url]
    command += ["--session-lease", "1"]
    outcome: list[Any] = []

    def serve() -> subprocess.Popen[bytes]:
        with (tmp_path / "server.err").open("ab") as err:
            return subprocess.Popen(
                command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err
            )

    process = serve()
    try:
        with trio.fail_after(90):
            await ready(port, process)
            async with (
                http_transport(url_of(port), retry=0.25, max_resumes=200) as wire,
                Client.connect(wire, era="legacy") as client,
                trio.open_nursery() as nursery,
            ):

                async def call() -> None:
                    arguments = {"seconds": LIVE_NAP, "path": str(marks)}
                    outcome.append(await client.call_tool("nap", arguments))

                nursery.start_soon(call)
                while not marks.exists():
                    await trio.sleep(0.01)
                asleep_at = time.time()
                await trio.sleep(0.5)  # its deadline is written meanwhile
                kill(process)
                process = serve()
                await ready(port, process)
                back_at = time.time()
                while not outcome:
                    await trio.sleep(0.05)
    finally:
        kill(process)
    text = outcome[0].content[0].text
    slept = float(text.split()[1])  # "slept 4.01 s (pid ...)"
    assert slept >= LIVE_NAP
    assert slept < max(LIVE_NAP, back_at - asleep_at + 2.5) + 1.0, (
        slept,
        back_at - asleep_at,
    )
    assert marks.read_text().split() == ["before", "after"]

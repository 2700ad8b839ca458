"""``yieldmcp call --task``: a real CLI process against a served server.

The task's status is printed as it changes, its questions are answered from
``--answer``, and Ctrl-C cancels the task and exits 130. (``tasks
get|wait|cancel`` over a server killed and restarted:
tests/system/test_tasks_come_back.py.)
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys

import httpx
import pytest
import trio

from bridge.server import Server
from bridge.server.tasks import tasks_of
from tests.bridge.http_kit import served
from tests.bridge.server.tasks.kit import TaskWire
from tests.fixtures import task_tools as tools
from tests.helpers import ROOT

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

YIELDMCP = [sys.executable, "-m", "bridge.cli"]
CALL = [*YIELDMCP, "call"]


async def test_call_task_shows_the_status_and_answers_the_questions() -> None:
    answers = ["--answer", 'left={"name": "A"}', "--answer", 'right={"name": "B"}']
    async with served(Server(tools.ALL)) as url:
        with trio.fail_after(60):
            done = await trio.run_process(
                [*CALL, url, "ask_two", "--task", "--era", "2026-07-28", *answers],
                cwd=ROOT,
                capture_stdout=True,
                capture_stderr=True,
                check=False,
            )
    out = done.stdout.decode()
    assert done.returncode == 0, done.stderr.decode()
    assert "[task working]" in out
    assert "[task completed]" in out
    assert out.rstrip().endswith("A and B")


async def test_ctrl_c_cancels_the_task_and_exits_130() -> None:
    server = Server(tools.ALL)
    async with served(server) as url:
        command = [*CALL, url, "sleepy", "--arg", "seconds=60", "--task"]
        with trio.fail_after(60):
            process = await trio.lowlevel.open_process(
                command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
            )
            assert process.stdout is not None
            seen = b""
            while b"[task working]" not in seen:
                chunk = await process.stdout.receive_some()
                assert chunk, "the call ended before its task was working"
                seen += chunk
            process.send_signal(signal.SIGINT)
            returncode = await process.wait()
            found = await tasks_of(server).store.scan("task")
    assert returncode == 130
    assert [doc.value["status"] for _id, doc in found] == ["cancelled"]


async def test_a_tool_that_runs_only_as_a_task_says_to_add_task() -> None:
    async with served(Server(tools.ALL)) as url:
        with trio.fail_after(60):
            done = await trio.run_process(
                [*CALL, url, "broken_tool", "--era", "2026-07-28"],
                cwd=ROOT,
                capture_stdout=True,
                capture_stderr=True,
                check=False,
            )
    err = done.stderr.decode().strip()
    assert done.returncode == 1
    assert len(err.splitlines()) == 1
    assert err.endswith("(-32021); the tool runs only as a task: add --task")


async def test_call_task_prints_the_task_s_id_on_stderr() -> None:
    async with served(Server(tools.ALL)) as url:
        with trio.fail_after(60):
            done = await trio.run_process(
                [*CALL, url, "sleepy", "--task", "--json"],
                cwd=ROOT,
                capture_stdout=True,
                capture_stderr=True,
                check=False,
            )
    assert done.returncode == 0, done.stderr.decode()
    [line] = done.stderr.decode().splitlines()
    assert re.fullmatch(r"\[task [0-9a-f]{32}\] created", line)
    assert json.loads(done.stdout)["content"][0]["text"] == "slept 0"


async def test_a_flag_only_tasks_wait_takes_is_a_usage_mistake() -> None:
    words = ["tasks", "get", "http://127.0.0.1:9/mcp", "f00d", "--answer", "a=1"]
    given = await _run(*words)
    assert given.returncode == 2
    assert given.stderr.decode() == (
        "yieldmcp: error: --answer: only for tasks wait, not tasks get (see --help)\n"
    )


async def test_ctrl_c_on_tasks_wait_leaves_the_task_and_tasks_cancel_ends_it() -> None:
    server = Server(tools.ALL)
    async with served(server) as url, httpx.AsyncClient(timeout=30) as http:
        wire = TaskWire(http, url)  # another client made the task
        with trio.fail_after(120):
            sleepy = (await wire.call("sleepy", seconds=60))["taskId"]
            process = await trio.lowlevel.open_process(
                [*YIELDMCP, "tasks", "wait", url, sleepy],
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
            assert process.stdout is not None
            seen = b""
            while b"[task working]" not in seen:
                chunk = await process.stdout.receive_some()
                assert chunk, "tasks wait ended before it showed the task"
                seen += chunk
            process.send_signal(signal.SIGINT)
            stopped = await process.wait()
            still = (await wire.get(sleepy))["status"]
            cancelled = await _run("tasks", "cancel", url, sleepy)
            after = (await wire.get(sleepy))["status"]
            waited = await _run("tasks", "wait", url, sleepy)
    assert stopped == 130
    assert still == "working"  # Ctrl-C stopped the waiting, not the task
    assert cancelled.returncode == 0, cancelled.stderr.decode()
    assert cancelled.stdout.decode() == "[task cancelled]\n"
    assert after == "cancelled"
    assert waited.returncode == 1
    assert waited.stderr.decode() == f"yieldmcp: error: task {sleepy} was cancelled\n"


async def _run(*words: str) -> subprocess.CompletedProcess[bytes]:
    return await trio.run_process(
        [*YIELDMCP, *words],
        cwd=ROOT,
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )

"""Coming back to a task: the CLI follows a task across kill -9 and a restart.

``yieldmcp serve tests/fixtures/task_tools.py --http PORT --store URL`` runs
as a subprocess with a one-second task lease. ``yieldmcp call ... --task``
(another subprocess) prints ``[task ID] created`` on stderr; the server is
killed with SIGKILL while the task waits between its steps (for a file the
test makes, so however slow the machine) and started again on the same port;
the CLI, which kept asking, prints the result and exits 0. The same for
``yieldmcp tasks wait``, and ``tasks get`` by id, on one server for several
assertions (each process start costs a second or two). Ctrl-C on ``tasks
wait`` and ``tasks cancel``: tests/bridge/cli/test_task_options.py.
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import attrs
import httpx
import pytest
import trio

from tests.bridge.server.tasks.kit import TaskWire
from tests.helpers import ROOT
from tests.processes import Serving, serving

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

SERVED = str(ROOT / "tests/fixtures/task_tools.py")
CLI = [sys.executable, "-m", "bridge.cli"]
CREATED = re.compile(r"^\[task ([0-9a-f]+)\] created$", re.MULTILINE)
UNREACHABLE = re.compile("the server cannot be reached")


@contextlib.asynccontextmanager
async def _server(store: str, tmp: Path) -> AsyncIterator[Serving]:
    """``yieldmcp serve`` with a one-second task lease on a free port, ready;
    killed (and started again) at will."""
    async with serving(SERVED, tmp, "--store", store, "--task-lease", "1") as [it]:
        yield it


@attrs.define
class Cli:
    """A ``yieldmcp`` subprocess whose output is read as it comes."""

    process: trio.Process
    out: bytearray = attrs.field(factory=bytearray)
    err: bytearray = attrs.field(factory=bytearray)

    async def wait_for(self, pattern: re.Pattern[str]) -> re.Match[str]:
        while (found := pattern.search(self.err.decode())) is None:
            assert self.process.poll() is None, self.err.decode()
            await trio.sleep(0.02)
        return found


@contextlib.asynccontextmanager
async def _cli(words: Sequence[str]) -> AsyncIterator[Cli]:
    process = await trio.lowlevel.open_process(
        [*CLI, *words], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    cli = Cli(process)

    async def drain(stream: trio.abc.ReceiveStream | None, into: bytearray) -> None:
        assert stream is not None
        while chunk := await stream.receive_some():
            into.extend(chunk)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(drain, process.stdout, cli.out)
        nursery.start_soon(drain, process.stderr, cli.err)
        try:
            yield cli
            await process.wait()
        finally:
            if process.poll() is None:
                process.kill()


def _runs(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()] if path.exists() else []


async def _at_the_gate(gate: Path) -> None:
    """Once the task waits at ``gate``: its first step is recorded."""
    while not gate.with_name(f"{gate.name}.reached").exists():
        await trio.sleep(0.01)


async def _run(*words: str) -> subprocess.CompletedProcess[bytes]:
    return await trio.run_process(
        [*CLI, *words], cwd=ROOT, capture_stdout=True, capture_stderr=True, check=False
    )


async def _run_all(
    *commands: Sequence[str],
) -> list[subprocess.CompletedProcess[bytes]]:
    """Each command run at once; their outcomes, in order."""
    done: list[subprocess.CompletedProcess[bytes] | None] = [None] * len(commands)

    async def one(index: int) -> None:
        done[index] = await _run(*commands[index])

    async with trio.open_nursery() as nursery:
        for index in range(len(commands)):
            nursery.start_soon(one, index)
    return [outcome for outcome in done if outcome is not None]


async def test_call_task_prints_its_id_and_its_result_across_kill_9_and_a_restart(
    store_url: str, tmp_path: Path
) -> None:
    counter, gate = tmp_path / "steps.txt", tmp_path / "gate"
    async with _server(store_url, tmp_path) as server:
        words = [
            "call", server.url, "gated_steps", "--task", "--era", "2026-07-28",
            "--arg", f"path={counter}", "--arg", f"gate={gate}", "--timeout", "110",
        ]  # fmt: skip
        with trio.fail_after(120):  # a loaded machine: 30 s seen
            async with _cli(words) as cli:
                await cli.wait_for(CREATED)
                await _at_the_gate(gate)
                server.kill()
                # Restarted once the client has found it gone: a restart
                # quicker than its poll interval went unseen (CI, once).
                await cli.wait_for(UNREACHABLE)
                server.start()
                await server.ready()
                gate.touch()
    err = cli.err.decode()
    assert cli.process.returncode == 0, err
    assert cli.out.decode().rstrip().splitlines()[-1] == "ran steps 1 and 2"
    assert len(CREATED.findall(err)) == 1
    assert len(UNREACHABLE.findall(err)) == 1  # said once, not each try
    assert _runs(counter) == [1, 2]  # the step recorded before the kill ran once


async def test_tasks_wait_follows_across_kill_9_and_tasks_get_reads_it(
    sqlite_url: str, tmp_path: Path
) -> None:
    counter, gate = tmp_path / "steps.txt", tmp_path / "gate"
    async with (
        _server(sqlite_url, tmp_path) as server,
        httpx.AsyncClient(timeout=30) as http,
    ):
        url, wire = server.url, TaskWire(http, server.url)
        with trio.fail_after(120):
            # wait: answers the task's questions, as call does
            asking = (await wire.call("ask_two"))["taskId"]
            answers = [
                "--answer",
                'left={"name": "A"}',
                "--answer",
                'right={"name": "B"}',
            ]
            waited = await _run("tasks", "wait", url, asking, *answers)
            assert waited.returncode == 0, waited.stderr.decode()
            assert waited.stdout.decode().rstrip().endswith("A and B")

            # get: the status and the result, as text and as JSON; an unknown
            # id: one line, exit 1 (three processes at once: the same server)
            got, as_json, unknown = await _run_all(
                ["tasks", "get", url, asking],
                ["tasks", "get", url, asking, "--json"],
                ["tasks", "get", url, "f00d"],
            )
            assert got.returncode == 0, got.stderr.decode()
            assert got.stdout.decode().splitlines() == ["[task completed]", "A and B"]
            shown = json.loads(as_json.stdout)
            assert shown["status"] == "completed"
            assert shown["result"]["content"][0]["text"] == "A and B"
            assert unknown.returncode == 1
            assert unknown.stderr.decode() == (
                "yieldmcp: error: the server has no task f00d (never made there, "
                "or forgotten after its TTL)\n"
            )

            # wait: across kill -9 and a restart of the server
            gated = await wire.call("gated_steps", path=str(counter), gate=str(gate))
            async with _cli(["tasks", "wait", url, gated["taskId"]]) as cli:
                while b"[task working]" not in cli.out:  # it follows the task
                    await trio.sleep(0.02)
                await _at_the_gate(gate)
                server.kill()
                server.start()
                await server.ready()
                gate.touch()
            assert cli.process.returncode == 0, cli.err.decode()
            assert cli.out.decode().rstrip().splitlines()[-1] == "ran steps 1 and 2"

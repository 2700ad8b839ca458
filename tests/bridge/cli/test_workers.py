"""``yieldmcp serve --http ADDR --workers N``: several processes on one port.

Real processes on a real loopback port: the parent and its workers as a user
runs them. Rounds of one 2026-07-28 call land on different workers (each
request on a fresh connection, which the kernel gives to either) and still
complete, since the workers share the state key; a 2025-11-25 handshake is
refused with an error that says why; Ctrl-C and SIGTERM stop every worker
quietly; a worker that dies is reported and stops the rest.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from bridge.cli.workers import _Supervisor, usable_cpus
from bridge.client import connect
from bridge.elicit import ScriptedAnswers
from bridge.providers import OfflineModel
from tests.bridge.cli.inprocess import yieldmcp
from tests.helpers import ROOT
from tests.processes import Logged, logged_serve

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

SERVED = str(ROOT / "tests/fixtures/worker_tools.py")
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
}


@contextlib.asynccontextmanager
async def workers(count: int = 2, *extra: str) -> AsyncIterator[Logged]:
    async with logged_serve(
        SERVED, "--workers", str(count), *extra, terminate=True
    ) as running:
        assert len(running.pids) == count
        yield running


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, not yet reaped by its parent) is not serving either.
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0] != "Z"


async def _gone(pids: list[int]) -> None:
    with trio.fail_after(20):
        while any(_alive(pid) for pid in pids):
            await trio.sleep(0.05)


async def _post(url: str, body: dict[str, Any], version: str | None) -> httpx.Response:
    """One POST on a new connection, so the kernel picks the worker anew."""
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
    }
    if version is not None:
        headers["mcp-protocol-version"] = version
    if body["method"] == "tools/call":
        headers |= {"mcp-method": "tools/call", "mcp-name": body["params"]["name"]}
    async with httpx.AsyncClient(timeout=30) as http:
        return await http.post(url, content=json.dumps(body), headers=headers)


async def _elicited_call(url: str, request_id: int) -> tuple[int, int]:
    """One ``elicited`` call in two rounds; the pids of the rounds."""
    params: dict[str, Any] = {"name": "elicited", "arguments": {}, "_meta": META}
    body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call"}
    first = (await _post(url, {**body, "params": params}, "2026-07-28")).json()
    assert first["result"]["resultType"] == "input_required", first
    (key,) = first["result"]["inputRequests"]
    params |= {
        "requestState": first["result"]["requestState"],
        "inputResponses": {key: {"action": "accept", "content": {"ok": True}}},
    }
    second = (await _post(url, {**body, "params": params}, "2026-07-28")).json()
    text = second["result"]["content"][0]["text"]
    pids, _, action = text.partition(";")
    assert action == "accept", text
    before, after = (int(p) for p in pids.split(","))
    return before, after


async def test_rounds_of_one_call_complete_on_different_workers() -> None:
    async with workers(2) as running:
        rounds = [await _elicited_call(running.url, n) for n in range(24)]
    seen = {pid for pair in rounds for pid in pair}
    assert seen == set(running.pids)  # both workers served rounds
    # Some call began on one worker and finished on the other: the state
    # sealed by one opened on the other (the chance none does is 2**-24).
    assert any(before != after for before, after in rounds)


async def test_our_client_samples_and_elicits_through_workers() -> None:
    async with (
        workers(2) as running,
        connect(
            running.url,
            sampler=OfflineModel(),
            elicitation=ScriptedAnswers({"confirm": {"ok": True}}),
        ) as client,
    ):
        sampled = await client.call_tool("sampled")
        elicited = await client.call_tool("elicited")
    assert not sampled.is_error
    assert not elicited.is_error
    assert elicited.content[0].text.endswith(";accept")


async def test_the_2025_handshake_is_refused_with_the_reason() -> None:
    initialize = {
        "jsonrpc": "2.0", "id": 7, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "old", "version": "1"}},
    }  # fmt: skip
    async with workers(2) as running:
        response = await _post(running.url, initialize, None)
    assert response.status_code == 400
    error = response.json()
    assert error["id"] == 7
    assert error["error"]["code"] == -32022
    assert error["error"]["data"]["supported"] == ["2026-07-28"]
    assert "sticky routing" in error["error"]["message"]
    assert "session store" in error["error"]["message"]


@pytest.mark.parametrize(("sent", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 0)])
async def test_a_signal_stops_every_worker_quietly(
    sent: signal.Signals, code: int
) -> None:
    async with workers(2) as running:
        running.process.send_signal(sent)
        with trio.fail_after(30):
            assert await running.finish() == code
        await _gone(running.pids)
    assert b"Traceback" not in running.log


async def test_a_worker_that_dies_is_reported_and_stops_the_rest() -> None:
    async with workers(2) as running:
        dead, other = running.pids
        os.kill(dead, signal.SIGKILL)
        with trio.fail_after(30):
            assert await running.finish() == 1
        await _gone([other])
    assert f"worker 0 (pid {dead}) exited with signal 9".encode() in running.log
    assert b"Traceback" not in running.log


async def test_a_stopped_worker_is_killed_reported_and_stops_the_rest() -> None:
    # SIGSTOPped, it still got its share of new connections from the kernel,
    # and their calls hung for ever: nothing watched it but its exit.
    async with workers(2, "--worker-timeout", "1") as running:
        stopped, other = running.pids
        os.kill(stopped, signal.SIGSTOP)
        with trio.fail_after(30):
            assert await running.finish() == 1
        await _gone([stopped, other])
    line = f"yieldmcp: error: worker 0 (pid {stopped}) has not run for "
    [said] = [t for t in running.log.decode().splitlines() if t.startswith(line)]
    assert said.endswith(
        "(stopped, or its event loop blocked; --worker-timeout 1); killing it "
        "and stopping the other workers"
    )
    assert b"exited with" not in running.log  # its kill is not told twice
    assert b"Traceback" not in running.log


async def test_a_parent_stopped_a_while_does_not_kill_its_workers() -> None:
    # Resumed (Ctrl-Z then fg, a debugger), it judged the workers before it
    # read what they had said meanwhile, and killed one most times.
    async with workers(2, "--worker-timeout", "1") as running:
        running.process.send_signal(signal.SIGSTOP)
        await trio.sleep(3)
        running.process.send_signal(signal.SIGCONT)
        await trio.sleep(2)
        assert all(_alive(pid) for pid in running.pids)
        assert running.process.returncode is None
        running.process.send_signal(signal.SIGTERM)
        with trio.fail_after(30):
            assert await running.finish() == 0
    assert b"has not run" not in running.log


async def test_idle_workers_are_heard_and_not_killed() -> None:
    async with workers(2, "--worker-timeout", "1") as running:
        await trio.sleep(3)  # three timeouts with nothing to do
        assert all(_alive(pid) for pid in running.pids)
        rounds = [await _elicited_call(running.url, n) for n in range(4)]
        running.process.send_signal(signal.SIGTERM)
        with trio.fail_after(30):
            assert await running.finish() == 0
    assert {pid for pair in rounds for pid in pair} <= set(running.pids)
    assert b"has not run" not in running.log


async def test_programs_the_served_code_runs_get_no_pipe_of_the_workers() -> None:
    # A program run without close_fds (os.system, say) held the ready pipe and
    # the lifeline for as long as it lived.
    async with workers(2) as running:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
        params = {"name": "inherited", "arguments": {}, "_meta": META}
        answer = await _post(running.url, {**body, "params": params}, "2026-07-28")
        fds = json.loads(answer.json()["result"]["content"][0]["text"])
        running.process.send_signal(signal.SIGTERM)
        with trio.fail_after(30):
            assert await running.finish() == 0
    assert fds == [0, 1, 2, 3]  # stdio, and the descriptor listdir read


@pytest.mark.parametrize("flags", [(), ("--workers", "2")], ids=["one", "workers"])
async def test_a_child_the_served_code_forks_does_not_keep_the_port(
    flags: tuple[str, ...],
) -> None:
    # A forked child kept the listening socket: once the server stopped, the
    # port stayed taken (and, with SO_REUSEPORT, got connections no one took).
    async with logged_serve(SERVED, *flags, terminate=True) as running:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
        params = {"name": "forked", "arguments": {"seconds": 60}, "_meta": META}
        answer = await _post(running.url, {**body, "params": params}, "2026-07-28")
        child = int(answer.json()["result"]["content"][0]["text"])
        try:
            running.process.send_signal(signal.SIGTERM)
            with trio.fail_after(30):
                assert await running.finish() == 0
            assert _alive(child)
            port = int(running.url.rsplit(":", 1)[1].split("/")[0])
            with socket.socket() as again:  # no SO_REUSEPORT: a listener refuses
                again.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                again.bind(("127.0.0.1", port))
        finally:
            os.kill(child, signal.SIGKILL)


async def test_children_the_served_code_forks_stop_on_sigterm() -> None:
    # A forked child kept the server's signal handlers, which only wake its
    # (not running) event loop: SIGTERM did nothing to it, so the end of a
    # `with Pool(...)` block (Pool.terminate) waited for ever and blocked the
    # whole server.
    async with logged_serve(SERVED, terminate=True) as running:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
        params = {"name": "pooled", "arguments": {"count": 10}, "_meta": META}
        with trio.fail_after(30):
            answer = await _post(running.url, {**body, "params": params}, "2026-07-28")
        assert answer.json()["result"]["content"][0]["text"] == "55"
        params = {"name": "forked", "arguments": {"seconds": 60}, "_meta": META}
        answer = await _post(running.url, {**body, "params": params}, "2026-07-28")
        child = int(answer.json()["result"]["content"][0]["text"])
        try:
            os.kill(child, signal.SIGTERM)
            await _gone([child])
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)


async def test_a_workers_lines_are_heard_among_what_else_is_written() -> None:
    # What the served code writes to the ready pipe (by mistake) must neither
    # hide a worker's lines nor be kept without bound.
    supervisor = _Supervisor(["true"], 2, "http://127.0.0.1:1/mcp")
    read, write = os.pipe()
    os.write(write, b"x" * 10_000 + b"r0\n" + b"7b" * 1_000 + b"r1\nb1")
    os.close(write)
    with trio.fail_after(5):
        await supervisor._listen(read)  # pyright: ignore[reportPrivateUsage]
    assert set(supervisor._heard) == {0, 1}  # pyright: ignore[reportPrivateUsage]


@pytest.mark.parametrize("value", ["0.5", "-1", "nan"])
def test_a_worker_timeout_under_a_second_is_one_line_and_exit_1(value: str) -> None:
    done = yieldmcp(
        "serve", SERVED, "--http", "127.0.0.1:0", "--workers", "2",
        "--worker-timeout", value,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "yieldmcp: error: --worker-timeout must be 0 (never) or at least 1 "
        f"second, got {float(value):g}"
    ]


async def _in_flight(running: Logged, started: Path, nursery: trio.Nursery) -> None:
    """A call of ``held`` running on a worker (it touched ``started``)."""
    arguments = {"started": str(started), "seconds": 60}
    params = {"name": "held", "_meta": META, "arguments": arguments}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}

    async def call() -> None:
        with contextlib.suppress(httpx.HTTPError):  # cut: the point of the test
            await _post(running.url, body, "2026-07-28")

    nursery.start_soon(call)
    with trio.fail_after(30):
        while not started.exists():
            await trio.sleep(0.02)


async def test_ctrl_c_during_a_drain_stops_at_once_and_exits_130(
    tmp_path: Path,
) -> None:
    # It killed the workers and exited 0, as if the drain had completed.
    async with workers(2) as running, trio.open_nursery() as nursery:
        await _in_flight(running, tmp_path / "started", nursery)
        running.process.send_signal(signal.SIGTERM)  # a 30 s drain begins
        await trio.sleep(0.5)
        running.process.send_signal(signal.SIGINT)
        with trio.fail_after(20):
            assert await running.finish() == 130
        await _gone(running.pids)
        nursery.cancel_scope.cancel()
    assert b"Traceback" not in running.log


async def test_a_worker_killed_during_a_drain_is_reported_and_the_exit_is_1(
    tmp_path: Path,
) -> None:
    # Its calls were cut; the parent said nothing and exited 0, so a deploy
    # script saw a clean drain.
    async with workers(2) as running, trio.open_nursery() as nursery:
        await _in_flight(running, tmp_path / "started", nursery)
        running.process.send_signal(signal.SIGTERM)
        await trio.sleep(0.5)
        for pid in running.pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        with trio.fail_after(20):
            assert await running.finish() == 1
        nursery.cancel_scope.cancel()
    assert b"exited with signal 9 while stopping" in running.log, running.log
    assert b"Traceback" not in running.log


def test_workers_without_http_is_one_line_and_exit_1() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bridge.cli", "serve", SERVED, "--workers", "2"],
        capture_output=True, cwd=ROOT, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.decode().strip() == (
        "yieldmcp: error: --workers needs --http (stdio has one client)"
    )


@pytest.mark.parametrize("reuse_port", [False, True], ids=["plain", "reuse-port"])
def test_a_port_in_use_is_one_line_and_exit_1(reuse_port: bool) -> None:
    # With SO_REUSEPORT (as another --workers group listens) the parent's
    # bind succeeded: both groups served the port, the kernel sharing the
    # connections between two different servers.
    import socket

    with socket.socket() as taken:
        if reuse_port:
            taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "bridge.cli", "serve", SERVED,
             "--http", f"127.0.0.1:{port}", "--workers", "2"],
            capture_output=True, cwd=ROOT, timeout=60,
        )  # fmt: skip
    assert done.returncode == 1
    lines = done.stderr.decode().strip().splitlines()
    assert lines == [
        f"yieldmcp: error: cannot listen on 127.0.0.1:{port}: address already in use"
    ]


def test_more_workers_than_the_machine_can_run_is_one_line_and_exit_1() -> None:
    # A typo (800 for 8) once started that many processes at once.
    done = yieldmcp("serve", SERVED, "--http", "127.0.0.1:0", "--workers", "99999")
    assert done.returncode == 1
    cpus = usable_cpus()
    assert done.stderr.strip() == (
        f"yieldmcp: error: --workers 99999 is more than 8 per CPU ({cpus} here: "
        f"at most {8 * cpus}); each worker serves many clients at once"
    )


@pytest.mark.parametrize("spec", ["x", "0:1:900:901"], ids=["text", "no-such-fds"])
def test_a_worker_variable_set_by_hand_is_one_line_and_exit_1(spec: str) -> None:
    # It was a traceback (a ValueError unpacking it, or a bad descriptor).
    env = {**os.environ, "YIELDMCP_WORKER": spec}
    done = yieldmcp("serve", SERVED, "--http", "127.0.0.1:0", "--workers", "2", env=env)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "yieldmcp: error: YIELDMCP_WORKER is set, and only a --workers parent "
        "sets it for its workers: unset it"
    ]


_HANGS_IN_WORKERS = """
import os, time
from runtime import tool

if "YIELDMCP_WORKER" in os.environ:
    time.sleep(600)  # the served code, loading for ever in each worker


@tool
def hello() -> str:
    return "hi"
"""


def _children(pid: int) -> list[int]:
    """The processes ``pid`` started, from any of its threads."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(child) for child in (task / "children").read_text().split()]
    return found


@contextlib.asynccontextmanager
async def _group(
    served: Path | str, **streams: Any
) -> AsyncIterator[tuple[subprocess.Popen[bytes], list[int]]]:
    """A --workers 2 parent serving ``served``, once both workers have
    started, and their pids; whatever is left of them is killed after."""
    command = [sys.executable, "-m", "bridge.cli", "serve", str(served)]
    parent = subprocess.Popen(
        [*command, "--http", "127.0.0.1:0", "--workers", "2"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        **{"stderr": subprocess.DEVNULL, **streams},
    )
    kids: list[int] = []
    try:
        with trio.fail_after(60):
            while len(kids := _children(parent.pid)) < 2:
                await trio.sleep(0.05)
        yield parent, kids
    finally:
        parent.kill()
        parent.wait()
        for pid in kids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("how", ["kill", "interrupt"])
async def test_workers_still_loading_the_served_code_exit_with_their_parent(
    how: str, tmp_path: Path
) -> None:
    # The lifeline was watched only once a worker served: one whose served
    # code never finished loading outlived a kill -9 of its parent. Ctrl-C
    # then stops them as quietly as serving workers: exit 130, nothing said.
    served = tmp_path / "hangs_in_workers.py"
    served.write_text(_HANGS_IN_WORKERS)
    async with _group(served, stderr=subprocess.PIPE) as (parent, kids):
        await trio.sleep(2)  # both in the served code's sleep by now
        assert all(_alive(pid) for pid in kids)
        if how == "kill":
            parent.kill()
            parent.wait()
        else:
            parent.send_signal(signal.SIGINT)
            _, err = parent.communicate(timeout=30)
            assert (parent.returncode, err) == (130, b"")
        await _gone(kids)


_HOLDS_THE_GIL_IN_WORKERS = """
import os
from runtime import tool

if "YIELDMCP_WORKER" in os.environ:
    sum(range(10**13))  # one C call, the GIL held: no thread of ours can run


@tool
def hello() -> str:
    return "hi"
"""


@pytest.mark.parametrize("how", ["holding-the-gil", "stopped"])
async def test_workers_no_thread_can_run_in_die_with_their_parent(
    how: str, tmp_path: Path
) -> None:
    # The lifeline is watched by a thread: one cannot run in a worker whose
    # served code holds the GIL at import, nor in a stopped one, and both
    # outlived a kill -9 of their parent (the stopped one keeping its share
    # of the port). The kernel now kills a worker whose parent died.
    if how == "holding-the-gil":
        served = tmp_path / "holds_the_gil.py"
        served.write_text(_HOLDS_THE_GIL_IN_WORKERS)
    else:
        served = Path(SERVED)
    async with _group(served) as (parent, kids):
        await trio.sleep(3)  # in the served code's C call, or serving
        if how == "stopped":
            for pid in kids:
                os.kill(pid, signal.SIGSTOP)
        assert all(_alive(pid) for pid in kids)
        parent.kill()
        parent.wait()
        await _gone(kids)

"""A real load balancer in front of two workers: HAProxy, round-robin, no stickiness.

HAProxy (the Debian package; ``.ci/run`` installs it) listens on loopback
and sends each request to the next of two ``yieldmcp serve --http``
processes. In the 2026-07-28 era they share only ``YIELDMCP_STATE_KEY``: our
client makes a sampling call and an elicitation call through it; each call's
two rounds land on different workers (the tools record each round's pid in a
step, carried in the sealed journal) and complete.

In the 2025-11-25 era they share a store (``--store sqlite:...``): the session
opened on one worker is taken on by the other, the answers to a call's
questions land on the worker that does not hold the call and are routed to the
one that does, and a worker killed (SIGKILL) mid-call does not lose its call:
the other takes it on when the client resumes.
"""

from __future__ import annotations

import contextlib
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

from bridge.client import Client, connect
from bridge.client.http import http_transport
from bridge.durable.presence import INBOX, WORKERS
from bridge.elicit import ScriptedAnswers
from bridge.providers import OfflineModel
from bridge.server.state_token import new_key
from bridge.stores import open_store
from tests.helpers import ROOT
from tests.system.balancer import CONFIG, HAPROXY
from tests.system.parking import Parking

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

SERVED = str(ROOT / "tests/fixtures/worker_tools.py")
SESSION_TOOLS = str(ROOT / "tests/fixtures/session_tools.py")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def _ready(url: str) -> None:
    async with httpx.AsyncClient() as http:
        with trio.fail_after(60):
            while True:
                try:
                    await http.get(url)
                except httpx.TransportError:
                    await trio.sleep(0.05)
                else:
                    return


@contextlib.asynccontextmanager
async def _balanced(
    tmp: Path,
    served: str = SERVED,
    store: str | None = None,
    workers: list[subprocess.Popen[bytes]] | None = None,
) -> AsyncIterator[str]:
    """Two workers behind HAProxy (sharing ``store`` if given; their
    processes appended to ``workers``); the URL of HAProxy's endpoint."""
    if HAPROXY is None:
        print("haproxy is not installed (apt-get install -y haproxy): skipping")
        pytest.skip("haproxy is not installed (apt-get install -y haproxy)")
    key = new_key()
    ports = [_free_port() for _ in range(3)]
    config = tmp / "haproxy.cfg"
    config.write_text(CONFIG.format(port=ports[0], one=ports[1], two=ports[2]))
    env = {**os.environ, "YIELDMCP_STATE_KEY": key}
    stored = [] if store is None else ["--store", store]
    processes = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "bridge.cli",
                "serve",
                served,
                "--http",
                f"127.0.0.1:{port}",
                *stored,
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for port in ports[1:]
    ]
    if workers is not None:
        workers.extend(processes)
    processes.append(
        subprocess.Popen([HAPROXY, "-db", "-f", str(config)], stdout=subprocess.DEVNULL)
    )
    try:
        for port in ports[1:]:
            await _ready(f"http://127.0.0.1:{port}/mcp")
        await _ready(f"http://127.0.0.1:{ports[0]}/mcp")
        yield f"http://127.0.0.1:{ports[0]}/mcp"
    finally:
        for process in processes:
            if process.poll() is None:
                process.terminate()
        for process in processes:
            process.wait(timeout=20)


def _pids(text: str) -> tuple[int, int]:
    before, after = text.partition(";")[0].split(",")
    return int(before), int(after)


async def test_sampling_and_elicitation_complete_across_balanced_workers(
    tmp_path: Path,
) -> None:
    async with (
        _balanced(tmp_path) as url,
        connect(
            url,
            era="2026-07-28",
            sampler=OfflineModel(),
            elicitation=ScriptedAnswers({"confirm": {"ok": True}}),
        ) as client,
    ):
        sampled = await client.call_tool("sampled")
        elicited = await client.call_tool("elicited")
    assert not sampled.is_error, sampled
    assert not elicited.is_error, elicited
    sampled_text = sampled.content[0].text
    elicited_text = elicited.content[0].text
    assert elicited_text.endswith(";accept")
    # Round-robin with no stickiness: each call's second round went to the
    # worker that did not seal its state.
    before, after = _pids(sampled_text)
    assert before != after, sampled_text
    before, after = _pids(elicited_text)
    assert before != after, elicited_text


# --- 2025-11-25: sessions across workers through a store ----------------------------


def _inbox_records(store: str) -> int:
    """Answers routed from one worker to another so far (while both live)."""
    opened = open_store(store)
    try:
        workers = [worker for worker, _doc in opened.scan(WORKERS)]
        return sum(len(opened.read(INBOX, worker)) for worker in workers)
    finally:
        opened.close()


async def test_2025_sessions_work_across_balanced_workers_sharing_a_store(
    tmp_path: Path, sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SESSION_TOOLS_COUNTER", str(tmp_path / "steps"))
    with trio.fail_after(120):
        async with _balanced(tmp_path, SESSION_TOOLS, sqlite_url) as url:
            async with connect(
                url,
                era="legacy",
                sampler=OfflineModel(),
                elicitation=ScriptedAnswers(
                    {"name": {"name": "Bo"}, "colour": {"colour": "red"}}
                ),
            ) as client:
                assert client.era != "2026-07-28"
                summary = await client.call_tool("summarise")
                interview = await client.call_tool("interview")
            routed = _inbox_records(sqlite_url)
    assert not summary.is_error, summary
    assert summary.content[0].text.startswith("summary: ")
    assert interview.content[0].text == "hello Bo, who likes red"
    assert (tmp_path / "steps").read_text().split("\n")[:-1] == ["greet Bo"]
    # Round-robin: some answer reached the worker not holding its call.
    assert routed >= 1


async def test_a_worker_killed_mid_call_does_not_lose_the_call(
    tmp_path: Path, sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    pids = tmp_path / "pids"
    monkeypatch.setenv("SESSION_TOOLS_COUNTER", str(tmp_path / "steps"))
    monkeypatch.setenv("SESSION_TOOLS_PIDS", str(pids))
    handler = Parking("name", {"name": "Ada"}, {"colour": "green"})
    workers: list[subprocess.Popen[bytes]] = []
    outcome: list[Any] = []
    with trio.fail_after(120):
        async with (
            _balanced(tmp_path, SESSION_TOOLS, sqlite_url, workers) as url,
            http_transport(url, retry=0.25, max_resumes=200) as wire,
            Client.connect(wire, era="legacy", elicitation=handler) as client,
            trio.open_nursery() as nursery,
        ):

            async def run() -> None:
                outcome.append(await client.call_tool("interview"))

            nursery.start_soon(run)
            await handler.parked.wait()
            holder = int(pids.read_text().split()[0])
            victim = next(w for w in workers if w.pid == holder)
            os.kill(victim.pid, signal.SIGKILL)
            victim.wait(timeout=30)
            handler.release.set()
            while not outcome:
                await trio.sleep(0.05)
    assert outcome[0].content[0].text == "hello Ada, who likes green"
    assert handler.asked == ["name", "colour"]  # no question asked twice
    assert (tmp_path / "steps").read_text().split("\n")[:-1] == ["greet Ada"]
    ran = [int(pid) for pid in pids.read_text().split()]
    assert ran[0] == holder
    assert ran[1:]
    assert all(pid != holder for pid in ran[1:])

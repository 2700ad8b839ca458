"""``yieldmcp dev``'s mistakes a user can make: one line each, never a traceback."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
from pathlib import Path

import httpx

from tests.helpers import ROOT

TOOLS = ROOT / "tests/fixtures/dev_tools.py"
DEV = [sys.executable, "-m", "bridge.cli", "dev"]


def _dev(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bridge.cli", "dev", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


def test_a_busy_port_is_one_line() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _dev(str(TOOLS), "--port", str(port))
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"yieldmcp: error: cannot listen on 127.0.0.1:{port}: address already in use"
    ], done.stderr


def test_a_file_that_does_not_load_is_one_line(tmp_path: Path) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("x = (\n")
    done = _dev(str(broken))
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"yieldmcp: error: cannot load {broken}: SyntaxError: '(' was never "
        "closed (broken.py, line 1)"
    ], done.stderr


_TRIP = {"traveller": "Ada", "budget": 1, "stay": {"city": "Faro"}}


def test_the_page_keeps_the_last_calls_and_bounds_a_body() -> None:
    process = subprocess.Popen(
        [*DEV, str(TOOLS), "--keep-calls", "2", "--max-body", "200"],
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    assert process.stderr is not None
    try:
        line = process.stderr.readline().decode()
        found = re.search(r"open (http://127\.0\.0\.1:\d+/\S+)/\?token=(\S+)", line)
        assert found, line
        with httpx.Client(base_url=found[1]) as http:
            assert http.get(f"/?token={found[2]}").status_code == 303
            for _ in range(3):
                made = http.post("/api/run", json={"tool": "plan", "arguments": _TRIP})
                assert made.status_code == 200
            kept = [run["id"] for run in http.get("/api/state").json()["runs"]]
            assert len(kept) == 2
            assert kept == sorted(kept)[-2:]  # the last two
            big = {"tool": "plan", "arguments": {"traveller": "x" * 300}}
            refused = http.post("/api/run", json=big)
            assert refused.status_code == 400
            assert refused.text == "a JSON object of at most 200 bytes"
    finally:
        process.terminate()
        process.wait(timeout=30)
        process.stderr.close()


async def test_a_run_the_page_drops_is_cancelled_not_left_waiting() -> None:
    # Past --keep-calls the page forgets a run, so its question can never be
    # answered: 3,000 runs left 2,995 waiting for ever (+140 MiB).
    import trio
    import trio.testing

    from bridge.cli.dev import DevApp
    from bridge.cli.loader import load_server

    server = load_server(str(TOOLS))
    app = DevApp(server, keep_calls=2)
    with trio.fail_after(30):
        async with server.running(), trio.open_nursery() as nursery:
            app.nursery = nursery
            runs = [
                app.start_run("book", {"city": "Lisbon"}, "legacy") for _ in range(5)
            ]
            while not all(run.questions for run in runs[-2:]):
                await trio.sleep(0.01)
            await trio.testing.wait_all_tasks_blocked()
            assert sorted(app.runs) == [runs[-2].number, runs[-1].number]
            assert len(nursery.child_tasks) == 2  # the dropped three ended
            assert all(run.scope.cancel_called for run in runs[:3])
            nursery.cancel_scope.cancel()

"""A stdio server and a host that misbehaves: one that never reads stdout,
one that closes stdin mid-call. Real subprocesses, real pipes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import ROOT

SERVE = [sys.executable, "-m", "bridge.cli", "serve"]
GAME = str(ROOT / "examples/ttt.py")
TICKING = str(ROOT / "tests/fixtures/ticking_tools.py")
SLOW = str(ROOT / "tests/fixtures/slow_tools.py")
MIB = 1024 * 1024
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "0"},
}


def _frame(message: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n"


def _initialize(request_id: int = 0) -> bytes:
    params = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    }
    return _frame({"id": request_id, "method": "initialize", "params": params})


def _rss_mib(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    line = next(row for row in status.splitlines() if row.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


def _serve(target: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [*SERVE, target],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )


def _flood(process: subprocess.Popen[bytes], request: Callable[[int], bytes]) -> float:
    """Write requests and never read a reply, until the server stops reading
    (the pipe stays full for 3 s); the server's peak resident MiB meanwhile."""
    assert process.stdin is not None
    fd = process.stdin.fileno()
    os.set_blocking(fd, False)
    peak, pending, next_id = 0.0, b"", 1000
    stalled_since: float | None = None
    give_up = time.monotonic() + 120
    while time.monotonic() < give_up:
        if not pending:
            pending = b"".join(request(i) for i in range(next_id, next_id + 1000))
            next_id += 1000
        try:
            pending = pending[os.write(fd, pending) :]
            stalled_since = None
        except BlockingIOError:
            now = time.monotonic()
            stalled_since = stalled_since or now
            peak = max(peak, _rss_mib(process.pid))
            if now - stalled_since > 3:
                return max(peak, _rss_mib(process.pid))
            time.sleep(0.02)
    pytest.fail(f"the server read every request for 120 s (at {next_id})")


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
def test_a_host_that_never_reads_keeps_the_server_under_its_bound(era: str) -> None:
    # tools/list is answered in a task in 2025-11-25: replies being computed
    # for requests already read count against --stdio-output-bytes (4 MiB),
    # not only replies queued, so the server stops reading stdin in time.
    process = _serve(GAME)
    assert process.stdin is not None
    assert process.stdout is not None
    try:
        if era == "legacy":
            process.stdin.write(_initialize())
            process.stdin.write(_frame({"method": "notifications/initialized"}))
            params: dict[str, Any] = {}
        else:
            params = {"_meta": MODERN_META}
            discover = {"id": 0, "method": "server/discover", "params": params}
            process.stdin.write(_frame(discover))
        process.stdin.flush()
        assert json.loads(process.stdout.readline())["id"] == 0
        time.sleep(0.5)
        baseline = _rss_mib(process.pid)
        peak = _flood(
            process,
            lambda i: _frame({"id": i, "method": "tools/list", "params": params}),
        )
    finally:
        process.kill()
        process.wait(timeout=10)
        process.stdin.close()
        process.stdout.close()
    assert peak < baseline + 64, f"{peak:.0f} MiB, baseline {baseline:.0f} MiB"


def test_requests_reusing_an_id_in_flight_stay_under_the_bound() -> None:
    # Each is refused (-32600, the id is in use); the refusal is written, or
    # queued where --stdio-output-bytes counts it. It was a task apiece,
    # blocked on the host that never reads, outside every bound: +255 MiB.
    process = _serve(SLOW)
    assert process.stdin is not None
    assert process.stdout is not None
    try:
        params = {
            "protocolVersion": "2025-11-25",
            "capabilities": {"sampling": {}},
            "clientInfo": {"name": "test", "version": "0"},
        }
        process.stdin.write(_frame({"id": 0, "method": "initialize", "params": params}))
        process.stdin.write(_frame({"method": "notifications/initialized"}))
        call = {"name": "waits", "arguments": {}}
        process.stdin.write(
            _frame({"id": "dup", "method": "tools/call", "params": call})
        )
        process.stdin.flush()
        assert json.loads(process.stdout.readline())["id"] == 0
        time.sleep(0.5)  # the call has asked its question: "dup" is in flight
        baseline = _rss_mib(process.pid)
        peak = _flood(process, lambda i: _frame({"id": "dup", "method": "ping"}))
    finally:
        process.kill()
        process.wait(timeout=10)
        process.stdin.close()
        process.stdout.close()
    assert peak < baseline + 64, f"{peak:.0f} MiB, baseline {baseline:.0f} MiB"


def test_after_stdin_closes_no_progress_is_written() -> None:
    # The tool ticks every 50 ms for 10 s; the host closes stdin after three
    # ticks. The call may finish or be cancelled within the 5 s drain, but
    # the notices stop: the host has gone.
    process = _serve(TICKING)
    assert process.stdin is not None
    assert process.stdout is not None
    stdout = process.stdout
    arrivals: list[tuple[float, dict[str, Any]]] = []
    three_ticks = threading.Event()

    def read() -> None:
        for line in stdout:
            message = json.loads(line)
            arrivals.append((time.monotonic(), message))
            ticks = [
                m for _, m in arrivals if m.get("method") == "notifications/progress"
            ]
            if len(ticks) >= 3:
                three_ticks.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    call = {
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "tick",
            "arguments": {"n": 200, "every": 0.05},
            "_meta": {"progressToken": "t"},
        },
    }
    process.stdin.write(
        _initialize(0) + _frame({"method": "notifications/initialized"})
    )
    process.stdin.write(_frame(call))
    process.stdin.flush()
    try:
        assert three_ticks.wait(60), arrivals
        process.stdin.close()
        closed = time.monotonic()
        status = process.wait(timeout=30)
        exited = time.monotonic()
        reader.join(10)
    finally:
        process.kill()
        process.wait(timeout=10)
        stdout.close()
    late = [
        round(at - closed, 3)
        for at, message in arrivals
        if message.get("method") == "notifications/progress" and at - closed > 0.25
    ]
    assert late == [], f"progress written this long after stdin closed: {late}"
    assert status == 0
    assert exited - closed < 9  # the 5 s drain, then the call is cancelled

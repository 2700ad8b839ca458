"""``yieldmcp dev``'s mistakes a user can make: one line each, never a traceback."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

from tests.helpers import ROOT

HERE = Path(__file__).parent


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
        done = _dev(str(ROOT / "tests/fixtures/dev_tools.py"), "--port", str(port))
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

"""Running store code in another OS process, for the cross-process tests."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.helpers import ROOT


def start_python(code: str, *args: str) -> subprocess.Popen[str]:
    """Start ``python -c code args...`` from the repository root."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(process: subprocess.Popen[str], timeout: float = 120) -> str:
    """Wait for the process; its stdout. Fails the test when it failed."""
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, err
    return out

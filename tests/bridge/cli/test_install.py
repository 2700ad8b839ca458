"""``yieldmcp`` from a plain (non-editable) install, away from the repository."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.helpers import ROOT

PIP = [sys.executable, "-m", "pip", "install", "-q", "--no-deps"]
DEMO = [sys.executable, "-m", "bridge.cli", "demo", "--seed", "1"]


def test_the_demo_runs_from_a_plain_install_without_the_examples(
    tmp_path: Path,
) -> None:
    target = tmp_path / "site"
    subprocess.run(
        [*PIP, "--target", str(target), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    assert not (target / "examples").exists()
    answers = ROOT / "examples" / "ttt_moves.json"
    done = subprocess.run(
        [*DEMO, "--answers", str(answers)],
        capture_output=True,
        text=True,
        cwd=tmp_path,  # not the repository: only the install is importable
        env={**os.environ, "PYTHONPATH": str(target)},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "outcome:" in done.stdout

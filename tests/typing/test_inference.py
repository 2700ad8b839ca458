"""``x = yield from effect`` is typed: pyright infers each result's type."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent

EXPECTED = [
    "SampleResult[None]",
    "Move | None",
    "Move",
    "Move | None",
    "int",
    "str",
    "float",
]


PYRIGHT = shutil.which(
    "pyright", path=str(Path(sys.executable).parent)
) or shutil.which("pyright")


@pytest.mark.skipif(PYRIGHT is None, reason="pyright is not installed (dev extra)")
def test_pyright_infers_effect_results() -> None:
    assert PYRIGHT is not None
    pyright = PYRIGHT
    completed = subprocess.run(
        [
            pyright,
            "--outputjson",
            "--pythonpath",
            sys.executable,
            str(HERE / "inference.py"),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    report = json.loads(completed.stdout)
    revealed = [
        d["message"].split('"')[3]
        for d in report["generalDiagnostics"]
        if d["message"].startswith("Type of")
    ]
    errors = [d for d in report["generalDiagnostics"] if d["severity"] == "error"]
    assert errors == []
    assert revealed == EXPECTED

"""``x = yield from effect`` is typed: pyright infers each result's type.

``inference.py`` marks what pyright must say about it: each ``reveal_type``
line ends in ``# expect-type: T``, each line that must be a type error in
``# expect-error``. pyright is a dev dependency (the ``dev`` extra), so a
missing pyright fails this test rather than skipping it.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent
SOURCE = HERE / "inference.py"

PYRIGHT = shutil.which(
    "pyright", path=str(Path(sys.executable).parent)
) or shutil.which("pyright")

EXPECT_TYPE = re.compile(r"#\s*expect-type:\s*(.+?)\s*$")
EXPECT_ERROR = re.compile(r"#\s*expect-error\s*$")


def _expectations() -> tuple[dict[int, str], set[int]]:
    types: dict[int, str] = {}
    errors: set[int] = set()
    for number, line in enumerate(SOURCE.read_text().splitlines(), start=1):
        if found := EXPECT_TYPE.search(line):
            types[number] = found.group(1)
        if EXPECT_ERROR.search(line):
            errors.add(number)
    return types, errors


def _pyright_report() -> dict[str, Any]:
    if PYRIGHT is None:
        pytest.fail(
            "pyright is not installed, so the inferred types cannot be checked; "
            "it is a dev dependency: pip install -e '.[dev]'"
        )
    completed = subprocess.run(
        [PYRIGHT, "--outputjson", "--pythonpath", sys.executable, str(SOURCE)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    try:
        return json.loads(completed.stdout)
    except ValueError:
        pytest.fail(f"pyright gave no JSON report: {completed.stderr[-2000:]}")


def _line(diagnostic: dict[str, Any]) -> int:
    return int(diagnostic["range"]["start"]["line"]) + 1


def test_every_reveal_type_has_an_expectation() -> None:
    types, errors = _expectations()
    assert len(types) == SOURCE.read_text().count("reveal_type(") > 0
    assert errors


def test_pyright_infers_effect_results_and_keyed_handler_types() -> None:
    types, expected_errors = _expectations()
    diagnostics = _pyright_report()["generalDiagnostics"]
    revealed = {
        _line(d): d["message"].split('"')[3]
        for d in diagnostics
        if d["message"].startswith("Type of")
    }
    errors = {_line(d): d["message"] for d in diagnostics if d["severity"] == "error"}
    assert revealed == types
    assert sorted(errors) == sorted(expected_errors), errors

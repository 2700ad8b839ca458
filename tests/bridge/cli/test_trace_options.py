"""``call --trace FILE.html`` says where it wrote the picture."""

from __future__ import annotations

from pathlib import Path

from tests.bridge.cli.inprocess import yieldmcp
from tests.helpers import ROOT, STARTUP

TRACED = f"yieldmcp serve {ROOT / 'tests/fixtures/traced_tools.py'}"


def test_trace_says_where_it_wrote_the_picture(tmp_path: Path) -> None:
    done = yieldmcp(
        "call", TRACED, "debate", "--arg", "topic=tea", "--trace", "call.html",
        "--connect-timeout", f"{STARTUP}",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    written = tmp_path / "call.html"
    assert done.stderr.splitlines()[-1] == f"trace written to {written}"
    assert "<svg" in written.read_text()


def test_a_failed_call_still_says_where_its_picture_is(tmp_path: Path) -> None:
    path = tmp_path / "failed.html"
    done = yieldmcp(
        "call", TRACED, "no_such_tool", "--trace", str(path),
        "--connect-timeout", f"{STARTUP}",
    )  # fmt: skip
    assert done.returncode == 1
    assert f"trace written to {path}" in done.stderr.splitlines()

"""``call --trace FILE.html`` says where it wrote the picture."""

from __future__ import annotations

import os
import stat
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


def test_a_link_or_fifo_planted_at_the_trace_path_is_refused_at_once(
    tmp_path: Path,
) -> None:
    # In a folder others can write to (/tmp, where call.html is a name anyone
    # can guess), a link there would have the page written into the file it
    # names, and a FIFO would block the call for ever.
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    (tmp_path / "call.html").symlink_to(victim)
    os.mkfifo(tmp_path / "fifo.html")
    for name, reason in [
        ("call.html", "it is a symbolic link"),
        ("fifo.html", "it is not a regular file"),
    ]:
        done = yieldmcp("call", TRACED, "debate", "--trace", name, cwd=tmp_path)
        assert done.returncode == 1
        assert done.stderr.strip().splitlines() == [
            f"yieldmcp: error: cannot write --trace {name}: {reason}"
        ]
    assert victim.read_text() == "keep me"


def test_a_link_planted_during_the_call_is_replaced_not_followed(
    tmp_path: Path,
) -> None:
    from bridge.cli.whole_file import write_whole

    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    victim.chmod(0o644)
    page = tmp_path / "call.html"
    page.symlink_to(victim)
    write_whole(page, "<svg/>")
    assert victim.read_text() == "keep me"
    assert not page.is_symlink()
    assert page.read_text() == "<svg/>"
    assert stat.S_IMODE(page.stat().st_mode) == 0o600  # not the link target's
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []

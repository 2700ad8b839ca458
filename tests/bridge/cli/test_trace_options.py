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


def test_the_picture_keeps_at_most_max_notices_and_says_so() -> None:
    # A server that logs without end grew the client and the page without
    # bound: 80,000 notices of 2 KB, a 183 MB page and 711 MB of memory.
    from bridge.cli.trace_record import MAX_NOTICES, WireRecorder
    from bridge.jsonrpc import Notification

    recorder = WireRecorder("call chatty", max_notices=3)
    tap = recorder.factory(None, None)
    for n in range(50):
        params = {"level": "info", "data": f"line {n}"}
        tap.notified(Notification("notifications/message", params))
    bars = recorder.timeline.bars
    assert [bar.question["data"] for bar in bars] == ["line 0", "line 1", "line 2"]
    assert bars[-1].label == "notices after this 3 are left out"
    assert recorder.notices == 50
    assert WireRecorder("call").max_notices == MAX_NOTICES == 2000


def test_trace_max_notices_bounds_a_traced_calls_picture(tmp_path: Path) -> None:
    done = yieldmcp(
        "call", TRACED, "debate", "--arg", "topic=tea", "--trace", "call.html",
        "--trace-max-notices", "1", "--connect-timeout", f"{STARTUP}",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "notices after this 1 are left out" in (tmp_path / "call.html").read_text()


def test_a_notice_is_kept_in_part() -> None:
    # Each of 2,000 notices was kept whole: 100 log lines of 4 MB made a
    # 400 MB page and 1.2 GB of memory.
    from bridge.cli.trace_record import MAX_NOTICE_KEPT, WireRecorder
    from bridge.jsonrpc import Notification

    recorder = WireRecorder("call chatty")
    tap = recorder.factory(None, None)
    small = {"level": "info", "data": "short"}
    tap.notified(Notification("notifications/message", small))
    tap.notified(Notification("notifications/message", {"data": "x" * 4_000_000}))
    kept, cut = (bar.question for bar in recorder.timeline.bars)
    assert kept == small
    assert list(cut) == ["cut"]
    assert cut["cut"].startswith('{"data": "xxx')
    more = 4_000_000 + len('{"data": ""}') - MAX_NOTICE_KEPT
    assert cut["cut"].endswith(f"x… ({more:,} more characters)")
    assert len(cut["cut"]) < MAX_NOTICE_KEPT + 40


def test_a_key_from_the_wire_too_long_or_deep_to_draw_is_the_root_lanes() -> None:
    # One notice whose effect key was "1.0/" * 8000 + "1" (32 KB) drew 8,000
    # lanes, each nearly as long: 27 s and 1.3 GB to write the page, after
    # the call and outside --timeout.
    from bridge.cli.trace_record import MAX_KEY, MAX_KEY_LEVELS, WireRecorder
    from bridge.jsonrpc import Notification
    from runtime.picture import page

    recorder = WireRecorder("call deep")
    tap = recorder.factory(None, None)
    keys = ["1.0/" * 8000 + "1", "1.0/" * (MAX_KEY_LEVELS + 1) + "1"]
    keys += ["7" * (MAX_KEY + 1), "1.0/" * MAX_KEY_LEVELS + "2", "0"]
    for key in keys:
        meta = {"io.yieldmcp/effect": key}
        tap.notified(Notification("notifications/message", {"_meta": meta}))
    drawn = [bar.key for bar in recorder.timeline.bars]
    assert drawn == ["?0", "?1", "?2", keys[3], "0"]
    lanes = recorder.timeline.lanes()
    assert len(lanes) == MAX_KEY_LEVELS + 1  # the root and the deepest key's
    assert len(page(recorder.timeline)) < 200_000


def test_the_questions_of_many_rounds_are_bounded_and_kept_in_part() -> None:
    # A 2026-07-28 server's rounds were kept whole and drawn each: 40 rounds
    # of 15 questions of 1 MB made a 600 MB page (1.8 GB of memory), and
    # 6,336 small questions, each in lanes of its own, a page that took 20 s
    # and 2 GB of Chromium to open.
    from bridge.cli.trace_record import MAX_NOTICE_KEPT, MAX_QUESTIONS, WireRecorder

    recorder = WireRecorder("call asking")
    tap = recorder.factory(None, None)
    rounds = MAX_QUESTIONS // 10 + 5
    for number in range(rounds):
        tap.outgoing(number, "tools/call", {"name": "t"})
        asked = {
            f"q{number}.{n}": {
                "method": "elicitation/create",
                "params": {"message": "m" * 100_000, "requestedSchema": {}},
            }
            for n in range(10)
        }
        result = {"resultType": "input_required", "inputRequests": asked}
        tap.settled(number, result, None)
    bars = recorder.timeline.bars
    assert len(bars) == MAX_QUESTIONS
    assert bars[-1].label.endswith(f"questions after this {MAX_QUESTIONS} are left out")
    assert recorder.questions == rounds * 10
    assert all(list(bar.question) == ["cut"] for bar in bars)
    assert all(len(bar.question["cut"]) < MAX_NOTICE_KEPT + 40 for bar in bars)

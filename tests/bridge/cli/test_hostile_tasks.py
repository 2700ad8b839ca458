"""``yieldmcp tasks`` and ``call --task`` against a lying tasks server.

The server (``tests/fixtures/hostile_tasks.py``, written by hand, a real
stdio subprocess) answers ``tasks/get`` with whatever raw JSON a test gives
it: numbers no float holds, ``NaN``, controls in its words. The CLI runs in
this process; what it printed is read back.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from bridge.cli.commands import main

SERVER = f"{sys.executable} tests/fixtures/hostile_tasks.py"
HUGE = "1" + "0" * 400  # an integer no float holds


def tasks(
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    task_get: str,
    *args: str,
) -> tuple[int, str, str]:
    monkeypatch.setenv("HOSTILE_TASK_GET", task_get)
    code = main(["tasks", *args[:1], SERVER, "t1", *args[1:]])
    out, err = capfd.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    "task_get",
    [
        f'{{"status": "working", "pollIntervalMs": {HUGE}, "ttlMs": 1}}',
        f'{{"status": "working", "pollIntervalMs": 1, "ttlMs": {HUGE}}}',
        '{"status": "working", "pollIntervalMs": NaN, "ttlMs": -Infinity}',
        '{"status": "working", "pollIntervalMs": -5, "ttlMs": 0}',
    ],
)
def test_numbers_no_float_holds_are_neither_a_traceback_nor_a_busy_loop(
    capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, task_get: str
) -> None:
    started = time.monotonic()
    code, out, err = tasks(capfd, monkeypatch, task_get, "wait", "--timeout", "1")
    assert time.monotonic() - started < 10
    assert code == 1
    assert "Traceback" not in err
    assert err.splitlines()[-1].startswith("yieldmcp: error: no result within 1 s")
    # a status that does not change is said once, however often it is read
    assert out.splitlines() == ["[task working]"]


WORDS = "a\x1b]0;title\x07b\x1b[2Jc\u202egnp.exe\u2066d\u2069\x9b1;1He"
"""OSC, CSI, a right-to-left override and an isolate ("Trojan Source"), C1."""
SHOWN = "abcgnp.exede"
CONTROLS = "\x1b\x07\x9b\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


TEXT = {"content": [{"type": "text", "text": WORDS}]}


@pytest.mark.parametrize(
    ("action", "task", "shown"),
    [
        (
            "get",
            {"status": "working", "statusMessage": WORDS, "inputRequests": {WORDS: {}}},
            [f"[task working] {SHOWN}", f"waiting on: {SHOWN}"],
        ),
        (
            "get",
            {"status": "failed", "error": {"code": 1, "message": WORDS}},
            ["[task failed]", f"error: {SHOWN} (1)"],
        ),
        ("get", {"status": "completed", "result": TEXT}, ["[task completed]", SHOWN]),
        (
            "wait",
            {"status": "completed", "statusMessage": WORDS, "result": TEXT},
            [f"[task completed] {SHOWN}", SHOWN],
        ),
    ],
)
def test_a_task_s_words_reach_the_terminal_without_controls(
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    action: str,
    task: dict[str, object],
    shown: list[str],
) -> None:
    code, out, err = tasks(capfd, monkeypatch, json.dumps(task), action)
    assert code == 0, err
    assert not set(out + err) & set(CONTROLS)
    assert out.splitlines() == shown


def test_a_question_asked_again_is_not_answered_in_a_busy_loop(
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """A server that keeps asking what was answered (it has not taken the
    update yet, or lies) is answered again at its poll interval, not at once:
    a yieldmcp server asks again only when an answer was not valid."""
    schema = {"type": "object", "properties": {"n": {"type": "string"}}}
    form = {"mode": "form", "message": "name?", "requestedSchema": schema}
    asking = {
        "status": "input_required",
        "inputRequests": {"k": {"method": "elicitation/create", "params": form}},
    }
    log = tmp_path / "requests"
    monkeypatch.setenv("HOSTILE_TASK_LOG", str(log))
    code, out, err = tasks(
        capfd, monkeypatch, json.dumps(asking), "wait", "--timeout", "1",
        "--answer", 'k={"n": "a"}',
    )  # fmt: skip
    assert code == 1
    assert (out + err).count("no scripted answer left") <= 3  # not thousands
    assert err.splitlines()[-1].startswith("yieldmcp: error: no result within 1 s")
    updates = log.read_text().splitlines().count("tasks/update")
    assert 1 <= updates <= 4  # every 0.5 s (no pollIntervalMs), not thousands


@pytest.mark.parametrize(
    ("task_id", "times", "shown"),
    [
        ("\x1b]0;title\x07t\u202e", "1", '[task "\\u001b]0;title\\u0007t\\u202e"]'),
        ("x", "10000000", f'[task "{"x" * 200}"... (10000000 characters)]'),
    ],
)
def test_a_task_id_that_cannot_be_typed_back_is_shown_escaped_and_cut(
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    task_id: str,
    times: str,
    shown: str,
) -> None:
    """``[task ID] created`` is what the user types back to ``tasks get``: an
    id with controls is shown escaped (not as a different, plausible id), and
    one of megabytes is not printed whole."""
    monkeypatch.setenv("HOSTILE_TASK_ID", task_id)
    monkeypatch.setenv("HOSTILE_TASK_ID_TIMES", times)
    monkeypatch.setenv(
        "HOSTILE_TASK_GET", json.dumps({"status": "completed", "result": TEXT})
    )
    code = main(["call", SERVER, "job", "--task"])
    _out, err = capfd.readouterr()
    assert code == 0, err[:300]
    assert err.splitlines()[0] == f"{shown} created"
    assert len(err) < 1000


def test_a_status_message_cannot_forge_lines(
    capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task's status, and the questions it waits on, are one line each: a
    line break in them would print a '[task completed]' never reached."""
    forged = "50%\n[task completed]\r\nall done\u2028ok"
    task = {"status": "working", "statusMessage": forged, "inputRequests": {forged: {}}}
    code, out, err = tasks(capfd, monkeypatch, json.dumps(task), "get")
    assert code == 0, err
    assert out.splitlines() == [
        "[task working] 50% [task completed] all done ok",
        "waiting on: 50% [task completed] all done ok",
    ]


def test_a_failed_task_s_error_cannot_forge_lines_and_is_cut(
    capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The error of a failed task is one line, cut as every word of a
    server's shown on one line is (``bridge.elicit.MAX_LINE_SHOWN``)."""
    forged = "boom\nyieldmcp: error: FORGED" + "x" * 10_000
    task = {"status": "failed", "error": {"code": 1, "message": forged}}
    code, out, err = tasks(capfd, monkeypatch, json.dumps(task), "get")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "[task failed]"
    assert len(lines) == 2
    assert lines[1].startswith("error: boom yieldmcp: error: FORGEDxxx")
    assert lines[1].endswith("more characters)")
    assert len(lines[1]) < 4200

"""Values a user can give that once ended in a Python traceback (or a hang):
each is one line on stderr and a documented exit code (docs/deploying.md).

* ``journal --store-timeout`` takes what ``serve``'s limit flags take: a
  positive number (exit 2 otherwise); a huge one means "practically never".
* ``serve --backlog`` larger than ``listen()`` takes is lowered to it.
* JSON nested deeper than Python's parser goes, in ``--arg``, ``--answer``,
  ``--args`` and ``--answers FILE``.
* ``--oauth-tokens FILE`` of another shape, or a FIFO.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import trio

from bridge.stores.sqlite import SQLiteStore
from bridge.transports.http.serving.listener import open_socket
from tests.bridge.cli.inprocess import Done, yieldmcp
from tests.bridge.cli.test_cli import YIELDMCP
from tests.helpers import ROOT

DEEP = "[" * 5000 + "]" * 5000
NOWHERE = "http://127.0.0.1:1/mcp"  # never reached: each case fails before


def one_line(done: Done, code: int) -> str:
    assert done.returncode == code, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    return done.stderr


# --- journal --store-timeout ---------------------------------------------------


@pytest.mark.parametrize("value", ["-1", "0", "nan", "-inf", "soon"])
def test_journal_refuses_a_store_timeout_that_is_not_positive(value: str) -> None:
    stderr = one_line(yieldmcp("journal", f"--store-timeout={value}", "memory:"), 2)
    assert "--store-timeout" in stderr


@pytest.mark.parametrize("value", ["1e300", "inf"])
def test_journal_takes_a_huge_store_timeout_as_practically_none(
    tmp_path: Path, value: str
) -> None:
    path = tmp_path / "s.db"
    SQLiteStore(path).close()
    done = yieldmcp("journal", "--store-timeout", value, f"sqlite:{path}")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


# --- serve --backlog -------------------------------------------------------------


def test_a_backlog_past_what_listen_takes_is_lowered() -> None:
    async def main() -> None:
        sock = await open_socket("127.0.0.1", 0, 3_000_000_000)
        with sock:
            assert sock.getsockname()[1] > 0

    trio.run(main)


def test_serve_listens_with_a_backlog_past_what_listen_takes(tmp_path: Path) -> None:
    served = tmp_path / "tools.py"
    served.write_text(
        "from runtime import tool\n\n@tool\ndef ping() -> str:\n    return 'pong'\n"
    )
    command = [YIELDMCP, "serve", str(served), "--http", "127.0.0.1:0"]
    with subprocess.Popen(
        [*command, "--backlog", "3000000000"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    ) as process:
        try:
            assert process.stderr is not None
            first = process.stderr.readline()  # the URL, or the end of a crash
            assert first.startswith("serving MCP at http://127.0.0.1:"), first
        finally:
            process.terminate()
            process.wait(30)


# --- JSON nested too deep ----------------------------------------------------------


@pytest.mark.parametrize("flag", ["--arg", "--answer"])
def test_a_flag_value_nested_too_deep_is_a_usage_error(flag: str) -> None:
    stderr = one_line(yieldmcp("call", NOWHERE, "t", flag, f"a={DEEP}"), 2)
    assert "nested too deep" in stderr
    assert flag in stderr


def test_args_nested_too_deep_is_one_line() -> None:
    stderr = one_line(yieldmcp("call", NOWHERE, "t", "--args", f'{{"a": {DEEP}}}'), 1)
    assert "--args is JSON nested too deep" in stderr


def test_an_answers_file_nested_too_deep_is_one_line(tmp_path: Path) -> None:
    answers = tmp_path / "answers.json"
    answers.write_text(f'{{"k": {DEEP}}}')
    stderr = one_line(yieldmcp("call", NOWHERE, "t", "--answers", str(answers)), 1)
    assert "nested too deep" in stderr
    assert str(answers) in stderr


# --- --oauth-tokens FILE -----------------------------------------------------------


def _token_file(tmp_path: Path) -> Path:
    folder = tmp_path / "tokens"
    folder.mkdir(mode=0o700)
    return folder / "tokens.json"


@pytest.mark.parametrize("content", [{"tokens": 5}, {"tokens": "ab"}, [1]])
def test_a_token_file_of_another_shape_is_one_line(
    tmp_path: Path, content: object
) -> None:
    path = _token_file(tmp_path)
    path.write_text(json.dumps(content))
    path.chmod(0o600)
    stderr = one_line(yieldmcp("call", NOWHERE, "t", "--oauth-tokens", str(path)), 1)
    assert f"{path} is not a token file" in stderr


def test_a_fifo_given_as_the_token_file_is_refused_at_once(tmp_path: Path) -> None:
    path = _token_file(tmp_path)
    os.mkfifo(path, 0o600)
    done = subprocess.run(
        [YIELDMCP, "call", NOWHERE, "t", "--oauth-tokens", str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,  # (it waited for a writer forever)
        check=False,
    )
    stderr = one_line(Done(done.args, done.returncode, done.stdout, done.stderr), 1)
    assert str(path) in stderr


def test_what_python_reads_but_json_has_not_is_never_sent_as_a_number() -> None:
    # --arg x=NaN was parsed as the float nan and sent as NaN: text no peer
    # can parse as JSON. A bare word is a string, and so is this.
    from bridge.cli.host_options import key_value

    for word in ("NaN", "Infinity", "-Infinity", "1e400", "[1, NaN]"):
        assert key_value(f"x={word}") == ("x", word)
    assert key_value("x=1.5") == ("x", 1.5)
    stderr = one_line(yieldmcp("call", NOWHERE, "t", "--args", '{"x": NaN}'), 1)
    assert "--args is not valid JSON: NaN is not a JSON number" in stderr

"""What the user typed, said back in a message: one line, its controls escaped.

A folder's name, a task id, a flag's value or a file's name may hold a line
break or a terminal's escape sequence (pasted, or planted in a name a script
passes on). Quoted back raw, it would print a line of its own or be obeyed
(clear the screen, set the window's title); each is shown as ``repr`` shows
it (``'a\\nb'``), or JSON-quoted for a task id, and a message is one line.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest

from bridge.cli.commands import _host_port  # pyright: ignore[reportPrivateUsage]
from tests.bridge.cli.inprocess import yieldmcp
from tests.helpers import STARTUP

HOSTILE = "a\x1b]0;pwned\x07b\x1b[2Jc\nd"
"""A name that sets the window's title, clears the screen, breaks the line."""
ESCAPED = repr(HOSTILE)
GAME = "yieldmcp serve examples/ttt.py"


def one_error_line(stderr: str) -> str:
    """The one line of a failure, checked for anything a terminal obeys."""
    (line,) = stderr.splitlines()
    assert stderr == line + "\n"
    assert "\x1b" not in line
    assert "\x07" not in line
    assert line.startswith(("yieldmcp: error: ", "yieldmcp serve: error: "))
    return line


# --- init DIR ------------------------------------------------------------------------


def test_init_shows_a_hostile_folder_name_escaped(tmp_path: Path) -> None:
    done = yieldmcp("init", HOSTILE, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout
    assert "\x07" not in done.stdout
    lines = done.stdout.splitlines()
    assert lines[:4] == [
        f"wrote {HOSTILE + '/' + name!r}"
        for name in ("pyproject.toml", "tools.py", "tests/test_tools.py", "README.md")
    ]
    # The next step, as bash and zsh read it back: the same folder.
    assert lines[4] == (
        "next: cd $'a\\x1b]0;pwned\\x07b\\x1b[2Jc\\x0ad' && python3 -m venv .venv "
        '&& .venv/bin/pip install -e ".[test]"'
    )
    assert (tmp_path / HOSTILE / "tools.py").is_file()

    again = yieldmcp("init", HOSTILE, cwd=tmp_path)
    assert again.returncode == 1
    assert one_error_line(again.stderr) == (
        f"yieldmcp: error: {ESCAPED} is not empty: init writes into a new or "
        f"empty folder"
    )


def test_init_of_a_name_too_long_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    name = "a" * 300  # past NAME_MAX: os.stat raises, not "no such file"
    done = yieldmcp("init", name, cwd=tmp_path)
    assert done.returncode == 1
    assert one_error_line(done.stderr) == (
        f"yieldmcp: error: cannot use {name}: File name too long"
    )


def test_init_of_the_current_folder_spelled_empty_says_no_cd(tmp_path: Path) -> None:
    done = yieldmcp("init", "", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "next: python3 -m venv .venv" in done.stdout  # not `cd '' && ...`


# --- tasks ... ID --------------------------------------------------------------------


@pytest.mark.parametrize("action", ["get", "wait", "cancel"])
def test_an_unknown_task_id_with_controls_is_one_escaped_line(action: str) -> None:
    done = yieldmcp(
        "tasks", action, GAME, "ab\ncd\x1b[2Jef", "--connect-timeout", f"{STARTUP}"
    )
    assert done.returncode == 1
    assert one_error_line(done.stderr) == (
        'yieldmcp: error: the server has no task "ab\\ncd\\u001b[2Jef" (never '
        "made there, or forgotten after its TTL)"
    )


def test_a_task_waited_for_past_its_timeout_is_named_escaped() -> None:
    done = yieldmcp("tasks", "wait", GAME, "ab\ncd", "--timeout", "0.001")
    assert done.returncode == 1
    assert one_error_line(done.stderr) == (
        'yieldmcp: error: no result within 0.001 s (--timeout); task "ab\\ncd" '
        'goes on: yieldmcp tasks wait SERVER "ab\\ncd"'
    )


# --- serve --http --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("[::1", " (an IPv6 HOST goes in brackets: [::1]:PORT)"),
        ("[::1]x:80", " (an IPv6 HOST goes in brackets: [::1]:PORT)"),
        ("a:b:80", " (an IPv6 HOST goes in brackets: [::1]:PORT)"),
        ("[nope]:80", " (the HOST in brackets is not an IPv6 address)"),
        ("exa mple:80", " (HOST is a host name or an IPv4 address)"),
        ("a..b:80", " (HOST is a host name or an IPv4 address)"),
        ("ho\x1b[2Jst:80", " (HOST is a host name or an IPv4 address)"),
    ],
)
def test_a_malformed_http_address_is_a_usage_error_naming_it(
    value: str, why: str
) -> None:
    # "[::1" reached the socket layer: "cannot listen on [:]:1: unknown error -2".
    done = yieldmcp("serve", "examples/ttt.py", "--http", value)
    assert done.returncode == 2
    assert done.stdout == ""
    assert one_error_line(done.stderr) == (
        "yieldmcp serve: error: argument --http: expected PORT or HOST:PORT "
        f"(PORT 0-65535), got {value!r}{why} (see --help)"
    )


def test_a_host_name_that_does_not_resolve_says_so() -> None:
    # The resolver's errno (-2) read as an OS errno: "unknown error -2".
    done = yieldmcp("serve", "examples/ttt.py", "--http", "nosuchhost.invalid:8123")
    assert done.returncode == 1
    line = one_error_line(done.stderr)
    assert line.startswith(
        "yieldmcp: error: cannot listen on nosuchhost.invalid:8123: "
    )
    assert "unknown error" not in line
    assert line.endswith(
        ("name or service not known", "temporary failure in name resolution")
    )


def test_a_host_name_too_long_for_dns_is_a_usage_error_not_a_traceback() -> None:
    value = "h" * 300 + ":1"  # getaddrinfo raised UnicodeError: a traceback
    done = yieldmcp("serve", "examples/ttt.py", "--http", value)
    assert done.returncode == 2
    line = one_error_line(done.stderr)
    assert line.startswith(
        "yieldmcp serve: error: argument --http: expected PORT or HOST:PORT "
        f"(PORT 0-65535), got {'h' * 200!r}... (302 characters) (HOST is"
    )


@pytest.mark.parametrize("value", ["::1]:80", "[::1:80", "]:80", "[::1]]:80"])
def test_unbalanced_brackets_are_refused_not_listened_on(value: str) -> None:
    # "::1]:80" was read as ("::1", 80): a typo served on port 80.
    with pytest.raises(argparse.ArgumentTypeError, match="expected PORT or HOST:PORT"):
        _host_port(value)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("[fe80::1%eth0]:0", ("fe80::1%eth0", 0)),
        ("my-host.example.:80", ("my-host.example.", 80)),
        ("10.0.0.1:80", ("10.0.0.1", 80)),
    ],
)
def test_well_formed_addresses_still_parse(
    value: str, expected: tuple[str, int]
) -> None:
    assert _host_port(value) == expected


# --- call --answers FILE -------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"\xff\xfe{\x00}\x00", "not UTF-8 JSON (it is UTF-16)"),
        (b'{"a": "\xe9"}', "not UTF-8 JSON (byte 0xe9)"),
        (b'{"a": NaN}', "not valid JSON: NaN is not a JSON number"),
    ],
)
def test_an_answers_file_that_is_not_utf8_json_is_named(
    tmp_path: Path, data: bytes, why: str
) -> None:
    # Read before the server is started: SERVER is never run.
    answers = tmp_path / "answers.json"
    answers.write_bytes(data)
    done = yieldmcp("call", "no-such-server", "tool", "--answers", str(answers))
    assert done.returncode == 1
    assert one_error_line(done.stderr).startswith(
        f"yieldmcp: error: cannot read --answers {answers}: {why}"
    )


def test_an_answers_file_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    answers = tmp_path / "answers.json"
    answers.write_bytes(b"\xef\xbb\xbf[]")  # past the mark: JSON, not an object
    done = yieldmcp("call", "no-such-server", "tool", "--answers", str(answers))
    assert one_error_line(done.stderr) == (
        f"yieldmcp: error: --answers {answers} must hold a JSON object of KEY: answers"
    )


def test_an_answers_file_s_hostile_name_is_escaped(tmp_path: Path) -> None:
    answers = tmp_path / HOSTILE
    done = yieldmcp("call", "no-such-server", "tool", "--answers", str(answers))
    assert done.returncode == 1
    assert one_error_line(done.stderr) == (
        f"yieldmcp: error: cannot read --answers {str(answers)!r}: "
        f"No such file or directory"
    )


# --- call --save-media DIR -----------------------------------------------------------


def test_a_media_folder_that_is_a_dangling_link_says_so(tmp_path: Path) -> None:
    folder = tmp_path / "media"
    folder.symlink_to(tmp_path / "nowhere")
    done = yieldmcp("call", "no-such-server", "tool", "--save-media", str(folder))
    assert done.returncode == 1
    assert one_error_line(done.stderr) == (
        f"yieldmcp: error: cannot use --save-media {folder}: it is a symbolic "
        f"link to no folder that can be used"
    )
    assert not (tmp_path / "nowhere").exists()  # not made through the link


def test_a_media_folder_that_is_a_fifo_says_so(tmp_path: Path) -> None:
    folder = tmp_path / HOSTILE
    os.mkfifo(folder)
    done = yieldmcp("call", "no-such-server", "tool", "--save-media", str(folder))
    assert done.returncode == 1
    assert one_error_line(done.stderr) == (
        f"yieldmcp: error: cannot use --save-media {str(folder)!r}: it is not a "
        f"folder (a FIFO, a socket or a device)"
    )


# --- what argparse says back ---------------------------------------------------------


def test_unrecognized_words_are_quoted_escaped() -> None:
    done = yieldmcp("call", "server", "tool", "extra\x1b[2J\nline")
    assert done.returncode == 2
    assert one_error_line(done.stderr) == (
        "yieldmcp: error: unrecognized arguments: 'extra\\x1b[2J\\nline' (see --help)"
    )


def test_a_flag_value_argparse_quotes_raw_is_escaped() -> None:
    # The limit's own message said "got \n0": two lines.
    done = yieldmcp("serve", "examples/ttt.py", "--max-calls=\n0")
    assert done.returncode == 2
    assert one_error_line(done.stderr) == (
        "yieldmcp serve: error: argument --max-calls: must be positive, got \\n0 "
        "(see --help)"
    )


# --- the warnings before a call ------------------------------------------------------


def test_an_unknown_argument_or_answer_key_is_warned_of_on_one_line() -> None:
    done = yieldmcp(
        "call", "yieldmcp serve examples/book_flight.py", "book_flight", "--json",
        "--connect-timeout", f"{STARTUP}",
        "--arg", "destination=Oslo", "--arg", "x\ny=1",
        "--answer", 'dates={"depart": "2027-01-05", "nights": 2}',
        "--answer", 'seat={"seat": "aisle"}', "--answer", 'se\nat={"seat": "aisle"}',
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        "yieldmcp: warning: book_flight has no argument 'x\\ny'; its arguments: "
        "destination",
        "yieldmcp: warning: book_flight has no form 'se\\nat' (its forms: dates, seat)",
    ]


# --- any failure ---------------------------------------------------------------------


def test_a_failure_quoting_a_line_break_is_still_one_line(tmp_path: Path) -> None:
    # Messages made elsewhere may quote a name raw (install's "no such file:
    # NAME"): the error printer keeps them on one line, without controls.
    done = yieldmcp("install", "cursor", "no\nsuch\x1b[2J.py", cwd=tmp_path)
    assert done.returncode == 1
    assert one_error_line(done.stderr) == "yieldmcp: error: no such file: no such.py"

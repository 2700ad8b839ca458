"""``yieldmcp journal``: what a user gets wrong is one line and exit status 1,
and a store that does not answer is given up on at its deadline.

The journal of real calls out of real stores, replayed, is
``tests/system/test_journal_replay.py``; these run the command in-process.
"""

from __future__ import annotations

import contextlib
import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bridge.cli import main
from bridge.server.state_token import Sealer, decode_key, new_key
from bridge.stores import open_store


def _run(capsys: pytest.CaptureFixture[str], *words: str) -> tuple[int, str, str]:
    code = main(["journal", *words])
    out, err = capsys.readouterr()
    return code, out, err


def _one_line(err: str) -> str:
    assert err.count("\n") == 1, err
    assert err.startswith("yieldmcp: error: ")
    return err


def test_an_unknown_id_is_one_line_and_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:{tmp_path / 'store.sqlite3'}"
    open_store(url).close()
    code, out, err = _run(capsys, url, "0123abcd")
    assert (code, out) == (1, "")
    assert "no call or task '0123abcd' in the store" in _one_line(err)
    assert _run(capsys, url) == (0, "", "")  # an empty store lists nothing


def test_a_store_that_cannot_be_opened_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _out, err = _run(capsys, f"sqlite:{tmp_path / 'no' / 'such.db'}", "x")
    assert code == 1
    _one_line(err)
    code, _out, err = _run(capsys, "ftp://example", "x")
    assert code == 1
    assert "unknown store" in _one_line(err)


def test_a_mistyped_sqlite_path_makes_no_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    typo = tmp_path / "stroe.sqlite3"
    for words in ([f"sqlite:{typo}"], [f"sqlite:{typo}", "x"]):
        code, out, err = _run(capsys, *words)
        assert (code, out) == (1, "")
        assert f"no SQLite store at {typo}" in _one_line(err)
    assert list(tmp_path.iterdir()) == []  # nothing was created


@contextlib.contextmanager
def _silent_server() -> Iterator[int]:
    """A port that takes connections and never answers (a hung store)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield int(listener.getsockname()[1])


def test_a_store_that_never_answers_fails_at_its_deadline(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with _silent_server() as port:
        started = time.monotonic()
        code, _out, err = _run(
            capsys, f"redis://127.0.0.1:{port}/0", "x", "--store-timeout", "0.5"
        )
        took = time.monotonic() - started
    assert code == 1
    _one_line(err)
    assert took < 10  # the deadline, not the client's own patience


def test_a_request_state_needs_the_servers_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    key = new_key()
    state = Sealer([decode_key(key)]).seal(
        {"name": "trip", "journal": {"answers": {}, "notices": []}},
        purpose="tools/call",
    )
    monkeypatch.delenv("YIELDMCP_STATE_KEY", raising=False)
    code, _out, err = _run(capsys, "memory:", state)
    assert code == 1
    assert "set YIELDMCP_STATE_KEY" in _one_line(err)
    monkeypatch.setenv("YIELDMCP_STATE_KEY", new_key())
    code, _out, err = _run(capsys, "memory:", state)
    assert code == 1
    assert "does not open with the key" in _one_line(err)
    monkeypatch.setenv("YIELDMCP_STATE_KEY", "not a key")
    code, _out, err = _run(capsys, "memory:", state)
    assert code == 1
    _one_line(err)
    monkeypatch.setenv("YIELDMCP_STATE_KEY", key)
    code, out, _err = _run(capsys, "memory:", state)
    assert code == 0
    assert '"source": "state"' in out


def test_the_listing_shows_a_stores_words_without_controls(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The listing is tab-separated text for a terminal; the ids and tool
    names in it are whatever the store's writers (or clients) chose."""
    from bridge.durable.log import CALLS
    from bridge.durable.tasks import TASKS

    hostile = "a\x1b]0;title\x07b\x1b[2J\tc\nd\u202ee"
    url = f"sqlite:{tmp_path / 'store.db'}"
    store = open_store(url)
    try:
        store.put(TASKS, hostile, {"tool": hostile, "status": hostile, "created": 1})
        store.put(CALLS, "c" + hostile, {"params": {"name": hostile}, "done": True})
    finally:
        store.close()
    code, out, err = _run(capsys, url)
    assert code == 0, err
    shown = "ab c de"  # a tab or a newline in a field would shift the columns
    assert out.splitlines() == [
        f"task\t{shown}\t{shown}\t{shown}",
        f"call\tc{shown}\t{shown}\tdone",
    ]


def test_a_document_on_a_terminal_carries_no_control_it_would_obey(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``json.dumps`` leaves C1 controls (``0x9b`` is CSI) and bidi overrides
    raw; the document is written with them as JSON escapes, the same JSON."""
    from bridge.durable.log import CALLS

    hostile = "a\x9b2Jb\x1b[31mc\u202ed"
    url = f"sqlite:{tmp_path / 'store.db'}"
    store = open_store(url)
    try:
        store.put(CALLS, "c1", {"params": {"name": hostile, "arguments": {}}})
        record = {"k": "0", "d": "x", "r": {"text": hostile}, "l": hostile}
        store.append(CALLS, "c1", [record])
    finally:
        store.close()
    code, out, err = _run(capsys, url, "c1")
    assert code == 0, err
    assert not set(out) & {"\x1b", "\x9b", "\u202e"}
    document = json.loads(out)
    assert document["tool"] == hostile
    assert document["records"] == [record]

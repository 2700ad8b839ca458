"""``yieldmcp journal``: what a user gets wrong is one line and exit status 1,
and a store that does not answer is given up on at its deadline.

The journal of real calls out of real stores, replayed, is
``tests/system/test_journal_replay.py``; these run the command in-process.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import socket
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bridge.cli import main
from bridge.server.state_token import Sealer, decode_key, new_key
from bridge.stores import StoreError, open_store
from bridge.stores.codec import dumps


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


@pytest.mark.parametrize("held", [b"", b"notes, not a database"], ids=["empty", "text"])
def test_a_file_that_is_not_a_store_is_left_as_it_was(
    held: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # An empty file is an empty database to SQLite: the reader gave it the
    # store's tables (28 KB) and listed nothing, exit 0.
    path = tmp_path / "notes.db"
    path.write_bytes(held)
    for words in ([f"sqlite:{path}"], [f"sqlite:{path}", "x"]):
        code, out, err = _run(capsys, *words)
        assert (code, out) == (1, "")
        assert f"no SQLite store at {path} (the file is not a database)" in (
            _one_line(err)
        )
    assert path.read_bytes() == held
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.db"]


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


# -- a store with rows that no writer of ours made --------------------------

_TASK = {
    "tool": "trip",
    "arguments": {"city": "Rome"},
    "status": "completed",
    "created": 1.0,
    "updated": 2.0,
    "ttlMs": 60_000,
    "pollIntervalMs": 500,
    "result": {"content": []},
}
_RECORD = {"k": "0", "d": "x", "r": {"value": 1}, "l": "s"}

# A record's text, as a stranger (or a damaged disk) left it.
UNREADABLE_RECORDS = {
    "not JSON": "not json",
    "a raw control character": '{"k":"0","r":{"value":"\x1b[2J"}}',
    "a JSON array": "[1,2]",
    "nested 3,000 deep": '{"r":' + "[" * 3000 + "]" * 3000 + "}",
    "a lone surrogate": '{"r":{"value":"\\ud800"}}',
    "a 5,000-digit integer": '{"r":' + "9" * 5000 + "}",
}
# Python reads these as numbers JSON has not: the journal cannot be written.
NOT_JSON_NUMBERS = {
    "NaN": '{"k":"0","d":"x","r":{"value":NaN},"l":"s"}',
    "1e400": '{"k":"0","d":"x","r":{"value":1e400},"l":"s"}',
}


def _store(tmp_path: Path) -> tuple[str, Path]:
    """A SQLite store with a call ``c1`` and a task ``t1``, each two records."""
    from bridge.durable.log import CALLS
    from bridge.durable.tasks import TASKS

    path = tmp_path / "store.db"
    store = open_store(f"sqlite:{path}")
    try:
        store.put(CALLS, "c1", {"params": {"name": "trip", "arguments": {}}})
        store.append(CALLS, "c1", [_RECORD, _RECORD])
        store.put(TASKS, "t1", _TASK)
        store.append(CALLS, "t1", [_RECORD, _RECORD])
    finally:
        store.close()
    return f"sqlite:{path}", path


def _corrupt(path: Path, sql: str, *args: object) -> None:
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        conn.execute(sql, args)


def _unreadable_line(err: str, named: str) -> str:
    line = _one_line(err)
    assert named in line, line
    assert "cannot be read" in line, line
    assert len(line) < 300, line  # the why in a few words, no record quoted
    return line


@pytest.mark.parametrize("case", sorted(UNREADABLE_RECORDS))
@pytest.mark.parametrize(("id", "named"), [("c1", "call 'c1'"), ("t1", "task 't1'")])
def test_an_unreadable_record_is_one_line_and_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, id: str, named: str
) -> None:
    url, path = _store(tmp_path)
    _corrupt(
        path,
        "UPDATE records SET record = ? WHERE id = ? AND seq = 1",
        UNREADABLE_RECORDS[case],
        id,
    )
    code, out, err = _run(capsys, url, id)
    assert (code, out) == (1, "")
    assert "record 2" in _unreadable_line(err, named)
    code, out, err = _run(capsys, url)  # the listing reads no record
    assert (code, err) == (0, "")
    assert len(out.splitlines()) == 2


@pytest.mark.parametrize("case", sorted(NOT_JSON_NUMBERS))
def test_a_journal_holding_nan_is_one_line_naming_the_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    """NaN and Infinity are what the store's writer can write (``json.dumps``
    allows them) and give back: the store reads them, and the command, whose
    document is JSON, says why it cannot write it. No server is involved:
    the protocol's words ("the server broke the protocol") would mislead."""
    url, path = _store(tmp_path)
    _corrupt(
        path, "UPDATE records SET record = ? WHERE id = 'c1'", NOT_JSON_NUMBERS[case]
    )
    code, out, err = _run(capsys, url, "c1")
    assert (code, out) == (1, "")
    line = _one_line(err)
    assert "call 'c1'" in line, line
    assert "NaN or Infinity" in line, line
    assert "server" not in line


_DEEP_ARGUMENTS = dumps({**_TASK, "arguments": {"x": 0}}).replace(
    '"x":0', '"x":' + "[" * 3000 + "]" * 3000
)


@pytest.mark.parametrize(
    ("text", "listed"),
    [
        ("garbage", False),
        (dumps({**_TASK, "status": "\x1b[2J" + "x" * 5000}), True),
        (_DEEP_ARGUMENTS, False),
    ],
    ids=["not JSON", "an unknown status", "arguments nested 3,000 deep"],
)
def test_an_unreadable_task_document_is_one_line_and_the_rest_are_listed(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    text: str,
    listed: bool,
) -> None:
    """A task document of no task's shape is still JSON: the listing shows
    its words (it reads no more); one that is not JSON is passed over."""
    url, path = _store(tmp_path)
    _corrupt(path, "UPDATE docs SET value = ? WHERE id = 't1'", text)
    code, out, err = _run(capsys, url, "t1")
    assert (code, out) == (1, "")
    _unreadable_line(err, "task 't1'")
    with caplog.at_level(logging.WARNING, logger="yieldmcp.stores"):
        code, out, _err = _run(capsys, url)
    assert code == 0
    assert "call\tc1\ttrip\trunning" in out.splitlines()
    assert any(line.startswith("task\tt1\t") for line in out.splitlines()) == listed
    said = [r.getMessage() for r in caplog.records]
    assert sum("'t1' cannot be read" in m for m in said) == (not listed), said


def test_an_unreadable_call_document_is_passed_over_by_the_listing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    url, path = _store(tmp_path)
    _corrupt(path, "UPDATE docs SET value = '[1]' WHERE id = 'c1'")
    code, out, err = _run(capsys, url, "c1")
    assert (code, out) == (1, "")
    _unreadable_line(err, "call 'c1'")
    with caplog.at_level(logging.WARNING, logger="yieldmcp.stores"):
        code, out, _err = _run(capsys, url)
    assert code == 0
    assert out.splitlines() == ["task\tt1\ttrip\tcompleted"]
    said = [r.getMessage() for r in caplog.records]
    assert sum("'c1' cannot be read" in m for m in said) == 1, said


def test_tasks_whose_created_is_no_number_are_still_listed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The listing sorts tasks by ``created``: a string beside a number
    there was a ``TypeError``."""
    from bridge.durable.tasks import TASKS

    url, _path = _store(tmp_path)
    store = open_store(url)
    try:
        store.put(TASKS, "t2", {**_TASK, "created": "yesterday"})
    finally:
        store.close()
    code, out, err = _run(capsys, url)
    assert (code, err) == (0, "")
    assert len(out.splitlines()) == 3


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    raw=st.one_of(
        st.binary(max_size=64),
        st.text(alphabet='{}[]":,0123456789eE.-+\\udNaIfity \x1b', max_size=64).map(
            str.encode
        ),
        st.builds(
            lambda inner: dumps({"r": inner}).encode(),
            st.recursive(
                st.none() | st.booleans() | st.floats() | st.text(max_size=8),
                lambda more: (
                    st.lists(more, max_size=3)
                    | st.dictionaries(st.text(max_size=4), more, max_size=3)
                ),
                max_leaves=8,
            ),
        ),
    )
)
def test_any_bytes_in_a_record_give_a_document_or_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], raw: bytes
) -> None:
    """Whatever a record's text: the journal as JSON and exit 0, or one
    line and exit 1 with nothing on stdout; never a traceback."""
    folder = tmp_path / str(time.monotonic_ns())  # a new store each example
    folder.mkdir()
    url, path = _store(folder)
    _corrupt(path, "UPDATE records SET record = CAST(? AS TEXT) WHERE id = 'c1'", raw)
    code, out, err = _run(capsys, url, "c1")
    if code == 0:
        assert json.loads(out)["id"] == "c1"
        assert err == ""
    else:
        assert (code, out) == (1, "")
        assert "call 'c1'" in _one_line(err)


# -- a reader writes nothing ---------------------------------------------------


def _untouched(path: Path) -> tuple[bytes, int, list[str]]:
    """What a reader must leave as it was: the file, its time, its folder."""
    return path.read_bytes(), path.stat().st_mtime_ns, sorted(os.listdir(path.parent))


def test_reading_a_sqlite_store_writes_nothing_to_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The reader opened the store as `serve` does: the store's tables made
    # again, its layout version written, the file made WAL. On a read-only
    # filesystem that was "directory ... is not writable".
    url, path = _store(tmp_path)
    before = _untouched(path)
    code, out, _err = _run(capsys, url)
    assert (code, len(out.splitlines())) == (0, 2)
    code, out, _err = _run(capsys, url, "t1")
    assert (code, json.loads(out)["id"]) == (0, "t1")
    after = _untouched(path)
    assert after[:2] == before[:2], "the reader changed the store's file"
    # (SQLite makes a reader's -wal and -shm beside a WAL file, empty)
    assert set(after[2]) - set(before[2]) <= {"store.db-wal", "store.db-shm"}
    reader = open_store(url, read_only=True)
    try:
        with pytest.raises(StoreError, match="readonly"):
            reader.put("task", "t2", {})
    finally:
        reader.close()


@contextlib.contextmanager
def _mounted(folder: Path) -> Iterator[Path]:
    """A tmpfs at ``folder`` (root only), unmounted afterwards."""
    if os.geteuid() != 0:
        reason = "mounting a read-only filesystem needs root (CI runs as root)"
        print(reason)
        pytest.skip(reason)
    folder.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=8m,mode=0700", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
    )
    if made.returncode != 0:
        reason = f"cannot mount a tmpfs here: {made.stderr.strip()}"
        print(reason)
        pytest.skip(reason)
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


@pytest.mark.parametrize("wal", [False, True], ids=["closed", "wal-left"])
def test_a_store_on_a_read_only_filesystem_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], wal: bool
) -> None:
    # A mounted backup: `sqlite3 -readonly` read it, `journal` said the
    # directory is not writable, or (its -wal and -shm there) "attempt to
    # write a readonly database".
    url, path = _store(tmp_path)
    with _mounted(tmp_path / "ro") as ro:
        if wal:  # a copy taken while a server had the store open
            writer = open_store(url)
            try:
                writer.append("call", "t1", [_RECORD])  # only in the -wal
                for suffix in ("", "-wal", "-shm"):
                    shutil.copy(f"{path}{suffix}", ro / f"store.db{suffix}")
            finally:
                writer.close()
        else:
            shutil.copy(path, ro / "store.db")
        subprocess.run(["mount", "-o", "remount,ro", str(ro)], check=True)
        copy = f"sqlite:{ro / 'store.db'}"
        code, out, err = _run(capsys, copy)
        assert (code, err) == (0, "")
        assert sorted(line.split("\t")[1] for line in out.splitlines()) == ["c1", "t1"]
        code, out, err = _run(capsys, copy, "t1")
        assert (code, err) == (0, "")
        assert len(json.loads(out)["records"]) == (3 if wal else 2)


def test_a_postgresql_database_that_is_no_store_is_left_as_it_was(
    postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # The reader ran the store's setup there: four yieldmcp tables and a
    # function made in another application's database, and exit 0.
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE users (name text)")
    code, out, err = _run(capsys, postgres_url)
    assert (code, out) == (1, "")
    assert "is not a yieldmcp store" in _one_line(err)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        tables = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
        ).fetchall()
        made = conn.execute(
            "SELECT proname FROM pg_proc WHERE proname LIKE 'yieldmcp%'"
        ).fetchall()
    assert (tables, made) == ([("users",)], [])


def test_a_postgresql_role_that_may_only_select_reads_the_journal(
    postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # A read-only role (SELECT on the store's tables) got "permission
    # denied for schema public": the reader created tables first.
    import psycopg

    from bridge.durable.log import CALLS
    from bridge.durable.tasks import TASKS

    store = open_store(postgres_url)
    try:
        store.put(TASKS, "t1", _TASK)
        store.append(CALLS, "t1", [_RECORD, _RECORD])
    finally:
        store.close()
    database = postgres_url.rsplit("/", 1)[1]
    role = f"reader_{database}"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}")
    reader = postgres_url.replace("://postgres@", f"://{role}@")
    code, out, err = _run(capsys, reader)
    assert (code, err) == (0, "")
    assert out.split("\t")[:2] == ["task", "t1"]
    code, out, err = _run(capsys, reader, "t1")
    assert (code, err) == (0, "")
    assert len(json.loads(out)["records"]) == 2


@pytest.mark.parametrize("backend", ["sqlite", "redis", "postgres"])
def test_an_id_not_utf8_or_huge_is_one_short_line(
    backend: str, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    # Not UTF-8 (`$(printf 'ab\xff')`): a traceback from the SQLite and
    # PostgreSQL drivers. A 100 KB id was echoed whole.
    url = request.getfixturevalue(f"{backend}_url")
    open_store(url).close()
    for wanted in (b"ab\xff".decode("utf-8", "surrogateescape"), "x" * 100_000):
        code, out, err = _run(capsys, url, wanted)
        assert (code, out) == (1, "")
        assert "no call or task 'ab\\udcff' in the store" in _one_line(err) or (
            "no call or task 'xxx" in err and "more characters" in err
        ), err
        assert len(err) < 400

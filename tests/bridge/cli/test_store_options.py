"""``yieldmcp serve``'s store flags, as a newcomer meets them: every failure
a user can cause is one line and exit 1, never a traceback."""

from __future__ import annotations

import argparse
import os
import stat
from pathlib import Path

import pytest

from bridge.cli.store_options import apply_store_options
from bridge.server import Server
from tests.bridge.cli.inprocess import Done, yieldmcp


def _serve(*flags: str, env: dict[str, str] | None = None) -> Done:
    return yieldmcp(
        "serve", "examples/weather.py", *flags, env={**os.environ, **(env or {})}
    )


def test_durable_whose_state_directory_cannot_be_made_is_one_line(
    tmp_path: Path,
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    done = _serve("--durable", env={"XDG_STATE_HOME": str(blocker)})
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert str(blocker) in done.stderr


def test_a_missing_directory_is_named(tmp_path: Path) -> None:
    done = _serve("--store", f"sqlite:{tmp_path}/missing/calls.db")
    assert done.returncode == 1
    assert len(done.stderr.strip().splitlines()) == 1
    assert f"no directory {tmp_path}/missing" in done.stderr


def test_durable_makes_its_state_directory_the_owners_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its file holds every journal and the request-state key.
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    server = Server()
    apply_store_options(server, argparse.Namespace(durable=True, store=None))
    try:
        assert stat.S_IMODE((tmp_path / "yieldmcp").stat().st_mode) == 0o700
        assert (
            stat.S_IMODE(os.stat(tmp_path / "yieldmcp/store.sqlite3").st_mode) == 0o600
        )
    finally:
        assert server.store is not None
        server.store.store.close()


@pytest.mark.parametrize("scheme", ["redis", "postgresql"])
def test_a_store_that_trickles_at_start_is_one_line_within_the_bound(
    scheme: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A store that answers a byte a second meets no per-read timeout: serve
    # waited at start for ever. Opening has a bound as a whole now (10 s and
    # --store-timeout; here shortened to keep the test short).
    import contextlib
    import socket
    import threading
    import time

    from bridge.cli import store_options

    monkeypatch.setattr(store_options, "OPEN_GRACE", 0.5)
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    done_serving = threading.Event()

    def trickle() -> None:
        conns = []
        listener.settimeout(0.1)
        while not done_serving.is_set():
            try:
                conn, _ = listener.accept()
                conns.append(conn)
            except TimeoutError:
                pass
            for conn in conns:
                with contextlib.suppress(OSError):
                    conn.send(b"+")  # a byte at a time, never a whole answer
            time.sleep(0.1)
        for conn in conns:
            conn.close()

    thread = threading.Thread(target=trickle, daemon=True)
    thread.start()
    url = (
        f"redis://127.0.0.1:{port}/0"
        if scheme == "redis"
        else f"postgresql://u@127.0.0.1:{port}/db"
    )
    try:
        started = time.monotonic()
        done = _serve("--store", url, "--store-timeout", "1")
        took = time.monotonic() - started
    finally:
        done_serving.set()
        thread.join(5)
        listener.close()
    assert done.returncode == 1, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("yieldmcp: error: --store: ")
    assert took < 30


@pytest.mark.parametrize(
    "planted", ["{}", "[1]", '{"key": "zzz"}', '{"key": 5}', "not json"]
)
def test_a_request_state_key_in_the_store_that_is_not_one_is_one_line(
    planted: str, tmp_path: Path
) -> None:
    # {} and [1] were a KeyError or TypeError traceback; {"key": "zzz"}
    # blamed YIELDMCP_STATE_KEY, which the user never set.
    import sqlite3

    from bridge.stores import open_store

    path = tmp_path / "store.sqlite3"
    open_store(f"sqlite:{path}").close()
    with sqlite3.connect(path) as conn:
        conn.execute(
            "INSERT INTO docs VALUES ('meta', 'request-state-key', ?, 1, NULL)",
            (planted,),
        )
    done = _serve("--store", f"sqlite:{path}")
    assert done.returncode == 1, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("yieldmcp: error: --store: "), line
    assert "YIELDMCP_STATE_KEY" in line
    assert "remove it" in line


def test_another_applications_database_is_one_line_and_left_unchanged(
    tmp_path: Path,
) -> None:
    import sqlite3

    path = tmp_path / "other_apps.db"
    conn = sqlite3.connect(path)
    conn.executescript("CREATE TABLE users (id INTEGER, name TEXT);")
    conn.close()
    before = path.read_bytes()
    done = _serve("--store", f"sqlite://{path}")  # sqlite:///abs/path
    assert done.returncode == 1, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"yieldmcp: error: --store: sqlite:{path} is not a")
    assert "'users'" in line
    assert path.read_bytes() == before
    assert not (tmp_path / "other_apps.db-wal").exists()
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    finally:
        conn.close()


def test_serve_and_journal_open_a_store_within_the_one_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each command had its own deadline around opening (journal's a trio
    # scope of its own): both open through store_options.open_within now.
    import contextlib
    import sqlite3
    import threading
    import time

    from bridge.cli import store_options

    release = threading.Event()
    opened: list[str] = []

    def hung(url: str, *, timeout: float, read_only: bool = False) -> object:
        opened.append(url)
        release.wait(30)  # a store that never answers
        raise AssertionError("never opened")

    monkeypatch.setattr(store_options, "open_store", hung)
    monkeypatch.setattr(store_options, "OPEN_GRACE", 0.0)
    path = tmp_path / "store.sqlite3"
    # journal opens only an SQLite database that is there
    with contextlib.closing(sqlite3.connect(path)) as database:
        database.execute("CREATE TABLE other (x)")
    try:
        started = time.monotonic()
        served = _serve("--store", f"sqlite:{path}", "--store-timeout", "0.3")
        read = yieldmcp("journal", f"sqlite:{path}", "--store-timeout", "0.3")
        took = time.monotonic() - started
    finally:
        release.set()
    assert opened == [f"sqlite:{path}", f"sqlite:{path}"]
    assert (served.returncode, read.returncode) == (1, 1)
    assert served.stderr.splitlines() == [
        f"yieldmcp: error: --store: sqlite:{path}: the store did not open "
        "within 0.3 s (10 s and --store-timeout)"
    ]
    assert read.stderr.splitlines() == [
        "yieldmcp: error: the store did not open within 0.3 s"
    ]
    assert took < 10

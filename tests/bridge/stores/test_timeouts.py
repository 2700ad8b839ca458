"""Each backend bounds what one call may wait on by itself, against a real
server: PostgreSQL's statement and lock timeouts (set for every session,
unless the URL's ``options`` set them) and TCP checks, and SQLite's writers
in one process queueing no longer than the busy timeout. (Redis's socket
timeout, against a stopped server, is in ``tests/system/test_hung_store.py``.)
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest

from bridge.stores import StoreUnavailable, open_store
from bridge.stores.postgres import PostgresStore
from bridge.stores.sqlite import SQLiteStore
from tests.store_servers import sqlite_locked

SLACK = 2.0


def test_a_postgres_write_waiting_on_a_lock_fails_after_the_timeout(
    postgres_url: str,
) -> None:
    store = PostgresStore(postgres_url, timeout=0.5)
    try:
        store.put("task", "t", {"n": 1})
        with psycopg.connect(postgres_url) as holder:
            # Another session keeps the table locked, and does not end.
            holder.execute("LOCK TABLE yieldmcp_docs IN ACCESS EXCLUSIVE MODE")
            began = time.monotonic()
            timed_out = r"due to (statement|lock) timeout"
            with pytest.raises(StoreUnavailable, match=timed_out):
                store.put("task", "t", {"n": 2})
            assert time.monotonic() - began < 0.5 + SLACK
            holder.rollback()
        assert store.put("task", "t", {"n": 3}) == 2  # and the store goes on
    finally:
        store.close()


def _settings(store: Any) -> dict[str, str]:
    with store._connection() as conn:
        rows = conn.execute(
            "SELECT name, setting FROM pg_settings WHERE name IN"
            " ('statement_timeout', 'lock_timeout')"
        ).fetchall()
        info = conn.info.get_parameters()
    return {**dict(rows), **{k: v for k, v in info.items() if "keepalive" in k}} | {
        "tcp_user_timeout": info.get("tcp_user_timeout", "")
    }


def test_every_postgres_session_is_bounded_unless_the_url_says_otherwise(
    postgres_url: str,
) -> None:
    store = open_store(postgres_url, timeout=2.5)
    try:
        settings = _settings(store)
    finally:
        store.close()
    assert settings["statement_timeout"] == "2500"
    assert settings["lock_timeout"] == "2500"
    assert settings["keepalives"] == "1"
    assert settings["keepalives_idle"] == "2"
    assert settings["tcp_user_timeout"] == "2500"
    own = f"{postgres_url}?keepalives_idle=30&options=-c%20statement_timeout%3D60000"
    store = open_store(own, timeout=2.5)
    try:
        settings = _settings(store)
    finally:
        store.close()
    assert settings["statement_timeout"] == "60000"  # the URL's
    assert settings["lock_timeout"] == "2500"  # ours: the URL left it
    assert settings["keepalives_idle"] == "30"


def test_sqlite_writers_in_one_process_queue_no_longer_than_the_busy_timeout(
    tmp_path: Path,
) -> None:
    path = tmp_path / "store.sqlite3"
    store = SQLiteStore(path, busy_timeout=0.3)
    failures: list[tuple[str, float]] = []
    began = 0.0

    def write(n: int) -> None:
        try:
            store.put("task", f"t{n}", {"n": n})
        except StoreUnavailable as exc:
            failures.append((str(exc), time.monotonic() - began))

    with sqlite_locked(path):
        began = time.monotonic()
        threads = [threading.Thread(target=write, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    store.close()
    # One waits on the other process's lock, the rest on it: every one gives
    # up after about one busy timeout, not one after another (8 x 0.3 s).
    assert len(failures) == 8
    assert max(elapsed for _, elapsed in failures) < 0.3 * 2 + SLACK / 2

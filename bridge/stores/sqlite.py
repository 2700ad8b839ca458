"""The SQLite store: one file, shared by every thread and process that opens it.

Durability: WAL journal with ``synchronous=NORMAL``. A committed transaction
is in the WAL file before ``commit`` returns, so a process crash (kill -9)
loses nothing committed; a power loss or OS crash may lose the last few
transactions (the WAL is fsynced at checkpoints, not at every commit), never
corrupt the file. ``synchronous="FULL"`` closes that window at the cost of
one fsync per write.

Concurrency: every write is one ``BEGIN IMMEDIATE`` transaction, which takes
the file's write lock before reading, so a compare-and-swap holds across
processes. A writer that finds the lock taken waits up to ``busy_timeout``.
Readers never block writers (WAL).

Waiting: SQLite cannot tell one process that another wrote. An append in
this process wakes its waiters at once (a condition variable); an append by
another process is seen by polling, with a delay that starts at 1 ms and
doubles up to ``poll_interval`` (50 ms), so a waiter costs little when idle
and hears a quick answer quickly.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Generator, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, final

from .base import Document, StoreConflict, StoreError, StoreUnavailable
from .codec import dumps

__all__ = ["SCHEMA_VERSION", "SQLiteStore"]

#: The layout this code writes. A file made by a newer layout is refused;
#: an older one is migrated in :func:`_migrate` when the layout changes.
SCHEMA_VERSION = 2

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY, value TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS docs (
    namespace TEXT NOT NULL, id TEXT NOT NULL, value TEXT NOT NULL,
    version INTEGER NOT NULL, expires_at REAL,
    PRIMARY KEY (namespace, id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS streams (
    namespace TEXT NOT NULL, id TEXT NOT NULL, expires_at REAL,
    PRIMARY KEY (namespace, id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS records (
    namespace TEXT NOT NULL, id TEXT NOT NULL, seq INTEGER NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (namespace, id, seq)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS docs_expiry ON docs (expires_at)
    WHERE expires_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS streams_expiry ON streams (expires_at)
    WHERE expires_at IS NOT NULL;
"""

_LIVE = "(expires_at IS NULL OR expires_at > ?)"


@final
class SQLiteStore:
    """A :class:`~bridge.stores.base.JournalStore` in one SQLite file."""

    blocking = True

    def __init__(
        self,
        path: str | Path,
        *,
        synchronous: str = "NORMAL",
        busy_timeout: float = 5.0,
        poll_interval: float = 0.05,
    ) -> None:
        if synchronous.upper() not in ("NORMAL", "FULL", "EXTRA"):
            raise ValueError(f"synchronous must be NORMAL or FULL, not {synchronous!r}")
        self.path = Path(path)
        self.synchronous = synchronous.upper()
        self.busy_timeout = busy_timeout
        self.poll_interval = poll_interval
        self._busy_ms = int(busy_timeout * 1000)
        # A pool of connections, one per thread at a time: sqlite3 connections
        # must not be used by two threads at once, and a pool (unlike one per
        # thread) does not leak when worker threads come and go.
        self._idle: list[sqlite3.Connection] = []
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        # Writers in this process queue here rather than in SQLite's busy
        # handler, which sleeps (1 ms, 2 ms, 5 ms...) between retries.
        self._writing = threading.Lock()
        self._closed = False
        self._appended = threading.Condition()
        self._appends = 0
        with self._connection() as conn:
            _create_schema(conn, self.path)

    # -- documents ---------------------------------------------------------

    def get(self, namespace: str, id: str) -> Document | None:
        with self._connection() as conn:
            row = conn.execute(
                f"SELECT value, version, expires_at FROM docs"
                f" WHERE namespace = ? AND id = ? AND {_LIVE}",
                (namespace, id, time.time()),
            ).fetchone()
        if row is None:
            return None
        return Document(json.loads(row[0]), row[1], row[2])

    def put(
        self,
        namespace: str,
        id: str,
        value: Mapping[str, Any],
        *,
        expect: int | None = None,
        expires_at: float | None = None,
    ) -> int:
        text = dumps(value)
        with self._write() as conn:
            row = conn.execute(
                f"SELECT version FROM docs WHERE namespace = ? AND id = ? AND {_LIVE}",
                (namespace, id, time.time()),
            ).fetchone()
            version = 0 if row is None else int(row[0])
            if expect is not None and expect != version:
                raise StoreConflict(namespace, id, expect, version)
            conn.execute(
                "INSERT OR REPLACE INTO docs VALUES (?, ?, ?, ?, ?)",
                (namespace, id, text, version + 1, expires_at),
            )
            return version + 1

    def delete(self, namespace: str, id: str) -> None:
        with self._write() as conn:
            for table in ("docs", "streams", "records"):
                conn.execute(
                    f"DELETE FROM {table} WHERE namespace = ? AND id = ?",
                    (namespace, id),
                )

    def scan(self, namespace: str) -> Iterator[tuple[str, Document]]:
        with self._connection() as conn:
            rows = conn.execute(
                f"SELECT id, value, version, expires_at FROM docs"
                f" WHERE namespace = ? AND {_LIVE}",
                (namespace, time.time()),
            ).fetchall()
        return iter([(r[0], Document(json.loads(r[1]), r[2], r[3])) for r in rows])

    # -- streams -----------------------------------------------------------

    def append(
        self,
        namespace: str,
        id: str,
        records: Sequence[Mapping[str, Any]],
        *,
        expires_at: float | None = None,
    ) -> int:
        return self.append_many([(namespace, id, records, expires_at)])[0]

    def append_many(
        self,
        batch: Sequence[tuple[str, str, Sequence[Mapping[str, Any]], float | None]],
    ) -> list[int]:
        """Several appends in one transaction (group commit); their lengths.

        The off-loop runner batches concurrent appends through this, so N
        calls recording at once pay for one commit, not N.
        """
        texts = [[dumps(r) for r in records] for _, _, records, _ in batch]
        lengths: list[int] = []
        with self._write() as conn:
            now = time.time()
            for (namespace, id, _, expires_at), lines in zip(batch, texts, strict=True):
                lengths.append(_append_one(conn, namespace, id, lines, expires_at, now))
        with self._appended:
            self._appends += 1
            self._appended.notify_all()
        return lengths

    def read(self, namespace: str, id: str, start: int = 0) -> list[Mapping[str, Any]]:
        with self._connection() as conn:
            rows = conn.execute(
                "SELECT r.record FROM records r JOIN streams s"
                " ON s.namespace = r.namespace AND s.id = r.id"
                " WHERE r.namespace = ? AND r.id = ? AND r.seq >= ?"
                " AND (s.expires_at IS NULL OR s.expires_at > ?) ORDER BY r.seq",
                (namespace, id, max(0, start), time.time()),
            ).fetchall()
        return [json.loads(row[0]) for row in rows]

    def wait(
        self, namespace: str, id: str, start: int, timeout: float
    ) -> list[Mapping[str, Any]]:
        deadline = time.monotonic() + timeout
        delay = 0.001
        while True:
            with self._appended:
                seen = self._appends
            found = self.read(namespace, id, start)
            left = deadline - time.monotonic()
            if found or left <= 0:
                return found
            with self._appended:
                if self._appends == seen:
                    self._appended.wait(min(delay, left))
            delay = min(delay * 2, self.poll_interval)

    # -- upkeep ------------------------------------------------------------

    def sweep(self, now: float) -> int:
        with self._write() as conn:
            gone = conn.execute(
                "DELETE FROM docs WHERE expires_at <= ?", (now,)
            ).rowcount
            ended = conn.execute(
                "DELETE FROM streams WHERE expires_at <= ? RETURNING namespace, id",
                (now,),
            ).fetchall()
            conn.executemany(
                "DELETE FROM records WHERE namespace = ? AND id = ?", ended
            )
            return gone + len(ended)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            conns, self._all, self._idle = self._all, [], []
        for conn in conns:
            conn.close()

    # -- connections -------------------------------------------------------

    @contextmanager
    def _connection(self) -> Generator[sqlite3.Connection]:
        conn = self._acquire()
        try:
            yield conn
        except sqlite3.Error as exc:
            raise _store_error(self.path, exc) from exc
        finally:
            with self._lock:
                if self._closed:
                    conn.close()
                else:
                    self._idle.append(conn)

    @contextmanager
    def _write(self) -> Generator[sqlite3.Connection]:
        # BEGIN IMMEDIATE takes the write lock before the first read, so the
        # read-check-write of a compare-and-swap is atomic across processes.
        with self._writing, self._connection() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.rollback()
                raise
            conn.commit()

    def _acquire(self) -> sqlite3.Connection:
        with self._lock:
            if self._closed:
                raise StoreUnavailable(f"sqlite:{self.path}: the store is closed")
            if self._idle:
                return self._idle.pop()
        conn = self._connect()
        with self._lock:
            self._all.append(conn)
        return conn

    def _connect(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(
                self.path,
                isolation_level=None,  # we issue BEGIN IMMEDIATE ourselves
                check_same_thread=False,  # the pool hands it to one thread at a time
                timeout=self._busy_ms / 1000,
            )
            conn.execute(f"PRAGMA busy_timeout = {self._busy_ms}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute(f"PRAGMA synchronous = {self.synchronous}")
        except sqlite3.Error as exc:
            raise StoreUnavailable(
                f"cannot open sqlite:{self.path}: {_why(self.path, exc)}"
            ) from None
        return conn


def _why(path: Path, exc: sqlite3.Error) -> str:
    # sqlite says "unable to open database file" for a missing directory
    # and an unwritable one alike: name the case the user can fix.
    folder = Path(path).parent
    if not folder.is_dir():
        return f"no directory {folder} (create it first)"
    if not os.access(folder, os.W_OK):
        return f"directory {folder} is not writable"
    return str(exc)


def _append_one(
    conn: sqlite3.Connection,
    namespace: str,
    id: str,
    lines: list[str],
    expires_at: float | None,
    now: float,
) -> int:
    # The length is the records' highest index + 1 (an index lookup), so a
    # plain append writes only the records' page; the streams row changes
    # when a stream starts or its expiry does: one page less to commit.
    row = conn.execute(
        "SELECT expires_at, (SELECT max(seq) FROM records r"
        " WHERE r.namespace = s.namespace AND r.id = s.id)"
        " FROM streams s WHERE namespace = ? AND id = ?",
        (namespace, id),
    ).fetchone()
    old_expiry: float | None = None if row is None else row[0]
    length = 0 if row is None or row[1] is None else int(row[1]) + 1
    if old_expiry is not None and old_expiry <= now:
        # An expired stream reads as missing; appending starts a new one.
        conn.execute(
            "DELETE FROM records WHERE namespace = ? AND id = ?", (namespace, id)
        )
        length, old_expiry = 0, None
    conn.executemany(
        "INSERT INTO records VALUES (?, ?, ?, ?)",
        [(namespace, id, length + i, line) for i, line in enumerate(lines)],
    )
    expiry = old_expiry if expires_at is None else expires_at
    if row is None or expiry != row[0]:
        conn.execute(
            "INSERT OR REPLACE INTO streams (namespace, id, expires_at)"
            " VALUES (?, ?, ?)",
            (namespace, id, expiry),
        )
    return length + len(lines)


def _create_schema(conn: sqlite3.Connection, path: Path) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        for statement in _SCHEMA.split(";"):
            if statement.strip():
                conn.execute(statement)
        row = conn.execute(
            "SELECT value FROM meta WHERE key = 'schema_version'"
        ).fetchone()
        found = 0 if row is None else int(row[0])
        _check_layout(path, found)
        _migrate(conn, found)
        conn.execute(
            "INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)",
            (str(SCHEMA_VERSION),),
        )
    except BaseException:
        conn.rollback()
        raise
    conn.commit()


def _check_layout(path: Path, found: int) -> None:
    if found > SCHEMA_VERSION:
        raise StoreUnavailable(
            f"sqlite:{path} has store layout {found}; this yieldmcp reads"
            f" layout {SCHEMA_VERSION} (upgrade yieldmcp)"
        )


def _migrate(conn: sqlite3.Connection, found: int) -> None:
    # Each layout's steps from the one before, in the same transaction as the
    # version bump (0: a new file, made in the current layout already).
    if found == 1:
        # Layout 2: a stream's length is its records' max(seq) + 1, so an
        # append need not rewrite the streams row.
        conn.execute("ALTER TABLE streams DROP COLUMN length")


def _store_error(path: Path, exc: sqlite3.Error) -> StoreError:
    if isinstance(exc, sqlite3.OperationalError):
        return StoreUnavailable(f"sqlite:{path}: {exc}")
    return StoreError(f"sqlite:{path}: {exc}")

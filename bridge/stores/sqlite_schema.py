"""The SQLite store's tables, created on open, and their layout version.

Kept apart from :mod:`.sqlite` (the queries) so each stays short; with them
the append both of its writes share (:func:`append_one`). The layout
is versioned in the ``meta`` table: a file made by a newer layout is refused
in one line; an older one is migrated in place by :func:`_migrate`, inside
the transaction that bumps the version.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from .base import StoreUnavailable

__all__ = ["SCHEMA_VERSION", "append_one", "create_schema"]

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


def create_schema(conn: sqlite3.Connection, path: Path) -> None:
    """Create (or check and migrate) the tables, in one write transaction.

    Raises:
        StoreUnavailable: the file has a newer layout than this code reads.
    """
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


def append_one(
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

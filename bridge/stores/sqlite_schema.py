"""The SQLite store's tables, created on open, and their layout version.

Kept apart from :mod:`.sqlite` (the queries) so each stays short. The layout
is versioned in the ``meta`` table: a file made by a newer layout is refused
in one line; an older one is migrated in place by :func:`_migrate`, inside
the transaction that bumps the version.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from .base import StoreUnavailable

__all__ = ["SCHEMA_VERSION", "create_schema"]

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

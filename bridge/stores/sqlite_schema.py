"""The SQLite store's tables, created on open, and their layout version.

Kept apart from :mod:`.sqlite` (the queries) so each stays short; with them
the append both of its writes share (:func:`append_one`). The layout
is versioned in the ``meta`` table: a file made by a newer layout is refused
in one line; an older one is migrated in place by :func:`_migrate`, inside
the transaction that bumps the version. A file that is neither new nor a
store (another application's database) is refused by :func:`check_ours`
before anything in it is changed.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from .base import StoreUnavailable

__all__ = ["SCHEMA_VERSION", "append_one", "check_ours", "create_schema"]

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

_TABLES = frozenset({"meta", "docs", "streams", "records"})
"""The tables every layout has: a file with them and a version in ``meta``
is a store."""


def check_ours(conn: sqlite3.Connection, path: Path, *, new: bool = True) -> None:
    """Refuse a file that is neither new nor a store, reading only (a new
    file too, without ``new``: a reader makes no store).

    A new file (or a database with nothing in it) is ours to make a store
    of; one with a layout version in ``meta`` and the store's tables is a
    store. Anything else is another application's database: opening it as
    a store would add our tables to it and switch it to WAL (which lasts,
    and which that application may not expect), so this runs on a
    connection that has written nothing and set nothing, before
    :func:`create_schema` and before the store's own connections.

    Raises:
        StoreUnavailable: another application's database, or a newer layout.
        sqlite3.Error: the file cannot be read (not a database, locked).
    """
    names = sorted(
        str(row[0])
        for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite!_%' ESCAPE '!'"
        )
    )
    if not names and new:
        return  # a new file
    tables = {
        str(row[0])
        for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    }
    found = _layout(conn) if "meta" in tables else None
    if found is not None:
        _check_layout(path, found)
        if tables >= _TABLES:
            return
    if not names:
        raise StoreUnavailable(f"sqlite:{path} is not a yieldmcp store (it is empty)")
    # repr: a name in one line, its control characters escaped.
    shown = ", ".join(repr(name) for name in names[:3])
    more = f" and {len(names) - 3} more" if len(names) > 3 else ""
    raise StoreUnavailable(
        f"sqlite:{path} is not a yieldmcp store (it holds {shown}{more}): another"
        " application's database is not used, and was not changed; give the"
        " path of a new file"
    )


def _layout(conn: sqlite3.Connection) -> int | None:
    """The layout version ``meta`` says, or None if it says none."""
    try:
        row = conn.execute(
            "SELECT value FROM meta WHERE key = 'schema_version'"
        ).fetchone()
        return None if row is None else int(row[0])
    except (sqlite3.Error, ValueError, TypeError):
        return None  # another application's table called meta


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

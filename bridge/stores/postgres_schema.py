"""The PostgreSQL store's tables and its append function, created on open.

Kept apart from :mod:`.postgres` (the queries) so each stays short. The
layout is versioned in ``yieldmcp_meta``; a later layout adds its migration
steps in :func:`create_schema`, keyed on the version found.
"""

from __future__ import annotations

from typing import Any, Final

from .base import StoreUnavailable

__all__ = ["SCHEMA_VERSION", "check_schema", "create_schema"]

SCHEMA_VERSION: Final = 1

# Any constant works: it only keeps processes that open the store at the same
# moment from creating the tables twice.
_LOCK_KEY: Final = 0x79_69_65_6C_64  # "yield"

_TABLES: Final = (
    "CREATE TABLE IF NOT EXISTS yieldmcp_meta ("
    " key text PRIMARY KEY, value text NOT NULL)",
    "CREATE TABLE IF NOT EXISTS yieldmcp_docs ("
    " namespace text NOT NULL, id text NOT NULL, value text NOT NULL,"
    " version bigint NOT NULL, expires_at double precision,"
    " PRIMARY KEY (namespace, id))",
    "CREATE TABLE IF NOT EXISTS yieldmcp_streams ("
    " namespace text NOT NULL, id text NOT NULL, length bigint NOT NULL,"
    " expires_at double precision, PRIMARY KEY (namespace, id))",
    "CREATE TABLE IF NOT EXISTS yieldmcp_records ("
    " namespace text NOT NULL, id text NOT NULL, seq bigint NOT NULL,"
    " record text NOT NULL, PRIMARY KEY (namespace, id, seq))",
    "CREATE INDEX IF NOT EXISTS yieldmcp_docs_expiry ON yieldmcp_docs"
    " (expires_at) WHERE expires_at IS NOT NULL",
    "CREATE INDEX IF NOT EXISTS yieldmcp_streams_expiry ON yieldmcp_streams"
    " (expires_at) WHERE expires_at IS NOT NULL",
)

# One round trip per append: lock the stream's row (creating it), start it
# again if it expired, insert the records, set length and expiry, and notify
# the listeners of this stream (delivered when the transaction commits).
_APPEND: Final = """
CREATE OR REPLACE FUNCTION yieldmcp_append(
    p_ns text, p_id text, p_records text[], p_expires double precision,
    p_now double precision
) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    cur_len bigint;
    cur_exp double precision;
    n bigint := coalesce(array_length(p_records, 1), 0);
BEGIN
    INSERT INTO yieldmcp_streams VALUES (p_ns, p_id, 0, NULL)
        ON CONFLICT DO NOTHING;
    SELECT length, expires_at INTO cur_len, cur_exp FROM yieldmcp_streams
        WHERE namespace = p_ns AND id = p_id FOR UPDATE;
    IF cur_exp IS NOT NULL AND cur_exp <= p_now THEN
        DELETE FROM yieldmcp_records WHERE namespace = p_ns AND id = p_id;
        cur_len := 0;
        cur_exp := NULL;
    END IF;
    INSERT INTO yieldmcp_records
        SELECT p_ns, p_id, cur_len + t.o - 1, t.r
        FROM unnest(p_records) WITH ORDINALITY AS t(r, o);
    UPDATE yieldmcp_streams
        SET length = cur_len + n, expires_at = coalesce(p_expires, cur_exp)
        WHERE namespace = p_ns AND id = p_id;
    PERFORM pg_notify('yieldmcp_append', json_build_array(p_ns, p_id)::text);
    RETURN cur_len + n;
END $$
"""


# Each table's first columns (in order: rows are written positionally), as
# ``format_type`` names their types.
_COLUMNS: Final = {
    "yieldmcp_meta": (("key", "text"), ("value", "text")),
    "yieldmcp_docs": (
        ("namespace", "text"),
        ("id", "text"),
        ("value", "text"),
        ("version", "bigint"),
        ("expires_at", "double precision"),
    ),
    "yieldmcp_streams": (
        ("namespace", "text"),
        ("id", "text"),
        ("length", "bigint"),
        ("expires_at", "double precision"),
    ),
    "yieldmcp_records": (
        ("namespace", "text"),
        ("id", "text"),
        ("seq", "bigint"),
        ("record", "text"),
    ),
}


def create_schema(conn: Any, shown: str) -> None:
    """Create (or check) the tables and function on a psycopg connection.

    ``shown`` is the store's URL as errors name it (no password).

    Raises:
        StoreUnavailable: the database holds a newer layout than this code,
            a layout version that is no number, or tables of ours whose
            columns are not the layout's (altered by hand, another program):
            one line naming the store and the problem, rather than a
            traceback from the first row read.
    """
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
        for statement in _TABLES:
            conn.execute(statement)
        _check_layout(conn, shown)
        conn.execute(_APPEND)
        conn.execute(
            "INSERT INTO yieldmcp_meta VALUES ('schema_version', %s)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (str(SCHEMA_VERSION),),
        )


def check_schema(conn: Any, shown: str) -> None:
    """Check, reading only, that the database is a store this code reads:
    what :func:`create_schema` checks, with nothing created or written (a
    reader's open: a role that may only ``SELECT`` runs it, and a database
    that is no store is left as it was).

    Raises:
        StoreUnavailable: no store's tables, or what :func:`create_schema`
            refuses.
    """
    rows = conn.execute(
        "SELECT name FROM unnest(%s::text[]) AS name WHERE to_regclass(name) IS NULL",
        (list(_COLUMNS),),
    ).fetchall()
    if rows:
        raise StoreUnavailable(
            f"{shown} is not a yieldmcp store (it has no table {rows[0][0]}):"
            " nothing was created in it; give the URL of a store"
        )
    _check_layout(conn, shown)


def _check_layout(conn: Any, shown: str) -> None:
    """Refuse tables of ours whose columns are not the layout's, and a
    layout newer than this code reads (:class:`StoreUnavailable`)."""
    _check_columns(conn, shown)
    row = conn.execute(
        "SELECT value FROM yieldmcp_meta WHERE key = 'schema_version'"
    ).fetchone()
    found = 0 if row is None else _layout(row[0], shown)
    if found > SCHEMA_VERSION:
        raise StoreUnavailable(
            f"{shown}: the database has store layout {found}; this yieldmcp"
            f" reads layout {SCHEMA_VERSION} (upgrade yieldmcp)"
        )


def _layout(text: str, shown: str) -> int:
    """The layout version ``yieldmcp_meta`` holds, which our writers store
    as a number's digits."""
    if not (text.isascii() and text.isdigit() and len(text) <= 9):
        raise StoreUnavailable(
            f"{shown}: the database's store layout version (yieldmcp_meta"
            " 'schema_version') is not a number: not a store this yieldmcp can"
            " use (was it changed by hand, or by another program?)"
        )
    return int(text)


def _check_columns(conn: Any, shown: str) -> None:
    """Refuse tables of ours whose columns are not the layout's."""
    rows = conn.execute(
        "SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod)"
        " FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid"
        " WHERE a.attrelid = ANY (%s::regclass[]) AND a.attnum > 0"
        " AND NOT a.attisdropped ORDER BY c.relname, a.attnum",
        (list(_COLUMNS),),
    ).fetchall()
    found: dict[str, list[tuple[str, str]]] = {}
    for table, column, kind in rows:
        found.setdefault(str(table), []).append((str(column), str(kind)))
    for table, want in _COLUMNS.items():
        have = found.get(table, [])
        if have[: len(want)] == list(want):
            continue  # (a column added after ours does no harm)
        names = dict(have)
        why = next(
            (
                f"its column {column} is {names[column][:40]!r}, not {kind}"
                if column in names
                else f"it has no column {column}"
                for column, kind in want
                if names.get(column) != kind
            ),
            "its columns are not the layout's",
        )
        raise StoreUnavailable(
            f"{shown}: the table {table} is not a yieldmcp store's ({why}):"
            " not a store this yieldmcp can use (was it changed by hand, or by"
            " another program?)"
        )

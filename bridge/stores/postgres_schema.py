"""The PostgreSQL store's tables and its append function, created on open.

Kept apart from :mod:`.postgres` (the queries) so each stays short. The
layout is versioned in ``yieldmcp_meta``; a later layout adds its migration
steps in :func:`create_schema`, keyed on the version found.
"""

from __future__ import annotations

from typing import Any, Final

from .base import StoreUnavailable

__all__ = ["SCHEMA_VERSION", "create_schema"]

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


def create_schema(conn: Any) -> None:
    """Create (or check) the tables and function on a psycopg connection.

    Raises:
        StoreUnavailable: the database holds a newer layout than this code.
    """
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
        for statement in _TABLES:
            conn.execute(statement)
        row = conn.execute(
            "SELECT value FROM yieldmcp_meta WHERE key = 'schema_version'"
        ).fetchone()
        found = 0 if row is None else int(row[0])
        if found > SCHEMA_VERSION:
            raise StoreUnavailable(
                f"the database has store layout {found}; this yieldmcp reads"
                f" layout {SCHEMA_VERSION} (upgrade yieldmcp)"
            )
        conn.execute(_APPEND)
        conn.execute(
            "INSERT INTO yieldmcp_meta VALUES ('schema_version', %s)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (str(SCHEMA_VERSION),),
        )

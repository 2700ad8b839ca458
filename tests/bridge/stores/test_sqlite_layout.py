"""The SQLite file's layout is versioned: an older file is migrated in place
(its data kept), a newer one is refused in one line rather than misread."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from bridge.stores import StoreUnavailable, open_store
from bridge.stores.sqlite import SCHEMA_VERSION

# The first layout (1), as the first SQLiteStore wrote it.
LAYOUT_1 = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE docs (namespace TEXT NOT NULL, id TEXT NOT NULL, value TEXT NOT NULL,
    version INTEGER NOT NULL, expires_at REAL, PRIMARY KEY (namespace, id))
    WITHOUT ROWID;
CREATE TABLE streams (namespace TEXT NOT NULL, id TEXT NOT NULL,
    length INTEGER NOT NULL, expires_at REAL, PRIMARY KEY (namespace, id))
    WITHOUT ROWID;
CREATE TABLE records (namespace TEXT NOT NULL, id TEXT NOT NULL,
    seq INTEGER NOT NULL, record TEXT NOT NULL, PRIMARY KEY (namespace, id, seq))
    WITHOUT ROWID;
INSERT INTO meta VALUES ('schema_version', '1');
INSERT INTO docs VALUES ('task', 't', '{"n":1}', 3, NULL);
INSERT INTO streams VALUES ('call', 'c', 2, NULL);
INSERT INTO records VALUES ('call', 'c', 0, '{"i":0}'), ('call', 'c', 1, '{"i":1}');
"""


def test_a_layout_1_file_is_migrated_and_keeps_its_data(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    with sqlite3.connect(path) as conn:
        conn.executescript(LAYOUT_1)
    conn.close()
    store = open_store(f"sqlite:{path}")
    try:
        doc = store.get("task", "t")
        assert doc is not None
        assert (dict(doc.value), doc.version) == ({"n": 1}, 3)
        assert store.append("call", "c", [{"i": 2}]) == 3
        assert store.read("call", "c") == [{"i": 0}, {"i": 1}, {"i": 2}]
    finally:
        store.close()
    with sqlite3.connect(path) as conn:
        version = conn.execute("SELECT value FROM meta").fetchone()[0]
    conn.close()
    assert int(version) == SCHEMA_VERSION


def test_a_newer_layout_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "new.sqlite3"
    open_store(f"sqlite:{path}").close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    conn.close()
    with pytest.raises(StoreUnavailable, match="layout 99") as caught:
        open_store(f"sqlite:{path}")
    assert "\n" not in str(caught.value)


# Other applications' databases, each in rollback-journal mode (SQLite's
# default): their own tables; a table called meta of their own; a meta
# with a schema_version but none of the store's tables.
FOREIGN = [
    "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT);"
    "INSERT INTO users VALUES (1, 'ada');",
    "CREATE TABLE meta (a, b, c); INSERT INTO meta VALUES (1, 2, 3);",
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);"
    "INSERT INTO meta VALUES ('schema_version', '2');"
    "CREATE TABLE orders (id INTEGER PRIMARY KEY);",
]


@pytest.mark.parametrize("script", FOREIGN)
def test_another_applications_database_is_refused_and_left_unchanged(
    tmp_path: Path, script: str
) -> None:
    # It was switched to WAL (which lasts in the file) and given the store's
    # tables before the layout was looked at.
    path = tmp_path / "other_apps.db"
    conn = sqlite3.connect(path)
    conn.executescript(script)
    conn.close()
    before = path.read_bytes()
    with pytest.raises(StoreUnavailable, match="is not a yieldmcp store") as caught:
        open_store(f"sqlite:{path}")
    assert "\n" not in str(caught.value)
    assert "was not changed" in str(caught.value)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other_apps.db"]
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    finally:
        conn.close()


def test_an_empty_database_made_elsewhere_becomes_a_store(tmp_path: Path) -> None:
    path = tmp_path / "empty.sqlite3"
    conn = sqlite3.connect(path)
    conn.execute("VACUUM")  # a database file with a header and no tables
    conn.close()
    store = open_store(f"sqlite:{path}")
    try:
        assert store.put("task", "t", {"n": 1}) == 1
    finally:
        store.close()

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

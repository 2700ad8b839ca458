"""The SQLite file holds every journal and the request-state key (bridge.durable.keys):
it is made readable by its owner only, whatever the umask, and a file others
can read is warned of."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import pytest

from bridge.stores import open_store


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_store_file_and_its_wal_are_the_owners_alone(tmp_path: Path) -> None:
    path = tmp_path / "calls.sqlite3"
    old = os.umask(0o022)  # the usual one: 0644 files
    try:
        store = open_store(f"sqlite:{path}")
        store.put("meta", "k", {"key": "secret"}, expect=0)
    finally:
        os.umask(old)
    try:
        written = [p for p in tmp_path.iterdir() if p.name.startswith(path.name)]
        assert {p.name for p in written} >= {path.name, f"{path.name}-wal"}
        assert {p.name: _mode(p) for p in written} == {p.name: 0o600 for p in written}
    finally:
        store.close()


def test_a_store_file_others_can_read_is_warned_of_and_kept(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "shared.sqlite3"
    open_store(f"sqlite:{path}").close()
    path.chmod(0o644)
    with caplog.at_level(logging.WARNING, logger="yieldmcp.stores"):
        open_store(f"sqlite:{path}").close()
    assert _mode(path) == 0o644  # the user's to change
    assert [r.getMessage() for r in caplog.records] == [
        f"sqlite:{path} can be read by other users (mode 644): it holds every"
        f" journal and the request-state key; chmod 600 {path}"
    ]

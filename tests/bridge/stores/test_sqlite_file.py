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
from tests.helpers import needs_root


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


def test_a_link_planted_at_the_store_path_is_not_followed(tmp_path: Path) -> None:
    # In a shared folder another user could link the store's name to a file
    # of their choosing: the store (and its request-state key) was made
    # there, mode 644, readable by them.
    from bridge.stores import StoreUnavailable

    chosen = tmp_path / "theirs" / "loot.db"
    chosen.parent.mkdir()
    planted = tmp_path / "store.sqlite3"
    planted.symlink_to(chosen)
    with pytest.raises(StoreUnavailable, match="is a symbolic link: not followed"):
        open_store(f"sqlite:{planted}")
    assert not chosen.exists()


def test_another_users_file_at_the_store_path_is_refused(tmp_path: Path) -> None:
    from bridge.stores import StoreUnavailable

    needs_root("giving a file to another user")
    planted = tmp_path / "store.sqlite3"
    planted.write_bytes(b"")
    os.chown(planted, 65534, 65534)
    with pytest.raises(
        StoreUnavailable, match=r"belongs to another user \(uid 65534\)"
    ):
        open_store(f"sqlite:{planted}")


def test_a_store_file_every_user_can_write_is_refused(tmp_path: Path) -> None:
    # Anyone could change its journals and plant the request-state key the
    # server seals states with: refused as a configuration file every user
    # can write is (one rule, bridge.trusted_file).
    from bridge.stores import StoreUnavailable

    path = tmp_path / "store.sqlite3"
    open_store(f"sqlite:{path}").close()
    path.chmod(0o666)
    with pytest.raises(StoreUnavailable) as caught:
        open_store(f"sqlite:{path}")
    assert str(caught.value) == (
        f"sqlite:{path} can be written by every user, who could change every "
        f"journal and the request-state key: not used (chmod o-w {path})"
    )
    assert _mode(path) == 0o666  # refused, not changed


_CLOSE_UNDER_READERS = """
import sys, threading
from bridge.stores import open_store
for round_ in range(100):
    store = open_store(f"sqlite:{sys.argv[1]}/s{round_}.db")
    store.append("call", "c", [{"k": str(i), "d": "x" * 100} for i in range(200)])
    stop = threading.Event()
    def reader():
        while not stop.is_set():
            try:
                store.read("call", "c")
            except Exception:  # the store is closed: what a reader then gets
                return
    threads = [threading.Thread(target=reader) for _ in range(4)]
    for thread in threads:
        thread.start()
    store.close()
    stop.set()
    for thread in threads:
        thread.join()
print("ok")
"""


def test_closing_the_store_under_its_readers_never_crashes_the_process(
    tmp_path: Path,
) -> None:
    # close() closed every connection, those in use by other threads too:
    # a statement running on one read freed memory, and the process died
    # of a segmentation fault (a pytest worker, once, in the full suite).
    from tests.bridge.stores.helpers import finish, start_python

    assert finish(start_python(_CLOSE_UNDER_READERS, str(tmp_path))) == "ok\n"

"""Timeouts too large to mean anything: refused in a ``sqlite:`` URL with one
line, and taken as "practically never" by the store's watchdog, which must
not die of them (``threading.Condition.wait(1e300)`` raises OverflowError)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
import trio

from bridge.stores import StoreUnavailable, open_store
from bridge.stores.running import AsyncStore
from bridge.stores.sqlite import SQLiteStore
from bridge.stores.url import sqlite_options
from tests.bridge.cli.inprocess import yieldmcp


@pytest.mark.parametrize("name", ["busy_timeout", "poll_interval"])
@pytest.mark.parametrize("value", ["inf", "1e300", "86401", "-inf"])
def test_a_sqlite_option_past_a_day_is_refused(
    tmp_path: Path, name: str, value: str
) -> None:
    with pytest.raises(StoreUnavailable, match=name) as caught:
        sqlite_options(f"sqlite:{tmp_path}/s.db?{name}={value}")
    assert "\n" not in str(caught.value)


def test_a_sqlite_option_of_a_day_is_taken(tmp_path: Path) -> None:
    _, options = sqlite_options(f"sqlite:{tmp_path}/s.db?busy_timeout=86400")
    assert options["busy_timeout"] == 86400.0


@pytest.mark.parametrize("value", ["inf", "1e300"])
def test_journal_refuses_an_endless_busy_timeout_in_one_line(
    tmp_path: Path, value: str
) -> None:
    path = tmp_path / "s.db"
    SQLiteStore(path).close()
    done = yieldmcp("journal", f"sqlite:{path}?busy_timeout={value}")
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1
    assert "busy_timeout must be at most" in done.stderr


def _watchdogs() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "yieldmcp-store-watchdog"]


@pytest.mark.parametrize("timeout", [1e300, 1e18])
def test_a_huge_store_timeout_keeps_the_watchdog_alive(
    tmp_path: Path, timeout: float
) -> None:
    before = set(_watchdogs())
    died: list[threading.ExceptHookArgs] = []
    hook = threading.excepthook
    threading.excepthook = died.append
    store = AsyncStore(SQLiteStore(tmp_path / "s.db"), timeout=timeout)

    async def main() -> tuple[int, object, list[object]]:
        version = await store.put("task", "t", {"n": 1})
        found = await store.get("task", "t")
        length = await store.append("call", "c", [{"k": 1}])
        await trio.sleep(0.2)  # the watchdog has looked at its jobs
        records = await store.wait("call", "c", 0, 0.1)
        return version + length, found, list(records)

    try:
        total, found, records = trio.run(main)
        time.sleep(0.1)
        watchdogs = [t for t in _watchdogs() if t not in before]
        assert died == []
        assert watchdogs, "no watchdog started"
        assert all(t.is_alive() for t in watchdogs)
        assert total == 2
        assert found is not None
        assert records == [{"k": 1}]
    finally:
        threading.excepthook = hook
        trio.run(store.aclose)


@pytest.mark.parametrize("timeout", [1e300, float("inf")])
def test_a_durable_store_opens_with_a_huge_timeout(
    durable_url: str, timeout: float
) -> None:
    store = open_store(durable_url, timeout=timeout)
    try:
        assert store.put("task", "t", {"n": 1}) == 1
    finally:
        store.close()

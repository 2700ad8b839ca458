"""The JournalStore contract, run over every backend (memory, SQLite, Redis,
Postgres): what the server relies on when it keeps calls, tasks and sessions
in a store."""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from typing import Any

import psycopg
import pytest
import redis

from bridge.stores import (
    JournalStore,
    StoreConflict,
    StoreError,
    StoreUnreadable,
    open_store,
)
from bridge.stores.codec import LAST_VERSION
from tests.bridge.stores.helpers import finish, start_python

PAST = 1_000.0  # long expired
FUTURE = 4_000_000_000.0  # year 2096

VALUE: dict[str, Any] = {
    "text": 'héllo ☃ \u2028 "quoted"',
    "n": 3,
    "x": 0.5,
    "ok": True,
    "none": None,
    "list": [1, "two", {"three": [3]}],
}


# -- documents --------------------------------------------------------------


def test_missing_document_reads_none(store: JournalStore) -> None:
    assert store.get("call", "nope") is None


def test_put_then_get_gives_back_value_and_version(store: JournalStore) -> None:
    assert store.put("call", "a", VALUE) == 1
    doc = store.get("call", "a")
    assert doc is not None
    assert (dict(doc.value), doc.version, doc.expires_at) == (VALUE, 1, None)
    assert store.put("call", "a", {"v": 2}) == 2
    doc = store.get("call", "a")
    assert doc is not None
    assert (dict(doc.value), doc.version) == ({"v": 2}, 2)


def test_expect_zero_creates_only_once(store: JournalStore) -> None:
    assert store.put("task", "t", {"n": 1}, expect=0) == 1
    with pytest.raises(StoreConflict) as caught:
        store.put("task", "t", {"n": 2}, expect=0)
    assert (caught.value.expected, caught.value.found) == (0, 1)
    doc = store.get("task", "t")
    assert doc is not None
    assert dict(doc.value) == {"n": 1}


def test_compare_and_swap_refuses_a_stale_version(store: JournalStore) -> None:
    store.put("task", "t", {"n": 1})
    assert store.put("task", "t", {"n": 2}, expect=1) == 2
    with pytest.raises(StoreConflict) as caught:
        store.put("task", "t", {"n": 3}, expect=1)
    assert (caught.value.namespace, caught.value.id) == ("task", "t")
    assert (caught.value.expected, caught.value.found) == (1, 2)
    with pytest.raises(StoreConflict):
        store.put("task", "missing", {"n": 1}, expect=3)
    doc = store.get("task", "t")
    assert doc is not None
    assert (dict(doc.value), doc.version) == ({"n": 2}, 2)


def test_namespaces_are_separate(store: JournalStore) -> None:
    store.put("call", "same", {"in": "call"})
    store.put("task", "same", {"in": "task"})
    store.append("call", "same", [{"r": 1}])
    call, task = store.get("call", "same"), store.get("task", "same")
    assert call is not None
    assert task is not None
    assert (call.value["in"], task.value["in"]) == ("call", "task")
    assert store.read("task", "same") == []


def test_delete_removes_document_and_stream(store: JournalStore) -> None:
    store.put("call", "d", {"n": 1})
    store.append("call", "d", [{"r": 1}])
    store.delete("call", "d")
    store.delete("call", "never-there")
    assert store.get("call", "d") is None
    assert store.read("call", "d") == []
    assert store.put("call", "d", {"n": 2}, expect=0) == 1


def test_scan_lists_live_documents_of_one_namespace(store: JournalStore) -> None:
    store.put("task", "a", {"n": 1})
    store.put("task", "b", {"n": 2}, expires_at=FUTURE)
    store.put("task", "old", {"n": 3}, expires_at=PAST)
    store.put("call", "c", {"n": 4})
    found = {id: dict(doc.value) for id, doc in store.scan("task")}
    assert found == {"a": {"n": 1}, "b": {"n": 2}}
    assert list(store.scan("session")) == []


# -- streams ----------------------------------------------------------------


def test_append_returns_length_and_read_keeps_order(store: JournalStore) -> None:
    assert store.append("call", "s", [{"i": 0}, {"i": 1}]) == 2
    assert store.append("call", "s", [VALUE]) == 3
    assert store.read("call", "s") == [{"i": 0}, {"i": 1}, VALUE]
    assert store.read("call", "s", 2) == [VALUE]
    assert store.read("call", "s", 3) == []
    assert store.read("call", "s", 99) == []
    assert store.read("call", "never") == []


def test_wait_returns_at_once_when_records_exist(store: JournalStore) -> None:
    store.append("call", "w", [{"i": 0}, {"i": 1}])
    assert store.wait("call", "w", 1, timeout=30) == [{"i": 1}]


def test_wait_times_out_empty(store: JournalStore) -> None:
    store.append("call", "w", [{"i": 0}])
    assert store.wait("call", "w", 1, timeout=0.05) == []
    assert store.wait("call", "other", 0, timeout=0) == []


def test_wait_wakes_on_another_threads_append(store: JournalStore) -> None:
    def later() -> None:
        time.sleep(0.2)
        store.append("call", "w", [{"answer": 42}])

    thread = threading.Thread(target=later)
    thread.start()
    try:
        assert store.wait("call", "w", 0, timeout=60) == [{"answer": 42}]
    finally:
        thread.join()


def test_wait_wakes_on_another_handles_append(durable_url: str) -> None:
    # Two opens of one URL are two clients of the store (in one process here;
    # across processes below): a waiter hears the other's append. Only the
    # durable backends: two opens of memory: are two separate stores.
    waiter, writer = open_store(durable_url), open_store(durable_url)
    try:
        timer = threading.Timer(0.2, writer.append, ("call", "w", [{"a": 1}]))
        timer.start()
        started = time.monotonic()
        assert waiter.wait("call", "w", 0, timeout=120) == [{"a": 1}]
        # Woken by the append, not found by the read at the timeout (a
        # generous bound: the append comes after 0.2 s).
        assert time.monotonic() - started < 60
        timer.join()
    finally:
        waiter.close()
        writer.close()


APPEND_LATER = """
import sys, time
from bridge.stores import open_store
store = open_store(sys.argv[1])
time.sleep(0.3)
store.append("call", "w", [{"from": "another process"}])
store.close()
"""


def test_wait_wakes_on_another_processs_append(durable_url: str) -> None:
    store = open_store(durable_url)
    # Popen as a context: the writer is waited for and its pipes closed even
    # when the wait fails (left to the garbage collector, it failed a later
    # test on the same worker as an unraisable ResourceWarning).
    try:
        with start_python(APPEND_LATER, durable_url) as writer:
            started = time.monotonic()
            found = store.wait("call", "w", 0, timeout=240)
            waited = time.monotonic() - started
            finish(writer)
        assert found == [{"from": "another process"}]
        # Woken by the append, not found by the read at the timeout (a
        # generous bound: the writer starts Python and appends after 0.3 s).
        assert waited < 120
    finally:
        store.close()


def _set_version(
    url: str, namespace: str, id: str, version: int, expires_at: float | None = None
) -> None:
    """Write a document's version (and expiry) straight into the backend, as
    a stranger (or a damaged restore) would: no writer of ours writes a
    version below 1."""
    if url.startswith("sqlite:"):
        with sqlite3.connect(url.removeprefix("sqlite:")) as conn:
            conn.execute(
                "UPDATE docs SET version = ?, expires_at = ?"
                " WHERE namespace = ? AND id = ?",
                (version, expires_at, namespace, id),
            )
    elif url.startswith("postgresql:"):
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(
                "UPDATE yieldmcp_docs SET version = %s, expires_at = %s"
                " WHERE namespace = %s AND id = %s",
                (version, expires_at, namespace, id),
            )
    else:
        with redis.Redis.from_url(url) as client:
            key = f"yieldmcp:d:{json.dumps([namespace, id])}"
            exp = "" if expires_at is None else repr(expires_at)
            client.hset(key, mapping={"ver": str(version), "exp": exp})


@pytest.mark.parametrize(
    ("version", "said"),
    [
        (0, "below 1"),
        (-7, "below 1"),
        (LAST_VERSION + 1, "too large"),
        (2**63 - 1, "too large"),  # SQLite's and PostgreSQL's largest
    ],
)
def test_a_version_out_of_range_is_unreadable_never_a_conflict(
    durable_url: str, version: int, said: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A live row at version 0 never matched ``expect=0`` ("absent") nor
    any version a reader was given: PostgreSQL raised StoreConflict for
    ever, and the callers, which retry a conflict with the version they
    read, spun hundreds of transactions a second, never answering. A row at
    2**63 - 1 read, and the next put overflowed (PostgreSQL: a plain
    StoreError; SQLite: an OverflowError; Redis wrote a float back). Such a
    row is unreadable, as the other damaged rows are: every read and every
    write that meets it says so in one line, and scans pass over it."""
    store = open_store(durable_url)
    try:
        store.put("task", "fine", {"n": 1})
        store.put("task", "odd", {"n": 1})
        _set_version(durable_url, "task", "odd", version)
        writes = [
            lambda: store.put("task", "odd", {"n": 2}, expect=0),
            lambda: store.put("task", "odd", {"n": 2}, expect=1),
            lambda: store.put("task", "odd", {"n": 2}),
            lambda: store.put_and_append("task", "odd", {"n": 2}, [{"k": 1}], expect=0),
        ]
        for call in [
            lambda: store.get("task", "odd"),
            lambda: store.get_and_read("task", "odd"),
            *writes,
        ]:
            with pytest.raises(StoreUnreadable) as raised:
                call()
            assert not isinstance(raised.value, StoreConflict)
            assert raised.value.part == "document"
            assert "'odd'" in str(raised.value)
            assert said in str(raised.value)
        assert store.read("task", "odd") == []  # put_and_append appended nothing
        with caplog.at_level(logging.WARNING, logger="yieldmcp.stores"):
            assert [id for id, _ in store.scan("task")] == ["fine"]
        said = [r.getMessage() for r in caplog.records]
        assert sum("'odd' cannot be read" in m for m in said) == 1, said
        store.delete("task", "odd")  # a damaged row can be removed, and made again
        assert store.put("task", "odd", {"n": 3}, expect=0) == 1
    finally:
        store.close()


def test_an_expired_row_below_version_1_is_gone_and_made_again(
    durable_url: str,
) -> None:
    store = open_store(durable_url)
    try:
        store.put("task", "old", {"n": 1})
        _set_version(durable_url, "task", "old", 0, expires_at=PAST)
        assert store.get("task", "old") is None
        assert store.put("task", "old", {"n": 2}, expect=0) == 1
    finally:
        store.close()


# -- expiry -----------------------------------------------------------------


def test_expired_document_reads_missing_and_can_be_created_again(
    store: JournalStore,
) -> None:
    store.put("task", "e", {"n": 1}, expires_at=PAST)
    assert store.get("task", "e") is None
    assert store.put("task", "e", {"n": 2}, expect=0) == 1
    store.put("task", "f", {"n": 1}, expires_at=FUTURE)
    doc = store.get("task", "f")
    assert doc is not None
    assert doc.expires_at == FUTURE


def test_expired_stream_reads_empty_and_starts_again(store: JournalStore) -> None:
    store.append("call", "e", [{"i": 0}], expires_at=PAST)
    assert store.read("call", "e") == []
    assert store.append("call", "e", [{"i": 1}]) == 1
    assert store.read("call", "e") == [{"i": 1}]


def test_stream_expiry_is_kept_until_changed(store: JournalStore) -> None:
    store.append("call", "k", [{"i": 0}], expires_at=FUTURE)
    store.append("call", "k", [{"i": 1}])  # keeps FUTURE
    assert store.sweep(FUTURE + 1) == 1
    assert store.read("call", "k") == []


def test_sweep_deletes_what_expired_and_counts_it(store: JournalStore) -> None:
    now = 2_000_000_000.0
    store.put("task", "gone", {"n": 1}, expires_at=now - 1)
    store.put("task", "kept", {"n": 1}, expires_at=now + 1)
    store.put("task", "forever", {"n": 1})
    store.append("call", "gone", [{"i": 0}, {"i": 1}], expires_at=now)
    store.append("call", "kept", [{"i": 0}], expires_at=now + 1)
    store.append("call", "forever", [{"i": 0}])
    assert store.sweep(now) == 2
    assert store.sweep(now) == 0
    # Swept for good: with the clock back before expiry, they stay gone.
    assert {id for id, _ in store.scan("task")} == {"kept", "forever"}
    assert store.sweep(now + 1) == 2


# -- closing and reopening --------------------------------------------------


def test_close_twice_is_harmless(store_url: str) -> None:
    store = open_store(store_url)
    store.close()
    store.close()


def test_a_closed_durable_store_refuses_use(durable_url: str) -> None:
    store = open_store(durable_url)
    store.close()
    with pytest.raises(StoreError):
        store.get("call", "a")


def _end_every_other_session(url: str) -> None:
    """What a server restart, an idle timeout or an administrator does to
    the store's idle connections: the server ends them."""
    if url.startswith("redis"):
        import redis

        with redis.Redis.from_url(url) as client:
            client.client_kill_filter(_type="normal", skipme=True)
        return
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE pid <> pg_backend_pid() AND datname = current_database()"
        )


@pytest.mark.parametrize("backend", ["redis", "postgres"])
def test_connections_the_server_ended_while_idle_fail_no_operation(
    backend: str, request: pytest.FixtureRequest
) -> None:
    url: str = request.getfixturevalue(f"{backend}_url")
    store = open_store(url)
    try:
        # Several connections in the pool, all idle, all then ended.
        def use() -> None:
            store.append("call", "c", [{"i": 0}])
            store.put("task", "t", VALUE)

        threads = [threading.Thread(target=use) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        _end_every_other_session(url)
        time.sleep(0.2)  # the server's goodbyes arrive
        for _ in range(6):
            assert store.get("task", "t") is not None
            assert store.read("call", "c")[0] == {"i": 0}
    finally:
        store.close()


@pytest.mark.parametrize("backend", ["redis", "postgres"])
def test_a_wait_whose_connection_the_server_ended_still_hears_the_append(
    backend: str, request: pytest.FixtureRequest
) -> None:
    # A wait blocked on the server when its connection is ended (a restart,
    # a failover): Redis's raised StoreUnavailable at once, and the waiter
    # (a process's inbox) missed the record appended next.
    url: str = request.getfixturevalue(f"{backend}_url")
    waiter, writer = open_store(url), open_store(url)
    got: list[object] = []
    try:
        thread = threading.Thread(
            target=lambda: got.append(waiter.wait("call", "w", 0, timeout=30))
        )
        thread.start()
        time.sleep(0.5)  # the wait is blocked on the server
        _end_every_other_session(url)
        time.sleep(0.5)
        writer.append("call", "w", [{"a": 1}])
        thread.join(timeout=60)
        assert got == [[{"a": 1}]]
    finally:
        waiter.close()
        writer.close()


def test_reopening_keeps_the_data(durable_url: str) -> None:
    first = open_store(durable_url)
    first.put("task", "t", VALUE, expect=0)
    first.append("call", "c", [{"i": 0}, VALUE])
    first.close()
    again = open_store(durable_url)
    try:
        doc = again.get("task", "t")
        assert doc is not None
        assert (dict(doc.value), doc.version) == (VALUE, 1)
        assert again.read("call", "c") == [{"i": 0}, VALUE]
        assert again.put("task", "t", {"n": 2}, expect=1) == 2
    finally:
        again.close()


# -- several processes --------------------------------------------------------

RACE = """
import sys
from bridge.stores import StoreConflict, open_store
store = open_store(sys.argv[1])
rounds = int(sys.argv[2])
won = []
for i in range(rounds):
    try:
        store.put("race", f"doc{i}", {"winner": sys.argv[3]}, expect=0)
        won.append(i)
    except StoreConflict:
        pass
for _ in range(rounds):  # read, add one, write back: retried on conflict
    while True:
        doc = store.get("race", "counter")
        try:
            store.put("race", "counter", {"n": doc.value["n"] + 1}, expect=doc.version)
            break
        except StoreConflict:
            continue
store.close()
print(" ".join(map(str, won)))
"""


def test_processes_racing_compare_and_swap_get_one_winner_each(
    durable_url: str,
) -> None:
    rounds, racers = 40, 3
    store = open_store(durable_url)
    try:
        store.put("race", "counter", {"n": 0}, expect=0)
        running = [
            start_python(RACE, durable_url, str(rounds), str(n)) for n in range(racers)
        ]
        wins = [finish(p).split() for p in running]
        won = sorted(int(i) for racer in wins for i in racer)
        assert won == list(range(rounds))  # each document: exactly one winner
        for i in range(rounds):
            doc = store.get("race", f"doc{i}")
            assert doc is not None
            assert doc.version == 1
            assert str(i) in wins[int(doc.value["winner"])]
        counter = store.get("race", "counter")
        # No increment lost: every read-modify-write landed exactly once.
        assert counter is not None
        assert (counter.value["n"], counter.version) == (
            rounds * racers,
            rounds * racers + 1,
        )
    finally:
        store.close()


def test_threads_racing_compare_and_swap_lose_no_update(store: JournalStore) -> None:
    store.put("race", "counter", {"n": 0}, expect=0)
    rounds, racers = 30, 6

    def increment() -> None:
        for _ in range(rounds):
            while True:
                doc = store.get("race", "counter")
                assert doc is not None
                try:
                    store.put(
                        "race", "counter", {"n": doc.value["n"] + 1}, expect=doc.version
                    )
                    break
                except StoreConflict:
                    continue

    threads = [threading.Thread(target=increment) for _ in range(racers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    doc = store.get("race", "counter")
    assert doc is not None
    assert (doc.value["n"], doc.version) == (rounds * racers, rounds * racers + 1)

"""A document nobody can read is passed over by scans, and named once.

Recovery scans every task at start and every few seconds: one record that
was not JSON, or not a task's shape (written by hand, by another program,
truncated), failed the scan and the server with it, on every process on
the store and at each restart (found by a review that inserted one row).
"""

from __future__ import annotations

import json
import logging
import sqlite3

import psycopg
import pytest
import redis
import trio

from bridge.durable import AsyncStore
from bridge.durable.log import CALLS
from bridge.durable.tasks import TASKS, TaskStore
from bridge.stores import StoreError, StoreUnavailable, StoreUnreadable, open_store
from bridge.stores.codec import dumps

NOT_JSON = '{"tool": "sleepy"'
NOT_A_TASK = dumps({"tool": 1})


def _plant(backend: str, url: str, id: str, text: str) -> None:
    """Write a document's text straight into the backend, as a stranger would."""
    if backend == "sqlite":
        with sqlite3.connect(url.removeprefix("sqlite:")) as conn:
            conn.execute(
                "INSERT INTO docs VALUES (?, ?, ?, 1, NULL)", (TASKS, id, text)
            )
    elif backend == "postgres":
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(
                "INSERT INTO yieldmcp_docs VALUES (%s, %s, %s, 1, NULL)",
                (TASKS, id, text),
            )
    else:
        client = redis.Redis.from_url(url, decode_responses=True)
        client.hset(f'yieldmcp:d:["{TASKS}", "{id}"]', mapping={"v": text, "ver": 1})
        client.sadd(f"yieldmcp:n:{TASKS}", id)
        client.zadd("yieldmcp:expiry", {"yieldmcp:d:oops": 1})  # not a key of ours
        client.close()


@pytest.mark.parametrize("backend", ["sqlite", "redis", "postgres"])
async def test_scans_pass_over_what_cannot_be_read_and_say_so_once(
    backend: str, request: pytest.FixtureRequest, caplog: pytest.LogCaptureFixture
) -> None:
    url = request.getfixturevalue(f"{backend}_url")
    blocking = open_store(url)
    store = AsyncStore(blocking)
    try:
        await store.put(TASKS, "fine", {"kept": 1}, expect=0)
        _plant(backend, url, "junk", NOT_JSON)
        _plant(backend, url, "shape", NOT_A_TASK)
        with caplog.at_level(logging.WARNING, logger="yieldmcp.stores"):
            found = [id for id, _ in await store.scan(TASKS)]
            again = [id for id, _ in await store.scan(TASKS)]
            tasks = TaskStore(store)
            assert [id for id, _ in await tasks.scan()] == []  # "fine" is no task
            await tasks.scan()
            await store.sweep(trio.current_time() + 10**9)  # the odd expiry key
        assert sorted(found) == sorted(again) == ["fine", "shape"]
        said = [r.getMessage() for r in caplog.records]
        assert sum("'junk' cannot be read" in m for m in said) == 1, said
        assert sum("'shape' cannot be read" in m for m in said) == 1, said
        assert sum("'fine' cannot be read" in m for m in said) == 1, said
    finally:
        blocking.close()


# What no writer of ours stores: each makes a read fail in one documented
# error (StoreUnreadable) rather than in whatever the decoder raised.
UNREADABLE = {
    "not JSON": "not json",
    "a raw control": '{"v":"\x1b[2J"}',
    "an array": "[1,2]",
    "nested past the parser": '{"v":' + "[" * 3000 + "]" * 3000 + "}",
    "a lone surrogate": '{"v":"\\ud800"}',
    "a 5,000-digit number": '{"v":' + "9" * 5000 + "}",
}


def _plant_record(backend: str, url: str, id: str, text: str) -> None:
    """Overwrite the first record of ``(CALLS, id)`` with ``text``."""
    if backend == "sqlite":
        with sqlite3.connect(url.removeprefix("sqlite:")) as conn:
            conn.execute(
                "UPDATE records SET record = ? WHERE namespace = ? AND id = ?",
                (text, CALLS, id),
            )
    elif backend == "postgres":
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(
                "UPDATE yieldmcp_records SET record = %s"
                " WHERE namespace = %s AND id = %s",
                (text, CALLS, id),
            )
    else:
        client = redis.Redis.from_url(url, decode_responses=True)
        key = f"yieldmcp:s:{json.dumps([CALLS, id])}"
        client.delete(key)
        client.xadd(key, {"r": text}, id="0-1")
        client.close()


@pytest.mark.parametrize("case", sorted(UNREADABLE))
@pytest.mark.parametrize("backend", ["sqlite", "redis", "postgres"])
def test_a_record_nobody_can_read_is_one_store_error(
    backend: str, case: str, request: pytest.FixtureRequest
) -> None:
    """``read`` and ``get_and_read`` raise :class:`StoreUnreadable`, a
    :class:`StoreError` every caller of a store already handles, naming the
    record in a few words: never the decoder's own exception, nor the
    record's text."""
    url = request.getfixturevalue(f"{backend}_url")
    store = open_store(url)
    try:
        store.put(CALLS, "c1", {"params": {}})
        store.append(CALLS, "c1", [{"k": "0"}])
        _plant_record(backend, url, "c1", UNREADABLE[case])
        for read in (store.read, store.get_and_read):
            with pytest.raises(StoreUnreadable) as raised:
                read(CALLS, "c1")
            assert isinstance(raised.value, StoreError)
            assert (raised.value.namespace, raised.value.id) == (CALLS, "c1")
            assert raised.value.part == "record 1"
            said = str(raised.value)
            assert "'c1'" in said
            assert "cannot be read" in said
            assert "\n" not in said
            assert len(said) < 300, said
    finally:
        store.close()


@pytest.mark.parametrize("case", sorted(UNREADABLE))
@pytest.mark.parametrize("backend", ["sqlite", "redis", "postgres"])
def test_a_document_nobody_can_read_is_one_store_error_and_passed_over(
    backend: str,
    case: str,
    request: pytest.FixtureRequest,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``get`` raises :class:`StoreUnreadable`; a scan passes over the
    document (one nested past the parser, a ``RecursionError``, failed it)."""
    url = request.getfixturevalue(f"{backend}_url")
    store = open_store(url)
    try:
        store.put(TASKS, "fine", {"kept": 1})
        _plant(backend, url, "junk", UNREADABLE[case])
        with pytest.raises(StoreUnreadable) as raised:
            store.get(TASKS, "junk")
        assert raised.value.part == "document"
        assert len(str(raised.value)) < 300
        with caplog.at_level(logging.WARNING, logger="yieldmcp.stores"):
            assert [id for id, _ in store.scan(TASKS)] == ["fine"]
        said = [r.getMessage() for r in caplog.records]
        assert sum("'junk' cannot be read" in m for m in said) == 1, said
    finally:
        store.close()


def test_a_record_of_bytes_not_utf8_is_unreadable_not_a_store_down(
    sqlite_url: str,
) -> None:
    """SQLite keeps any bytes as text; they were an ``OperationalError``, a
    :class:`StoreUnavailable` (a store that is down), quoting the bytes."""
    store = open_store(sqlite_url)
    try:
        store.append(CALLS, "c1", [{"k": "0"}])
        with sqlite3.connect(sqlite_url.removeprefix("sqlite:")) as conn:
            conn.execute(
                "UPDATE records SET record = CAST(? AS TEXT)",
                (b'{"v":"\xff' + b"A" * 10_000 + b'"}',),
            )
        with pytest.raises(StoreUnreadable, match="not UTF-8") as raised:
            store.read(CALLS, "c1")
        assert not isinstance(raised.value, StoreUnavailable)
        assert len(str(raised.value)) < 300
    finally:
        store.close()


def test_redis_values_not_utf8_are_unreadable_and_passed_over(
    redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """redis-py decoded them strictly: its UnicodeDecodeError escaped every
    reader, and one such document failed the whole scan (recovery's)."""
    store = open_store(redis_url)
    raw = redis.Redis.from_url(redis_url)  # bytes: as a stranger writes
    try:
        store.put(TASKS, "fine", {"kept": 1})
        store.append(CALLS, "c1", [{"k": "0"}])
        not_utf8 = b'{"v":"\xff' + b"A" * 10_000 + b'"}'
        raw.hset(f'yieldmcp:d:["{TASKS}", "junk"]', mapping={"v": not_utf8, "ver": 1})
        raw.sadd(f"yieldmcp:n:{TASKS}", "junk")
        key = f"yieldmcp:s:{json.dumps([CALLS, 'c1'])}"
        raw.delete(key)
        raw.xadd(key, {"r": not_utf8}, id="0-1")
        with pytest.raises(StoreUnreadable, match="not UTF-8") as raised:
            store.get(TASKS, "junk")
        assert len(str(raised.value)) < 300
        with pytest.raises(StoreUnreadable, match="not UTF-8"):
            store.read(CALLS, "c1")
        with caplog.at_level(logging.WARNING, logger="yieldmcp.stores"):
            assert [id for id, _ in store.scan(TASKS)] == ["fine"]
    finally:
        raw.close()
        store.close()


def test_a_version_that_is_no_number_is_unreadable_not_a_crash(
    sqlite_url: str, redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """SQLite keeps text in an INTEGER column, and a stranger's Redis hash
    holds what it likes: int('abc') in a write took a server's task runner,
    and the server, down at every start."""
    for url in (sqlite_url, redis_url):
        store = open_store(url)
        try:
            store.put(TASKS, "fine", {"kept": 1})
            store.put(TASKS, "odd", {"kept": 2})
            if url.startswith("sqlite:"):
                with sqlite3.connect(url.removeprefix("sqlite:")) as conn:
                    conn.execute("UPDATE docs SET version = 'abc' WHERE id = 'odd'")
            else:
                raw = redis.Redis.from_url(url)
                raw.hset(f'yieldmcp:d:["{TASKS}", "odd"]', "ver", "abc")
                raw.close()
            with pytest.raises(StoreUnreadable, match="not a number"):
                store.get(TASKS, "odd")
            with pytest.raises(StoreUnreadable, match="not a number"):
                store.put(TASKS, "odd", {"kept": 3}, expect=1)
            with caplog.at_level(logging.WARNING, logger="yieldmcp.stores"):
                assert [id for id, _ in store.scan(TASKS)] == ["fine"]
        finally:
            store.close()

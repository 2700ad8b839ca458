"""A document nobody can read is passed over by scans, and named once.

Recovery scans every task at start and every few seconds: one record that
was not JSON, or not a task's shape (written by hand, by another program,
truncated), failed the scan and the server with it, on every process on
the store and at each restart (found by a review that inserted one row).
"""

from __future__ import annotations

import logging
import sqlite3

import psycopg
import pytest
import redis
import trio

from bridge.durable import AsyncStore
from bridge.durable.tasks import TASKS, TaskStore
from bridge.stores import open_store
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

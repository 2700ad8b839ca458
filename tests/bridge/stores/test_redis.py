"""What the Redis store adds to the contract (``test_contract.py``): waits
longer than the client library's socket timeout, keys of another type
where a document or a stream belongs (a stranger's, or damaged), and a URL
whose database is no number."""

from __future__ import annotations

import json
import logging
import time

import pytest
import redis

from bridge.cli import main
from bridge.stores import StoreUnavailable, StoreUnreadable, open_store
from tests.bridge.stores.helpers import assert_stream_unreadable


def test_a_wait_longer_than_the_clients_socket_timeout_ends_empty(
    redis_url: str,
) -> None:
    # redis-py 8 reads with a 5 s socket timeout by default: an XREAD that
    # blocks longer failed the wait as 'store unavailable'.
    store = open_store(redis_url)
    try:
        started = time.monotonic()
        assert store.wait("call", "w", 0, timeout=6) == []
        assert time.monotonic() - started >= 6
    finally:
        store.close()


@pytest.mark.parametrize("database", ["7x", "abc", "-1", "7/", "%37x"])
def test_a_database_that_is_no_number_is_refused_not_database_0(
    redis_url: str, database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # redis-py reads /7x as no database and uses 0 (another application's,
    # maybe): `serve --store` wrote its keys there, and `journal` read it.
    url = redis_url.rsplit("/", 1)[0] + f"/{database}"
    with pytest.raises(StoreUnavailable, match="is not a number"):
        open_store(url)
    assert main(["journal", url]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1, err
    assert "is not a number" in err
    with redis.Redis.from_url(redis_url.rsplit("/", 1)[0] + "/0") as client:
        assert client.keys("yieldmcp:*") == []  # nothing was written anywhere
    for fine in ("/3", "/", ""):  # a number, or none (0)
        open_store(redis_url.rsplit("/", 1)[0] + fine).close()


def _doc_key(namespace: str, id: str) -> str:
    return f"yieldmcp:d:{json.dumps([namespace, id])}"


def _stream_key(namespace: str, id: str) -> str:
    return f"yieldmcp:s:{json.dumps([namespace, id])}"


@pytest.mark.parametrize("kind", ["list", "string", "zset"])
def test_a_key_of_another_type_in_the_index_is_passed_over_by_scans(
    redis_url: str, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The scan's reads ran in one pipeline that stopped at the first error:
    one key of another type (a list where a document's hash belongs) failed
    every scan, so task recovery stopped for every task, for ever, and the
    journal's listing listed nothing."""
    store = open_store(redis_url)
    raw = redis.Redis.from_url(redis_url, decode_responses=True)
    try:
        store.put("task", "a", {"n": 1})
        store.put("task", "z", {"n": 2})
        key = _doc_key("task", "m")
        if kind == "list":
            raw.rpush(key, "x")
        elif kind == "string":
            raw.set(key, "x")
        else:
            raw.zadd(key, {"x": 1})
        raw.sadd("yieldmcp:n:task", "m")
        with caplog.at_level(logging.WARNING, logger="yieldmcp.stores"):
            assert [id for id, _ in store.scan("task")] == ["a", "z"]
            assert [id for id, _ in store.scan("task")] == ["a", "z"]
        said = [r.getMessage() for r in caplog.records]
        assert sum("'m' cannot be read" in m for m in said) == 1, said
        for call in (
            lambda: store.get("task", "m"),
            lambda: store.get_and_read("task", "m"),
            lambda: store.put("task", "m", {"n": 3}, expect=0),
            lambda: store.put("task", "m", {"n": 3}),
        ):
            with pytest.raises(StoreUnreadable) as raised:
                call()
            assert raised.value.part == "document"
            assert f"a Redis {kind}, not a hash" in str(raised.value)
    finally:
        raw.close()
        store.close()


@pytest.mark.parametrize("kind", ["string", "list"])
def test_a_stream_key_of_another_type_is_unreadable_not_an_outage(
    redis_url: str, kind: str
) -> None:
    """WRONGTYPE on a call's stream was a plain StoreError, which the task
    runner takes for an outage: it retried the task every 1.5 s, for ever,
    and the task could not be cancelled. It is a damaged stream: every
    operation on it says so, once, as StoreUnreadable naming the stream."""
    store = open_store(redis_url)
    raw = redis.Redis.from_url(redis_url, decode_responses=True)
    try:
        store.put("call", "c1", {"params": {}})
        store.append("call", "c1", [{"k": "0"}])
        key = _stream_key("call", "c1")
        raw.delete(key)
        if kind == "string":
            raw.set(key, "x")
        else:
            raw.rpush(key, "x")
        calls = (
            lambda: store.append("call", "c1", [{"k": "1"}]),
            lambda: store.put_and_append("call", "c1", {"n": 1}, [{"k": "1"}]),
            lambda: store.read("call", "c1"),
            lambda: store.get_and_read("call", "c1"),
            lambda: store.wait("call", "c1", 0, 0.1),
        )
        said = f"the call 'c1': its stream cannot be read (a Redis {kind}"
        assert_stream_unreadable(calls, said)
        # put_and_append is atomic: the document did not move on either.
        found = store.get("call", "c1")
        assert found is not None
        assert found.version == 1
        # Other streams are not touched.
        assert store.append("call", "c2", [{"k": "0"}]) == 1
        store.delete("call", "c1")  # removable, and then usable again
        assert store.append("call", "c1", [{"k": "0"}]) == 1
    finally:
        raw.close()
        store.close()

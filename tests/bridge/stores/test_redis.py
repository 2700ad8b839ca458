"""What the Redis store adds to the contract (``test_contract.py``): waits
longer than the client library's socket timeout."""

from __future__ import annotations

import time

from bridge.stores import open_store


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

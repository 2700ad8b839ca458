"""What a durable 2026-07-28 round costs its store: two trips (issue 29).

Each trip to a durable store is a hop to its worker thread and a transaction
(an fsync on PostgreSQL), one after another, so a round's latency grows with
their number: a round opens with one read of the document and the journal,
and moves the call on with its answers in one write.
"""

from __future__ import annotations

import collections
import secrets
from collections.abc import Callable
from typing import Any

from benchmarks import ours
from bridge.server import Server
from bridge.stores import MemoryStore


class _Counting:
    """A real MemoryStore that counts the calls made to it."""

    blocking = False

    def __init__(self) -> None:
        self.inner = MemoryStore()
        self.calls: collections.Counter[str] = collections.Counter()

    def __getattr__(self, name: str) -> Any:
        found = getattr(self.inner, name)
        if not callable(found):
            return found

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            return found(*args, **kwargs)

        call: Callable[..., Any] = counted
        return call


async def test_a_ten_answer_call_makes_two_store_trips_a_round() -> None:
    store = _Counting()
    # A configured key: without one the server keeps a generated key in the
    # store (bridge/durable/keys.py), one read and write per process,
    # not per round.
    key = secrets.token_bytes(32)
    server = Server(ours.TOOLS, name="trips", store=store, state_keys=[key])
    async with ours.in_memory("2026-07-28", server) as client:
        result = await client.call_tool("elicit10", {"text": "q"})
    assert result.content[0].text == "10"  # type: ignore[union-attr]
    # The first round parks the call (put_and_append); each of the ten
    # resumed rounds opens it (get_and_read) and moves it on with its answer
    # (put_and_append), the last as it marks the call done: the journal of
    # an ended call is whole, for `yieldmcp journal` and a replay. Besides
    # the rounds: the server's run scope sweeps and scans for tasks to resume
    # once as it starts (the recovery service).
    rounds = {"get_and_read": 10, "put_and_append": 11}
    assert dict(store.calls) == {**rounds, "sweep": 1, "scan": 1}
    assert len(store.inner.read("call", _only_call(store.inner))) == 10


def _only_call(store: MemoryStore) -> str:
    ids = [id for id, _doc in store.scan("call")]
    assert len(ids) == 1
    return ids[0]

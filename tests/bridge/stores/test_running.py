"""AsyncStore: every backend from trio, off the event loop — concurrent
appends batched into one write, errors carried back to the caller, a
cancellable wait, and worker threads that end with the store."""

from __future__ import annotations

import threading
from typing import Any

import pytest
import trio

from bridge.stores import (
    AsyncStore,
    JournalStore,
    MemoryStore,
    StoreConflict,
    StoreUnavailable,
    open_store,
)
from bridge.stores.running import BatchAppender


async def test_concurrent_appends_all_land_in_order_per_stream(
    store: JournalStore,
) -> None:
    async_store = AsyncStore(store)
    lengths: dict[str, list[int]] = {f"c{n}": [] for n in range(20)}

    async def record(call: str) -> None:
        for i in range(5):
            length = await async_store.append("call", call, [{"k": f"e:{i}"}])
            lengths[call].append(length)

    async with trio.open_nursery() as nursery:
        for call in lengths:
            nursery.start_soon(record, call)
    for call, seen in lengths.items():
        assert seen == [1, 2, 3, 4, 5]
        assert await async_store.read("call", call) == [
            {"k": f"e:{i}"} for i in range(5)
        ]


async def test_a_conflict_reaches_the_caller(store: JournalStore) -> None:
    async_store = AsyncStore(store)
    assert await async_store.put("task", "t", {"n": 1}, expect=0) == 1
    with pytest.raises(StoreConflict):
        await async_store.put("task", "t", {"n": 2}, expect=0)
    doc = await async_store.get("task", "t")
    assert doc is not None
    assert doc.value == {"n": 1}


async def test_wait_hears_an_append_from_another_task(store: JournalStore) -> None:
    async_store = AsyncStore(store)

    async def later() -> None:
        await trio.sleep(0.2)
        await async_store.append("call", "w", [{"answer": 1}])

    async with trio.open_nursery() as nursery:
        nursery.start_soon(later)
        assert await async_store.wait("call", "w", 0, timeout=60) == [{"answer": 1}]


async def test_wait_is_cancellable(store: JournalStore) -> None:
    async_store = AsyncStore(store)
    with trio.move_on_after(0.3) as scope:
        await async_store.wait("call", "never", 0, timeout=3600)
    assert scope.cancelled_caught


def test_batched_appends_equal_one_by_one(durable_url: str) -> None:
    store = open_store(durable_url)
    try:
        assert isinstance(store, BatchAppender)
        store.append("call", "a", [{"i": 0}])
        lengths = store.append_many(
            [
                ("call", "a", [{"i": 1}, {"i": 2}], None),
                ("call", "b", [{"i": 0}], 4_000_000_000.0),
                ("call", "a", [{"i": 3}], None),
            ]
        )
        assert lengths == [3, 1, 4]
        assert store.read("call", "a") == [{"i": n} for n in range(4)]
        assert store.read("call", "b") == [{"i": 0}]
        assert store.sweep(4_000_000_001.0) == 1
    finally:
        store.close()


async def test_workers_end_with_the_store(durable_url: str) -> None:
    before = {t.ident for t in threading.enumerate()}
    async_store = AsyncStore(open_store(durable_url))
    async with trio.open_nursery() as nursery:
        for n in range(10):
            nursery.start_soon(async_store.append, "call", f"c{n}", [{"i": n}])
    await async_store.aclose()
    deadline = trio.current_time() + 60
    while trio.current_time() < deadline:
        left = [
            t
            for t in threading.enumerate()
            if t.ident not in before and t.name.startswith("yieldmcp-store")
        ]
        if not left:
            break
        await trio.sleep(0.05)
    assert not left


class _Gated:
    """A real MemoryStore behind a gate, called as a blocking backend: every
    call waits for :attr:`open` first (a server that stopped answering)."""

    blocking = True

    def __init__(self) -> None:
        self.inner = MemoryStore()
        self.open = threading.Event()
        self.started: list[str] = []

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.inner, name)

        def gated(*args: Any, **kwargs: Any) -> Any:
            self.started.append(name)
            self.open.wait(60)
            return method(*args, **kwargs)

        return gated


async def test_an_operation_on_a_hung_store_fails_after_the_timeout() -> None:
    gated = _Gated()
    async_store = AsyncStore(gated, timeout=0.3)  # type: ignore[arg-type]
    began = trio.current_time()
    with pytest.raises(StoreUnavailable, match=r"did not answer within 0\.3 s"):
        await async_store.put("task", "t", {"n": 1})
    assert 0.3 <= trio.current_time() - began < 2
    gated.open.set()
    # The write was under way: it lands when the store answers (on its own
    # thread, so not necessarily before the next operations), and its late
    # answer disturbs nothing.
    assert await async_store.put("task", "u", {"n": 2}) == 1
    with trio.fail_after(10):
        while (written := await async_store.get("task", "t")) is None:
            await trio.sleep(0.02)
    assert written.value == {"n": 1}
    await async_store.aclose()


async def test_an_operation_still_queued_at_its_deadline_never_runs() -> None:
    gated = _Gated()
    async_store = AsyncStore(gated, threads=1, timeout=0.3)  # type: ignore[arg-type]
    async with trio.open_nursery() as nursery:
        for id in ("running", "queued"):
            nursery.start_soon(_refused_put, async_store, id)
            await trio.sleep(0.05)
    assert gated.started == ["put"]  # the one thread is held by the first
    gated.open.set()
    with trio.fail_after(10):
        while await async_store.get("task", "running") is None:
            await trio.sleep(0.02)
    assert await async_store.get("task", "queued") is None
    assert gated.started.count("put") == 1
    await async_store.aclose()


async def _refused_put(async_store: AsyncStore, id: str) -> None:
    with pytest.raises(StoreUnavailable):
        await async_store.put("task", id, {"id": id})


async def test_a_cancelled_caller_still_waits_for_its_write() -> None:
    gated = _Gated()
    async_store = AsyncStore(gated, timeout=30)  # type: ignore[arg-type]
    began = trio.current_time()
    with trio.CancelScope() as scope:
        scope.deadline = began + 0.2
        threading.Timer(0.6, gated.open.set).start()
        await async_store.put("task", "t", {"n": 1})
        await trio.lowlevel.checkpoint()  # where the cancellation shows
    # Cancelled at 0.2 s, it waited for the write to finish (so it knows it
    # happened), not for the 30 s of the store's deadline.
    assert scope.cancelled_caught
    assert 0.6 <= trio.current_time() - began < 5
    written = await async_store.get("task", "t")
    assert written is not None


async def test_a_wait_on_a_hung_store_fails_after_its_time_and_the_timeout() -> None:
    gated = _Gated()
    async_store = AsyncStore(gated, timeout=0.3)  # type: ignore[arg-type]
    began = trio.current_time()
    with pytest.raises(StoreUnavailable):
        await async_store.wait("call", "w", 0, timeout=0.2)
    assert 0.5 <= trio.current_time() - began < 2.5
    gated.open.set()
    await async_store.aclose()

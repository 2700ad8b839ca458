"""A task's runner writes only while it holds the task's lease, by its own clock.

Renewal looks at the store every third of the lease; a process paused past
the lease (SIGSTOP, a suspended VM) woke up, wrote the step it had in flight
and started the next one, which the process that took the task over also
ran: a step ran twice that was not in flight (found by a review that
stopped a task's owner with SIGSTOP, 3 of 3 runs on Redis).
"""

from __future__ import annotations

import pytest
import trio
import trio.testing

from bridge.durable import AsyncStore, MemoryStore
from bridge.durable.log import CALLS, CallLog
from bridge.server.tasks.runner import LeaseClock, LeaseLost, TaskHold

RECORD = {"s": "lookup", "r": {"ok": 1}}


async def test_a_hold_past_its_lease_writes_nothing_and_says_so(
    mock_clock: trio.testing.MockClock,
) -> None:
    store = AsyncStore(MemoryStore())
    lease = LeaseClock(30.0)
    lease.held_from(trio.current_time())
    hold = TaskHold(CallLog(store, "t1", max_bytes=1 << 20), ttl=60.0, lease=lease)
    hold.keep([RECORD])
    await hold.flush()  # within the lease: written
    mock_clock.jump(29.9)
    hold.keep([RECORD])
    await hold.flush()
    mock_clock.jump(0.1)  # the lease's end, with no renewal: another's now
    hold.keep([RECORD])
    with pytest.raises(LeaseLost):
        await hold.flush()
    assert len(await store.read(CALLS, "t1")) == 2
    lease.held_from(trio.current_time())  # renewed: it writes again
    await hold.flush()
    assert len(await store.read(CALLS, "t1")) == 3

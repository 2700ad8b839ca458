"""A cancellation storm: 1,000 concurrent calls, each cancelled at a random point.

Each call samples, elicits and branches (four questions). The client picks,
per call, the question during which it cancels the call — the first sample, the
elicitation, or either sample inside the branch — or lets it finish. A question
of a call that is not being cancelled is answered after a small random delay,
so calls interleave; a question of a call being cancelled is never answered:
the client waits (bounded) until the server withdraws it with
``notifications/cancelled``. Afterwards: every question was answered before its
call was cancelled or withdrawn, exactly once and never both; no call, question
or task is left on either side; every generator that started was closed; and
memory is back near its baseline.
"""

from __future__ import annotations

import collections
import gc
import json
import random
import tracemalloc
from collections.abc import Mapping
from typing import Any

import attrs
import trio
import trio.testing

from bridge.jsonrpc import Notification, Request, RequestId
from bridge.jsonrpc.session import Session
from bridge.server import Server
from bridge.server.limits import ServerLimits
from bridge.transports.memory import memory_pair
from tests.fixtures import storm_tools

CALLS = 1000
SAMPLE = {"role": "assistant", "content": {"type": "text", "text": "s"}, "model": "m"}
# How long a question of a cancelled call may wait for its withdrawal. The
# server withdraws at once (in the task that sends the cancellation), so only
# a server that forgot to withdraw ever gets near this.
WITHDRAWAL_WAIT = 5.0


def _call_of(method: str, params: Mapping[str, Any] | None) -> int:
    if method == "elicitation/create":
        text = params["message"]  # type: ignore[index]
    else:
        content = params["messages"][-1]["content"]  # type: ignore[index]
        text = content["text"] if isinstance(content, dict) else content[0]["text"]
    return int(text.split()[1])


class _Client:
    """The client's handler: answers, or cancels the call and waits to be told.

    Per question it records how it ended: ``answered`` (decided while its call
    was not being cancelled), ``withdrawn`` (its handler was cancelled by the
    server's ``notifications/cancelled``) or ``never_withdrawn`` (a question of
    a cancelled call the server did not withdraw within ``WITHDRAWAL_WAIT``).
    """

    def __init__(
        self,
        rng: random.Random,
        cancel_at: Mapping[int, int],
        scopes: Mapping[int, trio.CancelScope],
    ) -> None:
        self._rng = rng
        self._cancel_at = cancel_at
        self._scopes = scopes
        self._seen: dict[int, int] = {}
        self.cancelling: set[int] = set()
        self.answered: list[RequestId] = []
        self.withdrawn: list[RequestId] = []
        self.never_withdrawn: list[RequestId] = []
        self.call_of: dict[RequestId, int] = {}
        self._running = 0
        self._idle = trio.Event()

    async def handle_request(self, request: Request, session: Session) -> Any:
        n = _call_of(request.method, request.params)
        self.call_of[request.id] = n
        self._seen[n] = self._seen.get(n, 0) + 1
        if self._seen[n] == self._cancel_at[n]:
            self.cancelling.add(n)
            self._scopes[n].cancel()  # cancel the call while this question is open
        self._running += 1
        try:
            await trio.sleep(self._rng.random() * 0.005)
            if n in self.cancelling:  # never answer: only a withdrawal ends it
                with trio.fail_after(WITHDRAWAL_WAIT):
                    await trio.sleep_forever()
        except trio.Cancelled:
            self.withdrawn.append(request.id)
            raise
        except trio.TooSlowError:
            self.never_withdrawn.append(request.id)
            raise
        finally:
            self._running -= 1
            if not self._running:
                self._idle.set()
        self.answered.append(request.id)
        if request.method == "elicitation/create":
            return {"action": "accept", "content": {"ok": True}}
        return SAMPLE

    async def wait_settled(self) -> None:
        """Until no question is open on the client."""
        while self._running:
            self._idle = trio.Event()
            await self._idle.wait()

    async def handle_notification(
        self, notification: Notification, session: Session
    ) -> None:
        pass

    def closed(self, session: Session) -> None:
        pass


_TIMER_SERVICE = "bridge.jsonrpc.timers.Timers.run"


def _tasks() -> int:
    """How many trio tasks exist now, across the whole run, not counting a
    session's timer service: one per session, started by its first timer (a
    sampling timeout), it is no call's and lives as long as the session."""

    def count(task: trio.lowlevel.Task) -> int:
        nurseries = task.child_nurseries
        own = 0 if task.name == _TIMER_SERVICE else 1
        return own + sum(count(child) for n in nurseries for child in n.child_tasks)

    return count(trio.lowlevel.current_root_task())


@attrs.frozen
class Outcome:
    """Counts only, so the measurement sees the server's memory, not ours."""

    asked: int
    answered: int
    withdrawn: int
    unsettled: int  # neither answered nor withdrawn
    both: int  # answered and withdrawn
    twice: int  # answered twice, or withdrawn twice
    misreported: int  # the client's account and the wire disagree
    never_withdrawn: int  # of cancelled calls, left open by the server
    withdrawn_live: int  # withdrawn although its call was never cancelled
    completed: int


async def _storm(seed: int, calls: int = CALLS) -> Outcome:
    rng = random.Random(seed)
    server_end, client_end = memory_pair()
    server_end.record = True
    client_end.record = True
    # All CALLS run at once on one session: allow it (the default is lower).
    server = Server(
        [storm_tools.storm], limits=ServerLimits(max_calls_per_session=CALLS)
    )
    cancel_at = {n: rng.randint(1, 5) for n in range(calls)}  # 5: never cancelled
    scopes = {n: trio.CancelScope() for n in range(calls)}
    side = _Client(rng, cancel_at, scopes)
    client = Session(client_end, side)
    server_session = Session(server_end, server.connection())
    completed = 0
    async with trio.open_nursery() as nursery:
        await nursery.start(server_session.run)
        await nursery.start(client.run)
        capabilities = {"sampling": {}, "elicitation": {}}
        await client.request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": capabilities,
                "clientInfo": {"name": "storm", "version": "1"},
            },
        )
        baseline = _tasks()

        async def one(n: int) -> None:
            nonlocal completed
            with scopes[n]:
                await client.request(
                    "tools/call", {"name": "storm", "arguments": {"n": n}}
                )
                completed += 1

        async with trio.open_nursery() as calls_nursery:
            for n in range(len(cancel_at)):
                calls_nursery.start_soon(one, n)
        with trio.fail_after(WITHDRAWAL_WAIT + 10):
            await side.wait_settled()
            await trio.testing.wait_all_tasks_blocked(cushion=0.05)
        # No task left running: nothing in flight or outstanding on either side,
        # and exactly the tasks there were before the first call.
        assert server_session.in_flight == 0, "the server still holds calls"
        assert server_session.outstanding == [], "the server still awaits answers"
        assert client.in_flight == 0, "the client still holds questions"
        assert client.outstanding == []
        assert _tasks() == baseline, "a task outlived the calls"
        nursery.cancel_scope.cancel()
    return _outcome(side, server_end.sent, client_end.sent, completed)


def _outcome(
    side: _Client,
    server_frames: list[bytes],
    client_frames: list[bytes],
    completed: int,
) -> Outcome:
    sent = [json.loads(f) for f in server_frames]
    received = [json.loads(f) for f in client_frames]
    asked = {f["id"] for f in sent if "method" in f and "id" in f}
    withdrawn = collections.Counter(
        f["params"]["requestId"]
        for f in sent
        if f.get("method") == "notifications/cancelled"
    )
    answered = collections.Counter(f["id"] for f in received if "result" in f)
    errors = [f for f in received if "error" in f]
    both = answered.keys() & withdrawn.keys()
    twice = [k for k, v in (answered + withdrawn).items() if v > 1 and k not in both]
    misreported = len(errors) + len(
        (set(side.answered) ^ answered.keys())
        | (set(side.withdrawn) ^ (withdrawn.keys() & asked))
    )
    live = [r for r in withdrawn if side.call_of.get(r) not in side.cancelling]
    return Outcome(
        asked=len(asked),
        answered=len(answered),
        withdrawn=len(withdrawn),
        unsettled=len(asked - answered.keys() - withdrawn.keys()),
        both=len(both),
        twice=len(twice),
        misreported=misreported,
        never_withdrawn=len(side.never_withdrawn),
        withdrawn_live=len(live),
        completed=completed,
    )


# Bounded by design, not per call: pydantic_core's JSON key cache (a fixed
# number of strings) and the capacity of trio's task set (the high-water mark
# of concurrent tasks). Their growth is excluded from the comparison.
BOUNDED = (
    tracemalloc.Filter(False, "*/bridge/jsonrpc/*.py"),
    tracemalloc.Filter(False, "*/trio/_core/_run.py"),
    tracemalloc.Filter(False, tracemalloc.__file__),  # the snapshots themselves
)


def _held(before: tracemalloc.Snapshot, after: tracemalloc.Snapshot) -> int:
    after = after.filter_traces(BOUNDED)
    before = before.filter_traces(BOUNDED)
    return sum(stat.size_diff for stat in after.compare_to(before, "filename"))


async def test_a_thousand_cancelled_calls_leave_nothing_behind() -> None:
    await _storm(seed=0)  # warm the validators and caches
    storm_tools.OPENED[0] = storm_tools.CLOSED[0] = 0
    gc.collect()
    # Another test's failure report can hold its call's objects: count ours only.
    baseline = _live_call_objects()
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        outcome = await _storm(seed=1)
        gc.collect()
        held = _held(before, tracemalloc.take_snapshot())
    finally:
        tracemalloc.stop()
    assert 0 < outcome.completed < CALLS, "some calls finish, the others are cancelled"
    assert storm_tools.OPENED[0] == storm_tools.CLOSED[0] > 0, "a finally did not run"
    assert outcome.answered > 0, "some questions should have been answered"
    assert outcome.withdrawn > 0, "some questions should have been withdrawn"
    assert outcome.never_withdrawn == 0, "questions of cancelled calls left open"
    assert outcome.unsettled == 0, "questions neither answered nor withdrawn"
    assert outcome.both == 0, "questions both answered and withdrawn"
    assert outcome.twice == 0, "questions answered or withdrawn twice"
    assert outcome.withdrawn_live == 0, "questions of live calls withdrawn"
    assert outcome.misreported == 0, "what the client saw is not what was sent"
    assert outcome.answered + outcome.withdrawn == outcome.asked
    assert _live_call_objects() == baseline, "objects of finished calls are alive"
    # What remains is bounded residue (jsonschema's type-check cache, frames of
    # the last exceptions): under 128 bytes a call, and not growing run to run.
    assert held < 128 * 1024, f"{held} bytes still held after 1,000 calls"


def _live_call_objects() -> dict[str, int]:
    """Per-call objects that outlived their call, by type (should be none)."""
    per_call = {
        "Stepper", "Frame", "RunningBranch", "_Driver", "LiveExecutor", "CallScope",
        "LiveCall", "_Callback", "Timer",
    }  # fmt: skip
    counts: dict[str, int] = {}
    for obj in gc.get_objects():
        name = type(obj).__name__
        if name == "generator" and obj.gi_code.co_name in {"storm", "_child"}:
            name = "tool generator"
        elif name not in per_call:
            continue
        counts[name] = counts.get(name, 0) + 1
    return counts

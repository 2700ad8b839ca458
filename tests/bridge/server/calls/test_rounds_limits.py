"""Branch time limits hold across 2026-07-28 rounds (docs/branch.md, _rounds).

A branch's deadline is recorded in the sealed state when the branch first
starts; a later round that comes after the deadline ends the branch with
``BranchTimeout`` (a tool error result naming the time limit) instead of
running the children on with the late answers. Time is a fake clock handed to
``run_round`` (the server uses its default, the wall clock), so nothing sleeps.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel

from bridge.server import Server
from bridge.server.calls import rounds as _rounds
from runtime import Context, ElicitKey, Limits, Op, tool
from tests.bridge.wire import WirePeer, modern_meta, wire_peer
from tests.mcp_schema import validate

TIMEOUT = 30.0


class Pick(BaseModel):
    choice: str


PICK = ElicitKey("pick", Pick)

# What the children did after their answers: a replayed generator runs its
# code after a yield only when that yield was answered.
progressed: list[str] = []


def _sampler(ctx: Context) -> Op[str]:
    reply = yield from ctx.sample("an opinion, please")
    progressed.append("sample")
    return reply.text


def _picker(ctx: Context) -> Op[str]:
    reply = yield from ctx.elicit(PICK, "pick one")
    progressed.append("elicit")
    return reply.content.choice if reply.content else reply.action


@tool(elicits=[PICK])
def timed(ctx: Context) -> Op[str]:
    """Ask the model and the user at once, under a time limit."""
    opinion, choice = yield from ctx.branch(
        _sampler, _picker, limits=Limits(timeout=TIMEOUT)
    )
    return f"{opinion}/{choice}"


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeClock]:
    fake = FakeClock()
    monkeypatch.setattr(_rounds, "begin", functools.partial(_rounds.begin, clock=fake))
    progressed.clear()
    yield fake
    progressed.clear()


CAPABILITIES = {"sampling": {}, "elicitation": {"form": {}}}

ANSWERS = {
    "sample@0.0/0": {
        "role": "assistant",
        "content": {"type": "text", "text": "sunny"},
        "model": "wire-model",
        "stopReason": "endTurn",
    },
    "pick@0.1/0": {"action": "accept", "content": {"choice": "tea"}},
}


async def call(peer: WirePeer, **params: Any) -> dict[str, Any]:
    result = await peer.request(
        "tools/call",
        {
            "name": "timed",
            "arguments": {},
            "_meta": modern_meta(CAPABILITIES),
            **params,
        },
    )
    kind = (
        "InputRequiredResult"
        if result.get("resultType") == "input_required"
        else "CallToolResult"
    )
    validate("2026-07-28", kind, result)
    return result


async def first_round(peer: WirePeer) -> dict[str, Any]:
    first = await call(peer)
    assert first["resultType"] == "input_required"
    assert sorted(first["inputRequests"]) == sorted(ANSWERS)
    assert progressed == []
    return first


async def test_answers_after_the_deadline_end_the_branch_with_a_timeout(
    clock: FakeClock,
) -> None:
    async with wire_peer(Server([timed])) as peer:
        first = await first_round(peer)
        clock.now += TIMEOUT + 1
        late = await call(
            peer, inputResponses=ANSWERS, requestState=first["requestState"]
        )
    assert late["resultType"] == "complete"
    assert late["isError"] is True
    message = late["content"][0]["text"]
    assert f"exceeded its time limit of {TIMEOUT} s" in message
    assert progressed == []  # the late answers did not run the children on


async def test_the_deadline_is_the_first_rounds_not_each_rounds(
    clock: FakeClock,
) -> None:
    async with wire_peer(Server([timed])) as peer:
        first = await first_round(peer)
        clock.now += TIMEOUT * 0.75
        # Only one answer: the sampler runs on, the picker is asked again.
        partial = await call(
            peer,
            inputResponses={"sample@0.0/0": ANSWERS["sample@0.0/0"]},
            requestState=first["requestState"],
        )
        assert partial["resultType"] == "input_required"
        assert list(partial["inputRequests"]) == ["pick@0.1/0"]
        assert progressed == ["sample"]
        progressed.clear()
        # Within TIMEOUT of the second round, but past the first round's deadline.
        clock.now += TIMEOUT * 0.5
        late = await call(
            peer, inputResponses=ANSWERS, requestState=partial["requestState"]
        )
    assert late["isError"] is True
    assert "exceeded its time limit" in late["content"][0]["text"]
    assert "elicit" not in progressed


async def test_answers_in_time_complete_the_call(clock: FakeClock) -> None:
    async with wire_peer(Server([timed])) as peer:
        first = await first_round(peer)
        clock.now += TIMEOUT - 1
        done = await call(
            peer, inputResponses=ANSWERS, requestState=first["requestState"]
        )
    assert done["resultType"] == "complete"
    assert done.get("isError") is not True
    assert done["content"][0]["text"] == "sunny/tea"
    assert sorted(progressed) == ["elicit", "sample"]

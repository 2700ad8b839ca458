"""A 2026-07-28 round asks at most ``ServerLimits.max_questions_per_round``
questions; the rest are asked in the next rounds (calls/rounds).

Tool code is the same in both eras, so a branch of 65 samples, which a
2025-11-25 call asks live, must work in rounds too: our client answers at most
64 questions a round (``max_questions``) and refuses a round asking more,
answering none. The round shows the first questions the call reached, pins
only those (an answer to one it did not show is not taken), and asks the rest
once the call moves on; every answer reaches the child that asked it, with or
without a store.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trio

from bridge.client import Client
from bridge.server import Server
from bridge.server.limits import ServerLimits
from bridge.stores import open_store
from bridge.transports.memory import memory_pair
from runtime import Context, Op, tool
from runtime.replies import SampleReply
from runtime.requests import SamplingRequest
from runtime.testing import text
from tests.bridge.wire import WirePeer, modern_meta, wire_peer
from tests.mcp_schema import validate


def _child(c: Context, i: int) -> Op[str]:
    reply = yield from c.sample(f"q{i}")
    return reply.text


@tool
def wide(n: int, ctx: Context) -> Op[list[str]]:
    """``n`` concurrent samples, each answered by its own prompt's echo."""
    return (yield from ctx.branch(*[(lambda c, i=i: _child(c, i)) for i in range(n)]))


def _echo(entry: dict[str, Any]) -> dict[str, Any]:
    """A sampling result echoing the prompt of ``entry`` (an inputRequests
    entry): each child can tell its own answer."""
    assert entry["method"] == "sampling/createMessage"
    prompt = entry["params"]["messages"][0]["content"]["text"]
    return {
        "role": "assistant",
        "content": {"type": "text", "text": f"echo {prompt}"},
        "model": "wire-model",
        "stopReason": "endTurn",
    }


async def _round(peer: WirePeer, n: int, **params: Any) -> dict[str, Any]:
    result = await peer.request(
        "tools/call",
        {"name": "wide", "arguments": {"n": n}, "_meta": modern_meta(), **params},
    )
    kind = (
        "InputRequiredResult"
        if result.get("resultType") == "input_required"
        else "CallToolResult"
    )
    validate("2026-07-28", kind, result)
    return result


async def _answered(server: Server, n: int) -> tuple[list[int], dict[str, Any]]:
    """The number of questions of each round, and the call's result, when
    each round's questions are all answered."""
    sizes: list[int] = []
    async with wire_peer(server) as peer:
        result = await _round(peer, n)
        while result["resultType"] == "input_required":
            asked = result["inputRequests"]
            sizes.append(len(asked))
            assert len(sizes) <= n, "no round may ask nothing new"
            result = await _round(
                peer,
                n,
                inputResponses={key: _echo(entry) for key, entry in asked.items()},
                requestState=result["requestState"],
            )
    return sizes, result


def _expected(n: int) -> list[str]:
    return [f"echo q{i}" for i in range(n)]


@pytest.mark.parametrize(
    ("n", "sizes"), [(64, [64]), (65, [64, 1]), (200, [64, 64, 64, 8])]
)
async def test_a_round_asks_at_most_64_questions_and_the_rest_later(
    n: int, sizes: list[int]
) -> None:
    got, result = await _answered(Server([wide]), n)
    assert got == sizes
    assert result.get("isError") is not True
    assert result["structuredContent"]["result"] == _expected(n)


async def test_the_bound_is_the_servers_to_set() -> None:
    server = Server([wide], limits=ServerLimits(max_questions_per_round=3))
    got, result = await _answered(server, 7)
    assert got == [3, 3, 1]
    assert result["structuredContent"]["result"] == _expected(7)


async def test_the_bound_holds_with_a_store_and_its_journal(tmp_path: Path) -> None:
    store = open_store(f"sqlite:{tmp_path / 'store.sqlite3'}")
    server = Server([wide], store=store, limits=ServerLimits(max_questions_per_round=4))
    got, result = await _answered(server, 10)
    assert got == [4, 4, 2]
    assert result["structuredContent"]["result"] == _expected(10)


async def test_an_answer_to_a_question_not_yet_shown_is_not_taken() -> None:
    # The round pins what it showed: a client answering a question the server
    # reached but did not ask yet (it guessed the key) is asked it properly.
    server = Server([wide], limits=ServerLimits(max_questions_per_round=2))
    async with wire_peer(server) as peer:
        first = await _round(peer, 3)
        assert sorted(first["inputRequests"]) == ["sample@0.0/0", "sample@0.1/0"]
        guessed = {
            "method": "sampling/createMessage",
            "params": {
                "messages": [
                    {"role": "user", "content": {"type": "text", "text": "q2"}}
                ]
            },
        }
        responses = {key: _echo(e) for key, e in first["inputRequests"].items()}
        responses["sample@0.2/0"] = _echo(guessed) | {
            "content": {"type": "text", "text": "stale"}
        }
        second = await _round(
            peer, 3, inputResponses=responses, requestState=first["requestState"]
        )
        assert list(second["inputRequests"]) == ["sample@0.2/0"]
        last = await _round(
            peer,
            3,
            inputResponses={
                "sample@0.2/0": _echo(second["inputRequests"]["sample@0.2/0"])
            },
            requestState=second["requestState"],
        )
    assert last["structuredContent"]["result"] == _expected(3)


def test_the_servers_default_is_what_our_client_answers() -> None:
    # Written twice (the server imports no client code): kept equal, so a
    # yieldmcp server never asks a yieldmcp client more than it answers.
    from bridge.cli.host_options import MAX_QUESTIONS

    default = inspect.signature(Client).parameters["max_questions"].default
    assert ServerLimits().max_questions_per_round == default == MAX_QUESTIONS


class Echo:
    """A model answering each sample with its prompt's echo."""

    supports_tools = False

    def __init__(self) -> None:
        self.asked = 0

    async def complete(self, request: SamplingRequest) -> SampleReply:
        self.asked += 1
        return text(f"echo {request.messages[0].text}")


@contextlib.asynccontextmanager
async def _connected(server: Server, era: str) -> AsyncIterator[tuple[Client, Echo]]:
    server_end, client_end = memory_pair()
    model = Echo()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(server.serve, server_end)
        async with Client.connect(client_end, era=era, sampler=model) as client:  # type: ignore[arg-type]
            yield client, model
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
@pytest.mark.parametrize("n", [65, 200])
async def test_our_client_and_server_at_their_defaults_answer_every_child(
    era: str, n: int
) -> None:
    # The reviewer's case: the same tool works in both eras.
    with trio.fail_after(60):
        async with _connected(Server([wide]), era) as (client, model):
            result = await client.call_tool("wide", {"n": n})
    assert not result.is_error, result.text
    assert result.structured_content == {"result": _expected(n)}
    assert model.asked == n


class Slow(Echo):
    """An echo that takes a while, so questions are out together."""

    def __init__(self) -> None:
        super().__init__()
        self.out = 0
        self.most_out = 0

    async def complete(self, request: SamplingRequest) -> SampleReply:
        self.out += 1
        self.most_out = max(self.most_out, self.out)
        try:
            await trio.sleep(0.2)
            return await super().complete(request)
        finally:
            self.out -= 1


@pytest.mark.parametrize(("n", "bound"), [(65, 64), (7, 3)])
async def test_a_2025_session_has_at_most_the_bound_of_questions_out(
    n: int, bound: int
) -> None:
    # Live questions went out all at once: past the 64 our client answers at
    # once, it refused the rest ("Client busy"), and their children failed.
    limits = ServerLimits(max_questions_per_round=bound)
    server_end, client_end = memory_pair()
    model = Slow()
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(Server([wide], limits=limits).serve, server_end)
            async with Client.connect(client_end, era="legacy", sampler=model) as c:
                result = await c.call_tool("wide", {"n": n})
            nursery.cancel_scope.cancel()
    assert not result.is_error, result.text
    assert result.structured_content == {"result": _expected(n)}
    assert model.most_out == bound

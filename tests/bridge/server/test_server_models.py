"""A result names the server's own models that answered the call's samples.

When the server's model answers a tool's ``ctx.sample`` (``serve --model …
--model-always``, or a client that cannot sample), the client sees no
sampling request, so the result says who wrote the answers: the ``model``
each of the server's replies reported, in ``_meta["io.yieldmcp/server-models"]``,
first answer first, each once, bounded. Samples the client answered are not
named there (the client knows them). Our client and our server, in memory,
both eras; in 2026-07-28 over every round of the call.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pydantic
import pytest
import trio

from bridge.client import Client
from bridge.server import Server
from bridge.server.limits import ServerLimits
from bridge.stores import MemoryStore
from bridge.transports.memory import memory_pair
from runtime import Context, ElicitKey, Op, Text, tool
from runtime.codec import (
    MAX_MODEL_NAME_CHARS,
    MAX_SERVER_MODELS,
    SERVER_MODELS_META_KEY,
    server_models,
)
from runtime.errors import PeerError
from runtime.lowlevel import SampleReply, SamplingRequest
from runtime.replies import ElicitReply
from runtime.requests import ElicitationRequest
from tests.bridge.http_kit import Raw, message_of, served

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

ERAS = ["legacy", "2026-07-28"]


class Count(pydantic.BaseModel):
    times: int = 1


class Ok(pydantic.BaseModel):
    ok: bool


OK = ElicitKey("ok", Ok)


@tool
def asks(params: Count, ctx: Context) -> Op[str]:
    """Samples ``times`` times, one after another."""
    said: list[str] = []
    for _ in range(params.times):
        reply = yield from ctx.sample("hello")
        said.append(reply.text)
    return " ".join(said)


@tool(elicits=[OK])
def asks_then_confirms(ctx: Context) -> Op[str]:
    """Samples (the server's model), then asks the user: two rounds in 2026."""
    reply = yield from ctx.sample("hello")
    answer = yield from ctx.elicit(OK, "Go on?")
    return f"{reply.text}:{answer.action}"


@tool(task="optional", elicits=[OK])
def task_asks(ctx: Context) -> Op[str]:
    """As a task: the server's model, then the user, then the model again."""
    first = yield from ctx.sample("hello")
    answer = yield from ctx.elicit(OK, "Go on?")
    second = yield from ctx.sample("again")
    return f"{first.text}:{answer.action}:{second.text}"


@tool
def never_samples() -> str:
    """Plain."""
    return "plain"


class Named:
    """The server's model: each reply names the next of ``names`` (the last
    one again once they run out)."""

    def __init__(self, *names: str) -> None:
        self.names = list(names)
        self.asked = 0

    async def complete(self, request: SamplingRequest) -> SampleReply:
        await trio.lowlevel.checkpoint()
        name = self.names[min(self.asked, len(self.names) - 1)]
        self.asked += 1
        return SampleReply(content=(Text(f"from {name}"),), model=name)


class Yes:
    async def handle(self, request: ElicitationRequest) -> ElicitReply:
        return ElicitReply(action="accept", content={"ok": True})


@pytest.fixture(params=ERAS)
def era(request: pytest.FixtureRequest) -> str:
    return request.param


@contextlib.asynccontextmanager
async def in_memory(
    era: str, own: Named | None, *, client_model: Named | None = None, always: bool
) -> AsyncIterator[Client]:
    server_end, client_end = memory_pair()
    serving = Server(
        [asks, asks_then_confirms, task_asks, never_samples],
        sampler=own,
        sample_always=always,
    )
    async with trio.open_nursery() as nursery:
        nursery.start_soon(serving.serve, server_end)
        async with Client.connect(
            client_end,
            era=era,  # type: ignore[arg-type]
            sampler=client_model,
            elicitation=Yes(),
        ) as client:
            yield client
        nursery.cancel_scope.cancel()


async def test_the_result_names_the_servers_model(era: str) -> None:
    own, theirs = Named("own-model-1"), Named("client-model")
    with trio.fail_after(10):
        async with in_memory(era, own, client_model=theirs, always=True) as client:
            result = await client.call_tool("asks")
    assert result.text == "from own-model-1"
    assert theirs.asked == 0
    assert result.meta is not None
    assert result.meta[SERVER_MODELS_META_KEY] == ["own-model-1"]
    assert server_models(result.meta) == ("own-model-1",)


async def test_a_client_that_cannot_sample_gets_the_name_too(era: str) -> None:
    with trio.fail_after(10):
        async with in_memory(era, Named("fallback"), always=False) as client:
            result = await client.call_tool("asks", {"times": 2})
    assert server_models(result.meta) == ("fallback",)


async def test_names_come_once_each_in_order_and_bounded(era: str) -> None:
    long = "L" * (MAX_MODEL_NAME_CHARS + 50)
    names = ["b", "a", "b", long, *(f"m{i}" for i in range(MAX_SERVER_MODELS))]
    with trio.fail_after(10):
        async with in_memory(era, Named(*names), always=True) as client:
            result = await client.call_tool("asks", {"times": len(names)})
    assert result.meta is not None
    listed = result.meta[SERVER_MODELS_META_KEY]
    cut = "L" * (MAX_MODEL_NAME_CHARS - 1) + "\u2026"
    assert listed == ["b", "a", cut, *(f"m{i}" for i in range(5))]
    assert len(listed) == MAX_SERVER_MODELS


async def test_only_the_servers_own_answers_are_named(era: str) -> None:
    own, theirs = Named("own"), Named("client-model")
    with trio.fail_after(10):
        async with in_memory(era, own, client_model=theirs, always=False) as client:
            sampled = await client.call_tool("asks")  # the client can: it does
            plain = await client.call_tool("never_samples")
    assert sampled.text == "from client-model"
    assert own.asked == 0
    for result in (sampled, plain):
        assert SERVER_MODELS_META_KEY not in (result.meta or {})


async def test_a_sample_before_a_form_is_named_in_the_final_result(era: str) -> None:
    # In 2026-07-28 the sample is answered in the first round, and the result
    # comes from the round after the form: the name comes through both.
    with trio.fail_after(10):
        async with in_memory(era, Named("own"), always=True) as client:
            result = await client.call_tool("asks_then_confirms")
    assert result.text == "from own:accept"
    assert server_models(result.meta) == ("own",)


@pytest.mark.parametrize("always", [False, True])
async def test_a_tasks_samples_are_answered_and_named_in_its_result(
    always: bool,
) -> None:
    # A task's rounds run apart from any request (the runner sits in the
    # client's seat): the server's model answers there, and the names
    # gathered over the task's rounds are in its final result.
    own = Named("own-1", "own-2")
    theirs = Named("client-model") if always else None
    with trio.fail_after(10):
        async with in_memory(
            "2026-07-28", own, client_model=theirs, always=always
        ) as client:
            result = await client.call_tool("task_asks", task=True)
    assert result.text == "from own-1:accept:from own-2"
    assert theirs is None or theirs.asked == 0
    assert server_models(result.meta) == ("own-1", "own-2")


def test_a_peers_list_is_read_bounded_and_only_its_strings() -> None:
    assert server_models(None) == ()
    assert server_models({SERVER_MODELS_META_KEY: "one"}) == ()
    many: list[Any] = [1, None, "a", "a", *(f"n{i}" for i in range(100))]
    read = server_models({SERVER_MODELS_META_KEY: many})
    assert read == ("a", *(f"n{i}" for i in range(MAX_SERVER_MODELS - 1)))


async def test_a_call_taken_on_by_another_process_still_names_the_model() -> None:
    # A durable 2025-11-25 call (HTTP, a store): the first server's model
    # answers the sample, the first server goes away while the form waits,
    # and the second takes the call on by replaying its journal. The sample
    # is not asked again, and its model is still named: a journaled sample
    # no client was asked for was answered by the server.
    store = MemoryStore()
    tools = [asks_then_confirms]
    first = Server(tools, store=store, sampler=Named("first"), sample_always=True)
    second = Server(tools, store=store, sampler=Named("second"), sample_always=True)
    with trio.fail_after(30):
        async with httpx.AsyncClient(timeout=20) as http:
            async with served(first) as first_url:
                raw = Raw(http, first_url)
                await raw.initialize()
                call = raw.request(7, "tools/call", {"name": "asks_then_confirms"})
                async with raw.stream("POST", call) as (_, reader):
                    event = await reader.next()
                    while event is not None and not event.data:
                        event = await reader.next()  # the priming event
                    assert event is not None
                    ask, last_id = message_of(event), event.id
                    assert ask["method"] == "elicitation/create"
            async with served(second) as second_url:
                raw.url = second_url
                answer = {"action": "accept", "content": {"ok": True}}
                reply = {"jsonrpc": "2.0", "id": ask["id"], "result": answer}
                assert (await raw.post(reply)).status_code == 202
                async with raw.stream("GET", last_event_id=last_id) as (_, reader):
                    rest = [message_of(e) for e in await reader.rest()]
    result = rest[-1]["result"]
    assert result["content"][0]["text"] == "from first:accept"
    assert result["_meta"][SERVER_MODELS_META_KEY] == ["first"]


@pytest.mark.parametrize(("times", "fits"), [(2, True), (3, False)])
async def test_the_rounds_the_servers_model_answers_are_bounded_by_a_limit(
    times: int, fits: bool
) -> None:
    # Each sample in a row is a round the server retries itself: at most
    # max_model_rounds (a bound that had no flag, and said only "too many").
    server_end, client_end = memory_pair()
    limits = ServerLimits(max_model_rounds=2)
    serving = Server([asks], sampler=Named("own"), sample_always=True, limits=limits)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(serving.serve, server_end)
            async with Client.connect(client_end, era="2026-07-28") as client:
                if fits:
                    result = await client.call_tool("asks", {"times": times})
                    assert result.text == "from own from own"
                else:
                    with pytest.raises(PeerError) as refused:
                        await client.call_tool("asks", {"times": times})
            nursery.cancel_scope.cancel()
    if not fits:
        assert refused.value.code == -32603
        assert refused.value.message == (
            "the server's model answered 2 rounds of this request, the most it "
            "may (max_model_rounds; yieldmcp serve --max-model-rounds)"
        )

"""The benchmark's tools on yieldmcp, and how a run connects to them.

The same four tools exist on the official SDK in :mod:`benchmarks.sdk`:
``echo`` (no effect), ``sample1`` (one sampling round trip), ``sample10`` (ten,
sequentially) and ``elicit10`` (ten sequential form elicitations, for the
2026-07-28 era). ``yieldmcp serve benchmarks/ours.py`` serves them.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncGenerator
from typing import Any

import trio
from pydantic import BaseModel

from bridge.client import Client
from bridge.server import Server
from bridge.server.limits import ServerLimits
from bridge.transports.memory import memory_pair
from runtime import Context, ElicitKey, Op, Text, tool
from runtime.lowlevel import (
    ElicitationRequest,
    ElicitReply,
    SampleReply,
    SamplingRequest,
)


class Words(BaseModel):
    text: str


class Step(BaseModel):
    n: int


STEP = ElicitKey("step", Step)


@tool
def echo(params: Words, ctx: Context) -> str:
    """Return the text."""
    return params.text


@tool
def sample1(params: Words, ctx: Context) -> Op[str]:
    """Ask the client's model once."""
    reply = yield from ctx.sample(params.text, max_tokens=16)
    return reply.text


@tool
def sample10(params: Words, ctx: Context) -> Op[str]:
    """Ask the client's model ten times, one after the other."""
    text = ""
    for _ in range(10):
        reply = yield from ctx.sample(params.text, max_tokens=16)
        text = reply.text
    return text


@tool(elicits=[STEP])
def elicit10(params: Words, ctx: Context) -> Op[str]:
    """Ask the user ten questions, one after the other."""
    total = 0
    for i in range(10):
        answer = yield from ctx.elicit(STEP, f"{params.text} {i}")
        assert answer.content is not None
        total += answer.content.n
    return str(total)


class Count(BaseModel):
    count: int


@tool(elicits=[STEP])
def elicit_n(params: Count, ctx: Context) -> Op[str]:
    """Ask the user ``count`` questions, one after the other (for resumption)."""
    total = 0
    for i in range(params.count):
        answer = yield from ctx.elicit(STEP, f"question {i}")
        assert answer.content is not None
        total += answer.content.n
    return str(total)


TOOLS = [echo, sample1, sample10, elicit10, elicit_n]


def make_server(limits: ServerLimits | None = None) -> Server:
    if limits is None:
        return Server(TOOLS, name="bench-ours")
    return Server(TOOLS, name="bench-ours", limits=limits)


class Model:
    """Answers every sampling request at once with the same text."""

    async def complete(self, request: SamplingRequest) -> SampleReply:
        return SampleReply(content=(Text("ok"),), model="bench")


class Parked:
    """A model that never answers: every sampling request stays parked."""

    def __init__(self) -> None:
        self.asked = 0

    async def complete(self, request: SamplingRequest) -> SampleReply:
        self.asked += 1
        await trio.sleep_forever()
        raise AssertionError("unreachable")


class Steps:
    """Answers every ``step`` elicitation with ``n = 1``."""

    async def handle(self, request: ElicitationRequest) -> ElicitReply:
        return ElicitReply(action="accept", content={"n": 1})


@contextlib.asynccontextmanager
async def in_memory(
    era: str = "legacy", server_: Server | None = None, **options: Any
) -> AsyncGenerator[Client]:
    """Our client connected to our server over an in-memory pipe."""
    options.setdefault("sampler", Model())
    options.setdefault("elicitation", Steps())
    server_end, client_end = memory_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon((server_ or make_server()).serve, server_end)
        async with Client.connect(client_end, era=era, **options) as client:  # type: ignore[arg-type]
            yield client
        nursery.cancel_scope.cancel()


def stdio_command() -> list[str]:
    return [sys.executable, "-m", "bridge.cli", "serve", __file__]


def http_command(port: int) -> list[str]:
    return [*stdio_command(), "--http", f"127.0.0.1:{port}"]

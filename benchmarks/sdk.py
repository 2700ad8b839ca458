"""The benchmark's tools on the official ``mcp`` SDK (``MCPServer``), and clients.

Equivalent to :mod:`benchmarks.ours`: ``echo``, ``sample1`` and ``sample10``
sample through ``ctx.session.create_message(..., related_request_id=...)`` (the
2025-11-25 way), and ``elicit10`` asks ten sequential questions the 2026-07-28
way, as a chain of resolvers that each return an ``Elicit`` marker.

Run as ``python benchmarks/sdk.py stdio`` or ``python benchmarks/sdk.py http
PORT`` to serve them.
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from collections.abc import AsyncGenerator
from typing import Annotated, Any

import anyio
from mcp import Client
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resolve import Elicit, Resolve
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    SamplingMessage,
    TextContent,
)
from pydantic import BaseModel

warnings.simplefilter("ignore", MCPDeprecationWarning)

server = MCPServer("bench-sdk")


class Step(BaseModel):
    n: int


def _message(text: str) -> list[SamplingMessage]:
    return [SamplingMessage(role="user", content=TextContent(type="text", text=text))]


@server.tool()
async def echo(text: str) -> str:
    """Return the text."""
    return text


@server.tool()
async def sample1(text: str, ctx: Context) -> str:
    """Ask the client's model once."""
    result = await ctx.session.create_message(  # pyright: ignore[reportDeprecated]
        messages=_message(text), max_tokens=16, related_request_id=ctx.request_id
    )
    assert isinstance(result.content, TextContent)
    return result.content.text


@server.tool()
async def sample10(text: str, ctx: Context) -> str:
    """Ask the client's model ten times, one after the other."""
    out = ""
    for _ in range(10):
        result = await ctx.session.create_message(  # pyright: ignore[reportDeprecated]
            messages=_message(text), max_tokens=16, related_request_id=ctx.request_id
        )
        assert isinstance(result.content, TextContent)
        out = result.content.text
    return out


# elicit10: ten questions, each asked only once the previous one is answered.
def _q0(text: str) -> Elicit[Step]:
    return Elicit(f"{text} 0", Step)


def _next(i: int, prev: Any) -> Any:
    def ask(text: str, before: Step) -> Elicit[Step]:
        return Elicit(f"{text} {i}", Step)

    # Real objects, not strings: the dependency differs per link of the chain.
    ask.__annotations__ = {
        "text": str,
        "before": Annotated[Step, Resolve(prev)],
        "return": Elicit[Step],
    }
    ask.__name__ = ask.__qualname__ = f"_q{i}"
    return ask


_chain: list[Any] = [_q0]
for _i in range(1, 10):
    _chain.append(_next(_i, _chain[-1]))


@server.tool()
async def elicit10(text: str, last: Annotated[Step, Resolve(_chain[-1])]) -> str:
    """Ask the user ten questions, one after the other."""
    return str(last.n * 10)


async def sampling(context: Any, params: CreateMessageRequestParams) -> Any:
    return CreateMessageResult(
        role="assistant", content=TextContent(type="text", text="ok"), model="bench"
    )


class Parked:
    """A sampling callback that never answers."""

    def __init__(self) -> None:
        self.asked = 0

    async def __call__(self, context: Any, params: CreateMessageRequestParams) -> Any:
        self.asked += 1
        await anyio.sleep_forever()


async def elicitation(context: Any, params: ElicitRequestParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"n": 1})


@contextlib.asynccontextmanager
async def client(
    target: Any, mode: str = "legacy", **options: Any
) -> AsyncGenerator[Client]:
    """The SDK client connected to ``target`` (in-process server, URL, stdio)."""
    options.setdefault("sampling_callback", sampling)
    options.setdefault("elicitation_callback", elicitation)
    async with Client(target, mode=mode, **options) as c:
        yield c


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        server.run(
            "streamable-http", host="127.0.0.1", port=int(sys.argv[2]),
            stateless_http=False,
        )  # fmt: skip
    else:
        server.run("stdio")

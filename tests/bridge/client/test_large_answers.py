"""A model's answer larger than the client sends, or the server takes.

Before, over stdio, a 20 MB answer ended the session blaming the server ("the
server does not read what it asks for"); over HTTP, the server's 413 to a
2025-11-25 answer was only logged, and the tool waited out its 60 s sampling
timeout. Now the server's question fails at once saying how large the answer
was, or (a 2026-07-28 round, whose answers travel in the request) the call
fails with that, before anything is sent.
"""

from __future__ import annotations

import sys
from contextlib import AbstractAsyncContextManager

import pytest
import trio

from bridge.client import Client, connect
from bridge.client.client import Era
from bridge.server import Server
from bridge.transports.http import HttpLimits
from runtime import Text
from runtime.errors import LocalProtocolError, PeerError
from runtime.lowlevel import SampleReply, SamplingRequest
from tests.bridge.http_kit import served
from tests.fixtures import interop_server as fx
from tests.helpers import ROOT, STARTUP

SERVER = [sys.executable, "-m", "bridge.cli", "serve", str(ROOT / fx.__file__)]


class Verbose:
    """A model whose every answer is ``size`` characters of text."""

    supports_tools = False

    def __init__(self, size: int) -> None:
        self.size = size

    async def complete(self, request: SamplingRequest) -> SampleReply:
        await trio.lowlevel.checkpoint()
        return SampleReply(content=(Text("x" * self.size),), model="verbose")


def _verbose_over_stdio(era: Era) -> AbstractAsyncContextManager[Client]:
    """A client of our stdio server whose model answers 300,000 characters,
    and which sends at most 200,000 bytes."""
    return connect(
        SERVER,
        era=era,
        sampler=Verbose(300_000),
        max_message=200_000,
        connect_timeout=STARTUP,
    )


async def test_a_stdio_answer_over_max_message_fails_the_question_not_the_session(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with trio.fail_after(60):
        async with _verbose_over_stdio("legacy") as client:
            result = await client.call_tool("ask", {"prompt": "hi"})
            # The session lives on: the next call is answered.
            after = await client.call_tool("add", {"a": 1, "b": 2})
    assert result.is_error
    [text] = [block.text for block in result.content if isinstance(block, Text)]
    assert "the client's answer is 300,1" in text
    assert "more than it sends (200,000, its max_message)" in text
    assert after.is_error  # the same model answers "add" with 300,000 x's
    assert any("not sent: the client's answer" in r.message for r in caplog.records)


async def test_a_stdio_round_over_max_message_is_not_sent() -> None:
    with trio.fail_after(60):
        async with _verbose_over_stdio("2026-07-28") as client:
            with pytest.raises(LocalProtocolError) as caught:
                await client.call_tool("ask", {"prompt": "hi"})
            small = await client.list_tools()
    assert str(caught.value).startswith("the tools/call request is 300,")
    assert "more than the client sends (200,000, its max_message)" in str(caught.value)
    assert small  # the session still answers


def _server() -> Server:
    return Server([fx.ask], name="large-answers")


async def test_an_http_answer_the_server_refuses_fails_its_question_at_once() -> None:
    limits = HttpLimits(max_body=100_000)
    with trio.fail_after(20):  # the tool's sampling timeout is 60 s
        async with (
            served(_server(), limits=limits) as url,
            connect(url, era="legacy", sampler=Verbose(150_000)) as client,
        ):
            result = await client.call_tool("ask", {"prompt": "hi"})
    assert result.is_error
    [text] = [block.text for block in result.content if isinstance(block, Text)]
    assert "the client's answer is 150,1" in text
    assert "more than the server takes (HTTP 413)" in text


async def test_an_http_round_the_server_refuses_is_its_refusal() -> None:
    limits = HttpLimits(max_body=100_000)
    with trio.fail_after(20):
        async with (
            served(_server(), limits=limits) as url,
            connect(url, era="2026-07-28", sampler=Verbose(150_000)) as client,
        ):
            with pytest.raises(PeerError) as caught:
                await client.call_tool("ask", {"prompt": "hi"})
    assert caught.value.code == -32600
    assert "(tools/call): the request is 150," in caught.value.message
    assert caught.value.message.endswith("more than the server takes (HTTP 413)")

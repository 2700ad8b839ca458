"""Our MCP client against our server over real loopback HTTP, in both eras.

The same scenarios as the in-memory client tests (``test_client``), now through
``http_transport`` and ``serve_http``: in 2025-11-25 the server's questions
travel on each call's SSE stream and our answers are separate POSTs; in
2026-07-28 every call is a stateless POST answered ``input_required`` until
complete. Plus what only HTTP has: resuming a released stream, ending the
session on close, and a timeout reaching the server as a cancellation.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator
from typing import Any

import httpx
import pytest
import trio
import trio.testing

from bridge.client import Client
from bridge.client.http import HttpClientTransport, http_transport
from bridge.server import Server
from bridge.transports.http import HttpLimits
from runtime import Context, Op, tool
from runtime.errors import RemoteProtocolError, RequestTimeout
from runtime.lowlevel import ElicitationRequest, ElicitReply
from tests.bridge.client.test_client import Accepting, ScriptedModel, our_server
from tests.bridge.http_kit import JSON_HEADERS, served
from tests.fixtures import http_tools, interop_server

ERAS = ["legacy", "2026-07-28"]


@pytest.fixture(params=ERAS)
def era(request: pytest.FixtureRequest) -> str:
    return request.param


@contextlib.asynccontextmanager
async def over_http(
    server: Server, era: str, limits: HttpLimits | None = None, **options: Any
) -> AsyncGenerator[tuple[Client, HttpClientTransport]]:
    """Our client connected to ``server`` served on 127.0.0.1."""
    async with (
        served(server, limits=limits) as url,
        http_transport(url) as transport,
        Client.connect(transport, era=era, **options) as client,  # type: ignore[arg-type]
    ):
        yield client, transport


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28", "auto"])
async def test_the_era_is_negotiated_over_http(mode: str) -> None:
    with trio.fail_after(10):
        async with over_http(our_server(), mode) as (client, transport):
            names = {tool["name"] for tool in await client.list_tools()}
    assert client.era == ("2025-11-25" if mode == "legacy" else "2026-07-28")
    assert transport.version == client.era
    assert (transport.session_id is not None) == (mode == "legacy")
    assert names >= {"ask", "weather", "agent", "confirm", "chatty"}


async def test_sampling_structured_output_and_tool_use_over_http(era: str) -> None:
    model = ScriptedModel()
    with trio.fail_after(10):
        async with over_http(our_server(), era, sampler=model) as (client, _):
            asked = await client.call_tool("ask", {"prompt": "hi"})
            weather = await client.call_tool("weather", {"prompt": "w"})
            agent = await client.call_tool("agent", {"prompt": "a"})
    assert asked.text == "scripted:answer to hi"
    assert weather.structured_content == {"city": "Oslo", "celsius": 4}
    assert agent.text == "trio|answer to results"
    assert model.requests[0].system_prompt == "Be brief."


async def test_elicitation_is_answered_over_http(era: str) -> None:
    handler = Accepting({"ok": True, "note": "yes"})
    with trio.fail_after(10):
        async with over_http(our_server(), era, elicitation=handler) as (client, _):
            result = await client.call_tool("confirm", {"prompt": "Sure?"})
    assert result.text == "accept:True:yes"
    (request,) = handler.requests
    assert (request.key, request.context) == ("confirm", {"reason": "testing"})


async def test_progress_and_logs_arrive_in_order_over_http(era: str) -> None:
    events: list[Any] = []

    def on_log(level: str, data: Any, logger: str | None) -> None:
        events.append(data)

    def on_progress(value: float, total: float | None, message: str | None) -> None:
        events.append(value)

    with trio.fail_after(10):
        async with over_http(our_server(), era, on_log=on_log) as (client, _):
            result = await client.call_tool("chatty", {}, on_progress=on_progress)
    assert result.text == "done"
    assert events == ["step 1", 1, "step 2", 2, "step 3", 3]


async def test_concurrent_calls_share_one_connection(era: str) -> None:
    model = ScriptedModel()
    answers: list[str] = []
    with trio.fail_after(10):
        async with over_http(our_server(), era, sampler=model) as (client, _):

            async def ask(prompt: str) -> None:
                answers.append((await client.call_tool("ask", {"prompt": prompt})).text)

            async with trio.open_nursery() as nursery:
                for prompt in "abcde":
                    nursery.start_soon(ask, prompt)
    assert sorted(answers) == [f"scripted:answer to {p}" for p in "abcde"]


# --- SSE polling: a released stream is resumed with GET + Last-Event-ID -----------


@tool(elicits=[http_tools.NAME])
def polls_twice(ctx: Context) -> Op[str]:
    """Releases its stream twice, and asks a question on a resumed stream."""
    yield ctx.log("info", "one")
    yield ctx.release_stream()
    answer = yield from ctx.elicit(http_tools.NAME, "Your name?")
    name = answer.content.name if answer.content else "nobody"
    yield ctx.log("info", f"two {name}")
    yield ctx.release_stream()
    yield ctx.log("info", "three")
    return f"polled {name}"


async def test_a_released_stream_resumes_without_losing_or_repeating_a_message() -> (
    None
):
    logs: list[Any] = []
    handler = Accepting({"name": "Ada"})
    server = Server([polls_twice])
    limits = HttpLimits(retry_ms=20)

    def on_log(level: str, data: Any, logger: str | None) -> None:
        logs.append(data)

    options: dict[str, Any] = {"elicitation": handler, "on_log": on_log}
    with trio.fail_after(10):
        async with over_http(server, "legacy", limits, **options) as (client, _):
            result = await client.call_tool("polls_twice")
    assert result.text == "polled Ada"
    assert logs == ["one", "two Ada", "three"]
    assert len(handler.requests) == 1


async def test_a_session_the_server_ended_is_renewed_and_calls_go_on() -> None:
    with trio.fail_after(10):
        async with (
            served(Server([http_tools.echo])) as url,
            http_transport(url) as transport,
            Client.connect(transport, era="legacy") as client,
            httpx.AsyncClient() as http,
        ):
            before = await client.call_tool("echo", {"text": "one"})
            first = transport.session_id
            assert first is not None
            headers = {"Mcp-Session-Id": first, "MCP-Protocol-Version": "2025-11-25"}
            ended = await http.delete(url, headers=headers)  # as a restart would
            assert ended.status_code == 200
            after = await client.call_tool("echo", {"text": "two"})
            assert transport.session_id not in (None, first)
    assert (before.text, after.text) == ("one", "two")


async def test_closing_the_client_ends_its_http_session() -> None:
    with trio.fail_after(10):
        async with served(our_server()) as url:
            async with (
                http_transport(url) as transport,
                Client.connect(transport, era="legacy") as client,
            ):
                await client.list_tools()
                session_id = transport.session_id
            assert session_id is not None
            headers = {**JSON_HEADERS, "mcp-session-id": session_id}
            ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
            async with httpx.AsyncClient() as http:
                response = await http.post(url, json=ping, headers=headers)
    assert response.status_code == 404


class Stalling:
    """An elicitation handler that never answers."""

    async def handle(self, request: ElicitationRequest) -> ElicitReply:
        await trio.sleep_forever()
        raise AssertionError


async def test_a_timeout_cancels_the_call_on_the_server() -> None:
    server = Server([http_tools.wait_forever, interop_server.ask])
    params = {"name": "wait_forever", "arguments": {"tag": "http-client-timeout"}}
    with trio.fail_after(10):
        async with over_http(server, "legacy", elicitation=Stalling()) as (client, _):
            with pytest.raises(RequestTimeout):
                await client.session.request("tools/call", params, timeout=0.3)
            await trio.testing.wait_all_tasks_blocked(cushion=0.05)
            assert "http-client-timeout" in http_tools.CLEANED


@tool
def long_text(size: int) -> str:
    """A text of ``size`` characters."""
    return "x" * size


@pytest.mark.parametrize("stream", ["when-needed", "always"])
async def test_a_large_result_arrives_whole(era: str, stream: str) -> None:
    # Plain JSON answers were read as if error pages, at most 64 KiB: any
    # result over ~32 KiB of text failed ("answered HTTP 200 without the
    # response to the request"). 3 MB of text is 6 MB of JSON with its
    # structured copy.
    limits = HttpLimits(stream_responses=stream)  # type: ignore[arg-type]
    server = Server([long_text], name="big")
    with trio.fail_after(30):
        async with over_http(server, era, limits) as (client, _):
            result = await client.call_tool("long_text", {"size": 3_000_000})
    assert not result.is_error
    assert result.text == "x" * 3_000_000


@pytest.mark.parametrize("stream", ["when-needed", "always"])
async def test_a_message_over_max_message_fails_its_call_in_one_line(
    era: str, stream: str
) -> None:
    limits = HttpLimits(stream_responses=stream)  # type: ignore[arg-type]
    server = Server([long_text], name="big")
    with trio.fail_after(30):
        async with (
            served(server, limits=limits) as url,
            http_transport(url, max_message=100_000) as transport,
            Client.connect(transport, era=era) as client,  # type: ignore[arg-type]
        ):
            assert (await client.call_tool("long_text", {"size": 10_000})).text
            with pytest.raises(RemoteProtocolError) as caught:
                await client.call_tool("long_text", {"size": 200_000})
    assert "over 100,000 " in str(caught.value)
    assert "(the client's max_message)" in str(caught.value)

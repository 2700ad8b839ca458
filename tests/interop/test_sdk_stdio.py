"""Interop: the official ``mcp`` SDK client drives our server over stdio.

The server is a real subprocess (``yieldmcp serve``); the SDK's sampling and
elicitation callbacks answer the tools' questions, and the results must arrive
typed in our tools. Every test runs in both protocol eras: ``legacy``
(2025-11-25, live server→client requests) and ``2026-07-28`` (multi-round
``input_required`` results that the SDK answers and retries), with the same
tool code and the same expected results.
"""

from __future__ import annotations

import sys
from typing import Any

import mcp.types as types
import pytest
import trio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.helpers import ROOT

SERVER = StdioServerParameters(
    command=sys.executable,
    args=["-m", "bridge.cli", "serve", str(ROOT / "tests/fixtures/interop_server.py")],
    cwd=str(ROOT),
)


def _last_user_blocks(params: types.CreateMessageRequestParams) -> list[Any]:
    content = params.messages[-1].content
    return content if isinstance(content, list) else [content]


async def sampling(
    context: Any, params: types.CreateMessageRequestParams
) -> types.CreateMessageResult | types.CreateMessageResultWithTools:
    names = [t.name for t in params.tools or []]
    last = _last_user_blocks(params)
    if "__schema__" in names:
        use = types.ToolUseContent(
            type="tool_use",
            id="s1",
            name="__schema__",
            input={"city": "Oslo", "celsius": 4},
        )
        return types.CreateMessageResultWithTools(
            role="assistant", content=[use], model="sdk-model", stop_reason="toolUse"
        )
    if "lookup" in names and not isinstance(last[0], types.ToolResultContent):
        use = types.ToolUseContent(
            type="tool_use", id="t1", name="lookup", input={"query": "trio"}
        )
        return types.CreateMessageResultWithTools(
            role="assistant", content=[use], model="sdk-model", stop_reason="toolUse"
        )
    if isinstance(last[0], types.ToolResultContent):
        text = f"final after {last[0].content[0].text}"  # type: ignore[union-attr]
    else:
        text = f"echo {last[0].text} ({params.system_prompt}, {params.max_tokens})"
    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(type="text", text=text),
        model="sdk-model",
        stop_reason="endTurn",
    )


async def elicitation(
    context: Any, params: types.ElicitRequestParams
) -> types.ElicitResult:
    assert isinstance(params, types.ElicitRequestFormParams)
    assert params.requested_schema["properties"]["ok"]["type"] == "boolean"
    return types.ElicitResult(action="accept", content={"ok": True, "note": "sure"})


MODES = ["legacy", "2026-07-28"]


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    return request.param


def client(mode: str, **extra: Any) -> Client:
    options: dict[str, Any] = {
        "mode": mode,
        "sampling_callback": sampling,
        "sampling_capabilities": types.SamplingCapability(
            tools=types.SamplingToolsCapability()
        ),
        "elicitation_callback": elicitation,
    }
    options.update(extra)
    return Client(SERVER, **options)


def text_of(result: types.CallToolResult) -> str:
    assert not result.is_error, result.content
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


async def test_tools_are_listed_with_their_schemas(mode: str) -> None:
    with trio.fail_after(30):
        async with client(mode) as session:
            listed = await session.list_tools()
    tools = {t.name: t for t in listed.tools}
    assert set(tools) == {
        "ask",
        "weather",
        "agent",
        "confirm",
        "chatty",
        "fails",
        "add",
    }
    assert tools["weather"].output_schema is not None
    assert tools["weather"].output_schema["properties"]["celsius"]["maximum"] == 60
    assert tools["ask"].input_schema["required"] == ["prompt"]


async def test_a_tool_with_plain_typed_parameters(mode: str) -> None:
    with trio.fail_after(30):
        async with client(mode) as session:
            listed = await session.list_tools()
            result = await session.call_tool("add", {"a": 2, "b": 3})
            refused = await session.call_tool("add", {"a": 2, "b": -1})
    schema = next(t.input_schema for t in listed.tools if t.name == "add")
    assert schema["required"] == ["a"]
    assert schema["properties"]["b"] == {
        "default": 1, "description": "Added", "minimum": 0, "title": "B",
        "type": "integer",
    }  # fmt: skip
    assert text_of(result) == "5 (sdk-model)"
    assert refused.is_error
    assert "b: Input should be greater than or equal to 0" in str(refused.content)


async def test_plain_sampling_round_trip(mode: str) -> None:
    with trio.fail_after(30):
        async with client(mode) as session:
            result = await session.call_tool("ask", {"prompt": "hi"})
    assert text_of(result) == "sdk-model:echo hi (Be brief., 50)"


async def test_structured_sampling_arrives_parsed(mode: str) -> None:
    with trio.fail_after(30):
        async with client(mode) as session:
            result = await session.call_tool("weather", {"prompt": "weather?"})
    assert result.structured_content == {"city": "Oslo", "celsius": 4}


async def test_tool_use_then_tool_result_then_final_turn(mode: str) -> None:
    with trio.fail_after(30):
        async with client(mode) as session:
            result = await session.call_tool("agent", {"prompt": "tell me"})
    assert text_of(result) == "trio|final after facts about trio"


async def test_elicitation_arrives_validated(mode: str) -> None:
    with trio.fail_after(30):
        async with client(mode) as session:
            result = await session.call_tool("confirm", {"prompt": "Proceed?"})
    assert text_of(result) == "accept:True:sure"


async def test_logs_and_progress_reach_the_client(mode: str) -> None:
    logs: list[Any] = []
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(params.data)

    async def on_progress(
        value: float, total: float | None, message: str | None
    ) -> None:
        progress.append((value, total, message))

    with trio.fail_after(30):
        async with client(mode, logging_callback=on_log, log_level="info") as session:
            result = await session.call_tool(
                "chatty", {}, progress_callback=on_progress
            )
    assert text_of(result) == "done"
    assert logs == ["step 1", "step 2", "step 3"]
    assert progress == [
        (1, 3, "step 1 of 3"),
        (2, 3, "step 2 of 3"),
        (3, 3, "step 3 of 3"),
    ]


async def test_a_failing_tool_is_an_error_result(mode: str) -> None:
    with trio.fail_after(30):
        async with client(mode) as session:
            result = await session.call_tool("fails", {})
    assert result.is_error
    assert "this tool always fails" in result.content[0].text  # type: ignore[union-attr]


async def test_a_client_without_sampling_is_refused_clearly(mode: str) -> None:
    from mcp.shared.exceptions import MCPError

    with trio.fail_after(30):
        async with Client(SERVER, mode=mode) as session:
            if mode == "legacy":  # a tool error, as 2025-11-25 has no better code
                result = await session.call_tool("ask", {"prompt": "hi"})
                assert result.is_error
                message = result.content[0].text  # type: ignore[union-attr]
            else:  # 2026-07-28: MissingRequiredClientCapability
                with pytest.raises(MCPError) as info:
                    await session.call_tool("ask", {"prompt": "hi"})
                assert info.value.error.code == -32021
                message = info.value.error.message
    assert "sampling capability" in message


async def test_arguments_failing_the_schema_reach_the_sdk_as_a_tool_error(
    mode: str,
) -> None:
    with trio.fail_after(30):
        async with client(mode) as session:
            result = await session.call_tool("ask", {"prompt": 3})
    assert result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    assert "prompt: Input should be a valid string" in text


async def test_an_unknown_tool_is_a_protocol_error(mode: str) -> None:
    from mcp.shared.exceptions import MCPError

    with trio.fail_after(30):
        async with client(mode) as session:
            with pytest.raises(MCPError) as info:
                await session.call_tool("nope", {})
    assert info.value.error.code == -32602

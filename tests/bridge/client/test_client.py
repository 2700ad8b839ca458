"""Our MCP client, against our server (in memory) and the official SDK's server.

Every scenario runs in both eras with the same expectations: in 2025-11-25 the
server asks mid-call; in 2026-07-28 the client answers ``input_required`` rounds.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest
import trio

from bridge.client import Client, connect
from bridge.server import Server
from bridge.transports.memory import memory_pair
from runtime import Text, ToolUse
from runtime.errors import BrokenSessionError
from runtime.lowlevel import (
    ElicitationRequest,
    ElicitReply,
    SampleReply,
    SamplingRequest,
)
from tests.fixtures import interop_server as fx
from tests.helpers import ROOT, STARTUP

ERAS = ["legacy", "2026-07-28"]


class ScriptedModel:
    """A sampler that answers from the request's shape, and records requests."""

    supports_tools = True

    def __init__(self) -> None:
        self.requests: list[SamplingRequest] = []

    async def complete(self, request: SamplingRequest) -> SampleReply:
        self.requests.append(request)
        await trio.lowlevel.checkpoint()
        if request.schema_tool is not None:
            data = {"city": "Oslo", "celsius": 4}
            return SampleReply(
                content=(ToolUse("s1", "__schema__", data),), model="scripted"
            )
        last = request.messages[-1]
        if request.tools and request.tool_choice != "none":
            name = request.tools[0].name
            return SampleReply(
                content=(ToolUse(f"t{len(self.requests)}", name, {"query": "trio"}),),
                model="scripted",
            )
        return SampleReply(
            content=(Text(f"answer to {last.text or 'results'}"),), model="scripted"
        )


class Accepting:
    def __init__(self, content: dict[str, Any]) -> None:
        self.content = content
        self.requests: list[ElicitationRequest] = []

    async def handle(self, request: ElicitationRequest) -> ElicitReply:
        self.requests.append(request)
        return ElicitReply(action="accept", content=self.content)


@pytest.fixture(params=ERAS)
def era(request: pytest.FixtureRequest) -> str:
    return request.param


@contextlib.asynccontextmanager
async def in_memory(server: Server, era: str, **options: Any) -> AsyncIterator[Client]:
    """Our client connected to our server over a memory pipe."""
    server_end, client_end = memory_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(server.serve, server_end)
        async with Client.connect(client_end, era=era, **options) as client:  # type: ignore[arg-type]
            yield client
        nursery.cancel_scope.cancel()


def our_server() -> Server:
    return Server([fx.ask, fx.weather, fx.agent, fx.confirm, fx.chatty])


async def test_the_era_is_negotiated(era: str) -> None:
    async with in_memory(our_server(), era) as client:
        assert client.era == ("2026-07-28" if era != "legacy" else "2025-11-25")
        assert {t["name"] for t in await client.list_tools()} >= {"ask", "confirm"}


async def test_auto_prefers_the_modern_era() -> None:
    async with in_memory(our_server(), "auto") as client:
        assert client.era == "2026-07-28"


async def test_sampling_structured_output_and_tool_use_are_answered(era: str) -> None:
    model = ScriptedModel()
    async with in_memory(our_server(), era, sampler=model) as client:
        asked = await client.call_tool("ask", {"prompt": "hi"})
        weather = await client.call_tool("weather", {"prompt": "w"})
        agent = await client.call_tool("agent", {"prompt": "a"})
    assert asked.text == "scripted:answer to hi"
    assert weather.structured_content == {"city": "Oslo", "celsius": 4}
    assert agent.text == "trio|answer to results"
    assert model.requests[0].system_prompt == "Be brief."


async def test_elicitation_is_answered_by_the_handler(era: str) -> None:
    handler = Accepting({"ok": True, "note": "yes"})
    async with in_memory(our_server(), era, elicitation=handler) as client:
        result = await client.call_tool("confirm", {"prompt": "Sure?"})
    assert result.text == "accept:True:yes"
    (request,) = handler.requests
    assert (request.key, request.context) == ("confirm", {"reason": "testing"})


async def test_only_real_capabilities_are_declared(era: str) -> None:
    async with in_memory(our_server(), era) as client:
        assert client.capabilities == {}
        if era == "legacy":
            result = await client.call_tool("ask", {"prompt": "hi"})
            assert result.is_error
        else:
            from runtime.errors import PeerError

            with pytest.raises(PeerError) as info:
                await client.call_tool("ask", {"prompt": "hi"})
            assert info.value.code == -32021


class TextOnly:
    """A sampler that never says it can call tools."""

    async def complete(self, request: SamplingRequest) -> SampleReply:
        return SampleReply(content=(Text("plain"),), model="text-only")


async def test_sampling_tools_are_declared_only_for_samplers_that_call_tools(
    era: str,
) -> None:
    async with in_memory(our_server(), era, sampler=TextOnly()) as client:
        assert client.capabilities == {"sampling": {}}
        asked = await client.call_tool("ask", {"prompt": "hi"})
        assert asked.text == "text-only:plain"
        if era == "legacy":
            refused = await client.call_tool("agent", {"prompt": "a"})
            assert refused.is_error
            assert "sampling.tools" in refused.text
        else:
            from runtime.errors import PeerError

            with pytest.raises(PeerError) as info:
                await client.call_tool("agent", {"prompt": "a"})
            assert info.value.code == -32021
    async with in_memory(our_server(), era, sampler=ScriptedModel()) as client:
        assert client.capabilities == {"sampling": {"tools": {}}}


async def test_progress_and_logs_reach_the_caller(era: str) -> None:
    logs: list[Any] = []
    progress: list[float] = []

    def on_log(level: str, data: Any, logger: str | None) -> None:
        logs.append((level, data))

    def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    async with in_memory(our_server(), era, on_log=on_log) as client:
        result = await client.call_tool("chatty", {}, on_progress=on_progress)
        with trio.fail_after(5):
            await trio.testing.wait_all_tasks_blocked()
    assert result.text == "done"
    assert logs == [("info", "step 1"), ("info", "step 2"), ("info", "step 3")]
    assert progress == [1, 2, 3]


# --- against the official SDK's server ----------------------------------------------

SDK_SERVER = [sys.executable, str(ROOT / "tests/fixtures/sdk_server.py")]


async def test_the_sdk_server_samples_with_tools_through_our_provider(era: str) -> None:
    model = ScriptedModel()
    tool = "legacy_sample" if era == "legacy" else "mrtr_sample"
    with trio.fail_after(120):
        async with connect(
            SDK_SERVER, era=era, sampler=model, connect_timeout=STARTUP
        ) as client:  # type: ignore[arg-type]
            result = await client.call_tool(tool, {"prompt": "find trio"})
    assert not result.is_error, result.text
    assert result.text == "tool_use:lookup"
    (request,) = model.requests
    assert request.tool_choice == "required"
    assert [t.name for t in request.tools] == ["lookup"]


async def test_the_sdk_server_elicits_through_our_handler(era: str) -> None:
    handler = Accepting({"ok": True})
    tool = "legacy_elicit" if era == "legacy" else "mrtr_elicit"
    with trio.fail_after(120):
        async with connect(
            SDK_SERVER, era=era, elicitation=handler, connect_timeout=STARTUP
        ) as client:  # type: ignore[arg-type]
            result = await client.call_tool(tool, {"message": "Proceed?"})
    assert not result.is_error, result.text
    assert result.text.startswith("accept:")
    assert "True" in result.text or "true" in result.text
    assert handler.requests[0].requested_schema["properties"]["ok"]["type"] == "boolean"


async def test_a_server_killed_mid_call_is_reported_not_hung() -> None:
    command = [
        sys.executable,
        "-m",
        "bridge.cli",
        "serve",
        str(ROOT / "tests/fixtures/interop_server.py"),
    ]

    class Stalling:
        """Answers sampling only after the server process has been killed."""

        def __init__(self) -> None:
            self.asked = trio.Event()

        async def complete(self, request: SamplingRequest) -> SampleReply:
            self.asked.set()
            await trio.sleep_forever()
            raise AssertionError

    from bridge.client.process import spawn

    model = Stalling()
    with trio.fail_after(120):
        failures: list[BaseException] = []
        async with (
            spawn(command, cwd=str(ROOT)) as (transport, process),
            Client.connect(
                transport, era="legacy", sampler=model, connect_timeout=STARTUP
            ) as client,
            trio.open_nursery() as nursery,
        ):

            async def call() -> None:
                try:
                    await client.call_tool("ask", {"prompt": "hi"})
                except BrokenSessionError as exc:
                    failures.append(exc)

            nursery.start_soon(call)
            await model.asked.wait()
            process.kill()
    assert len(failures) == 1


async def test_annotations_and_result_meta_survive_our_client(era: str) -> None:
    with trio.fail_after(120):
        async with connect(SDK_SERVER, era=era, connect_timeout=STARTUP) as client:  # type: ignore[arg-type]
            result = await client.call_tool("annotated", {})
    wanted = {"audience": ["user"], "priority": 0.9}
    assert [type(b).__name__ for b in result.content] == ["Text", "Image", "Audio"]
    assert [b.annotations for b in result.content] == [wanted] * 3  # type: ignore[union-attr]
    assert result.meta is not None
    assert result.meta["example.com/trace"] == "t-1"


# A stdio server that prints a line that is not JSON before each answer to
# tools/call: the first call is answered after it, the second not at all (the
# server exits after the line).
STRAY_LINE_SERVER = r"""
import json, sys
calls = 0
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    method, answer = message["method"], {}
    if method == "initialize":
        answer = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                  "serverInfo": {"name": "stray", "version": "1"}}
    elif method == "tools/call":
        calls += 1
        print("starting the tool...", flush=True)
        if calls == 2:
            sys.exit(0)
        answer = {"content": [{"type": "text", "text": "done"}]}
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": answer}),
          flush=True)
"""


async def test_a_stray_stdio_line_is_survived_and_named_if_the_server_then_leaves(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A line that is not JSON cannot be matched to a request: the session
    # goes on (a stray print must not end it) and warns; when the server then
    # leaves without answering, the failure says what it had sent. It said
    # only "the peer disconnected".
    command = [sys.executable, "-c", STRAY_LINE_SERVER]
    with trio.fail_after(30):
        async with connect(command, era="legacy", validate_output=False) as client:
            first = await client.call_tool("any")
            with pytest.raises(BrokenSessionError) as gone:
                await client.call_tool("any")
    assert first.text == "done"
    assert str(gone.value) == (
        "the peer disconnected (before that it sent a message that cannot be "
        "read: Parse error: not valid JSON)"
    )
    warned = [r for r in caplog.records if "cannot be read" in r.getMessage()]
    assert len(warned) == 1  # once a session

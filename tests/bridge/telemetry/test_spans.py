"""OpenTelemetry spans of MCP requests and of the effects of a call.

Our client against our server in memory, with the SDK's in-memory exporter:
span names, kinds, the MCP semantic-convention attributes, parent and child,
trace context carried both ways in ``params._meta``, 2026-07-28 rounds, and
that nothing is doubled.
"""

from __future__ import annotations

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from opentelemetry.trace import SpanKind, StatusCode

from bridge.server import Server
from runtime import Context, Op, ToolUse, tool
from runtime.errors import PeerError
from runtime.lowlevel import SampleReply, SamplingRequest
from tests.bridge.client.test_client import ScriptedModel, in_memory
from tests.fixtures import interop_server as fx
from tests.fixtures import traced_tools as tt

from .helpers import attrs, is_child, named, one, parent_of, undoubled

SERVER, CLIENT = SpanKind.SERVER, SpanKind.CLIENT


def served() -> Server:
    return Server([fx.ask, tt.debate, tt.twice, tt.broken])


async def test_a_live_call_is_one_trace_from_client_to_model(
    spans: InMemorySpanExporter,
) -> None:
    async with in_memory(served(), "legacy", sampler=ScriptedModel()) as client:
        await client.call_tool("ask", {"prompt": "hi"})
    done = list(spans.get_finished_spans())
    caller = one(done, "tools/call ask", CLIENT)
    call = one(done, "tools/call ask", SERVER)
    sample = one(done, "sample")
    asking = one(done, "sampling/createMessage", CLIENT)
    answering = one(done, "sampling/createMessage", SERVER)
    model = one(done, "chat")
    # client -> server -> effect -> request back -> client's handler -> model
    for parent, child in [
        (caller, call),
        (call, sample),
        (sample, asking),
        (asking, answering),
        (answering, model),
    ]:
        assert is_child(parent, child), (parent.name, child.name)
    assert attrs(call) == attrs(call) | {
        "mcp.method.name": "tools/call",
        "mcp.protocol.version": "2025-11-25",
        "jsonrpc.request.id": attrs(call)["jsonrpc.request.id"],
        "gen_ai.tool.name": "ask",
        "gen_ai.operation.name": "execute_tool",
        "network.transport": "inproc",
    }
    assert "error.type" not in attrs(call)
    assert attrs(sample) == attrs(sample) | {
        "yieldmcp.effect.kind": "sample",
        "yieldmcp.effect.key": "0",
        "yieldmcp.effect.replayed": False,
        "yieldmcp.effect.outcome": "answered",
        "gen_ai.operation.name": "chat",
        "gen_ai.request.max_tokens": 50,
        "gen_ai.response.model": "scripted",
    }
    assert attrs(model)["gen_ai.response.model"] == "scripted"
    undoubled(done)


async def test_errors_say_their_type(spans: InMemorySpanExporter) -> None:
    async with in_memory(served(), "legacy", sampler=ScriptedModel()) as client:
        await client.call_tool("broken", {"topic": "x"})
        with pytest.raises(PeerError):
            await client.call_tool("nope", {})
    done = list(spans.get_finished_spans())
    failed = one(done, "tools/call broken", SERVER)
    assert attrs(failed)["error.type"] == "tool_error"
    assert failed.status.status_code == StatusCode.ERROR
    unknown = one(done, "tools/call nope", SERVER)
    assert attrs(unknown)["error.type"] == "-32602"
    assert attrs(unknown)["rpc.response.status_code"] == "-32602"
    assert attrs(one(done, "tools/call nope", CLIENT))["error.type"] == "-32602"


async def test_a_branch_is_a_span_with_a_span_per_child(
    spans: InMemorySpanExporter,
) -> None:
    async with in_memory(served(), "legacy", sampler=ScriptedModel()) as client:
        await client.call_tool("debate", {"topic": "tea"})
    done = list(spans.get_finished_spans())
    call = one(done, "tools/call debate", SERVER)
    branch = one(done, "branch")
    assert is_child(call, branch)
    assert attrs(branch) == attrs(branch) | {
        "yieldmcp.effect.key": "1",
        "yieldmcp.branch.children": 2,
        "yieldmcp.branch.max_tokens": 5000,
        "yieldmcp.branch.timeout": 30,
    }
    children = [one(done, "branch child 0"), one(done, "branch child 1")]
    samples = named(done, "sample")
    assert len(samples) == 3
    for index, child in enumerate(children):
        assert is_child(branch, child)
        (inner,) = [s for s in samples if is_child(child, s)]
        assert attrs(inner)["yieldmcp.effect.key"] == f"1.{index}/1"
        (log,) = child.events
        assert log.name == "log"
        assert log.attributes is not None
        assert log.attributes["yieldmcp.log.level"] == "info"
    verdict = next(s for s in samples if is_child(call, s))
    assert attrs(verdict)["yieldmcp.effect.key"] == "2"
    assert [e.name for e in call.events] == ["progress", "progress"]
    undoubled(done)


async def test_rounds_of_one_call_read_as_one_call(
    spans: InMemorySpanExporter,
) -> None:
    async with in_memory(served(), "2026-07-28", sampler=ScriptedModel()) as client:
        await client.call_tool("twice", {"topic": "tea"})
    done = list(spans.get_finished_spans())
    rounds = one(done, "tools/call twice (rounds)")
    assert attrs(rounds)["yieldmcp.call.rounds"] == 3
    calls = named(done, "tools/call twice")
    servers = [s for s in calls if s.kind == SERVER]
    assert len(servers) == 3
    for server_span in servers:
        client_span = parent_of(done, server_span)
        assert client_span is not None
        assert client_span.kind == CLIENT
        assert is_child(rounds, client_span)
    assert [attrs(s)["mcp.result.type"] for s in servers] == [
        "input_required",
        "input_required",
        "complete",
    ]
    # What each round did: ask 0; take 0's answer, ask 1; replay 0, take 1's.
    by_round = [
        sorted(
            (
                attrs(s)["yieldmcp.effect.key"],
                attrs(s)["yieldmcp.effect.replayed"],
                attrs(s).get("yieldmcp.effect.outcome"),
            )
            for s in named(done, "sample")
            if is_child(server_span, s)
        )
        for server_span in servers
    ]
    assert by_round == [
        [("0", False, "input_required")],
        [("0", False, "answered"), ("1", False, "input_required")],
        [("0", True, None), ("1", False, "answered")],
    ]
    # The model calls between rounds are in the same trace, under the call.
    for model in named(done, "chat"):
        assert is_child(rounds, model)
    undoubled(done)


async def test_without_telemetry_there_are_no_spans() -> None:
    from opentelemetry import trace

    async with in_memory(served(), "legacy", sampler=ScriptedModel()) as client:
        await client.call_tool("ask", {"prompt": "hi"})
    # The providers may be set by another test; telemetry is off here.
    from bridge.telemetry import _otel

    assert _otel.live() is None or trace.get_tracer_provider() is None


class HotThenMild:
    """Structured output that fails validation once, then passes."""

    supports_tools = True

    def __init__(self) -> None:
        self.calls = 0

    async def complete(self, request: SamplingRequest) -> SampleReply:
        self.calls += 1
        celsius = 999 if self.calls == 1 else 4
        data = {"city": "Oslo", "celsius": celsius}
        return SampleReply(content=(ToolUse("s", "__schema__", data),), model="m")


async def test_a_retry_is_an_event_on_the_answer_that_needed_it(
    spans: InMemorySpanExporter,
) -> None:
    server = Server([fx.weather])
    async with in_memory(server, "legacy", sampler=HotThenMild()) as client:
        result = await client.call_tool("weather", {"prompt": "w"})
    assert result.structured_content == {"city": "Oslo", "celsius": 4}
    first, second = sorted(
        named(list(spans.get_finished_spans()), "sample"),
        key=lambda s: attrs(s)["yieldmcp.effect.key"],
    )
    (retry,) = first.events
    assert retry.name == "yieldmcp.retry"
    assert retry.attributes is not None
    assert "celsius" in str(retry.attributes["yieldmcp.retry.reason"])
    assert second.events == ()


async def test_a_step_is_a_span_once_and_replayed_after(
    spans: InMemorySpanExporter,
) -> None:
    server = Server([tt.researched])
    async with in_memory(server, "2026-07-28", sampler=ScriptedModel()) as client:
        result = await client.call_tool("researched", {"topic": "step-spans"})
    assert result.text == "answer to summarise facts about step-spans"
    done = list(spans.get_finished_spans())
    servers = [s for s in named(done, "tools/call researched") if s.kind == SERVER]
    assert len(servers) == 2
    call_ids = {attrs(s)["yieldmcp.call.id"] for s in servers}
    assert len(call_ids) == 1  # the rounds share the call's id
    first, second = (
        [s for s in named(done, "step lookup") if is_child(server, s)]
        for server in servers
    )
    (ran,) = first
    assert attrs(ran) == attrs(ran) | {
        "yieldmcp.effect.kind": "step",
        "yieldmcp.effect.name": "lookup",
        "yieldmcp.effect.replayed": False,
        "yieldmcp.effect.attempts": 2,
        "yieldmcp.effect.outcome": "answered",
    }
    assert [e.name for e in ran.events] == ["yieldmcp.retry"]
    (replayed,) = second
    assert attrs(replayed)["yieldmcp.effect.replayed"] is True
    undoubled(done)


def _current_span() -> str:
    """The span current where this runs (a step's function): its id."""
    return f"{trace.get_current_span().get_span_context().span_id:016x}"


@tool
def traced_after_a_reply(ctx: Context) -> Op[str]:
    """A step reached only after the client's reply to a sample: it starts
    from the session's receive path, not from the request that began the
    call."""
    yield from ctx.sample("anything", max_tokens=5)
    return (yield from ctx.step(_current_span))


async def test_a_step_started_after_a_reply_runs_in_its_calls_span(
    spans: InMemorySpanExporter,
) -> None:
    server = Server([traced_after_a_reply])
    async with in_memory(server, "legacy", sampler=ScriptedModel()) as client:
        result = await client.call_tool("traced_after_a_reply", {})
    done = list(spans.get_finished_spans())
    call = one(done, "tools/call traced_after_a_reply", SERVER)
    assert call.context is not None
    # The call's span, not whatever was current where the reply arrived
    # (over the in-memory pipe, the client's task answering the sample).
    assert result.text == f"{call.context.span_id:016x}"

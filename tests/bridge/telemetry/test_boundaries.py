"""Trace context across real boundaries: a stdio subprocess (the CLI, set up
from ``OTEL_*``), and loopback HTTP in both eras."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from opentelemetry.trace import SpanKind

from bridge.client import connect
from bridge.server import Server
from tests.bridge.client.test_client import ScriptedModel
from tests.bridge.http_kit import served
from tests.fixtures import traced_tools as tt
from tests.helpers import ROOT

from .helpers import is_child, one, undoubled

YIELDMCP = str(Path(sys.executable).parent / "yieldmcp")
TOOLS = "tests/fixtures/traced_tools.py"


def console_spans(text: str) -> list[dict[str, Any]]:
    """The spans the console exporter wrote (JSON objects among log lines)."""
    decoder = json.JSONDecoder()
    found: list[dict[str, Any]] = []
    at = text.find("{\n")
    while at != -1:
        value, end = decoder.raw_decode(text, at)
        found.append(value)
        at = text.find("{\n", end)
    return found


def called(spans: list[dict[str, Any]], name: str, kind: str) -> dict[str, Any]:
    (span,) = [s for s in spans if s["name"] == name and s["kind"] == kind]
    return span


def child_of(parent: dict[str, Any], child: dict[str, Any]) -> bool:
    return (
        child["parent_id"] == parent["context"]["span_id"]
        and child["context"]["trace_id"] == parent["context"]["trace_id"]
    )


def run_call(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [YIELDMCP, "call", f"yieldmcp serve {TOOLS}", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        env={**os.environ, **env},
    )


def test_the_trace_crosses_stdio_both_ways() -> None:
    done = run_call(
        "debate",
        "--arg",
        "topic=tea",
        "--era",
        "legacy",
        OTEL_TRACES_EXPORTER="console",
    )
    assert done.returncode == 0, done.stderr
    assert "trace_id" not in done.stdout  # spans go to stderr, the result to stdout
    spans = console_spans(done.stderr)
    caller = called(spans, "tools/call debate", "SpanKind.CLIENT")
    call = called(spans, "tools/call debate", "SpanKind.SERVER")
    assert child_of(caller, call)  # client process -> server process
    asks = [s for s in spans if s["name"] == "sampling/createMessage"]
    outward = [s for s in asks if s["kind"] == "SpanKind.CLIENT"]
    inward = [s for s in asks if s["kind"] == "SpanKind.SERVER"]
    assert len(outward) == len(inward) == 3
    for answer in inward:  # server process -> client process, and on to the model
        (question,) = [q for q in outward if child_of(q, answer)]
        (model,) = [m for m in spans if m["name"] == "chat" and child_of(answer, m)]
        assert model["attributes"]["gen_ai.operation.name"] == "chat"
        effect = next(s for s in spans if child_of(s, question))
        assert effect["attributes"]["yieldmcp.effect.kind"] == "sample"
    assert call["attributes"]["network.transport"] == "pipe"
    assert len({s["context"]["trace_id"] for s in spans if "mcp" in str(s)}) >= 1


def test_a_bad_exporter_is_one_line_and_exit_1() -> None:
    done = run_call("debate", OTEL_TRACES_EXPORTER="carrier-pigeon")
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "yieldmcp: error: OTEL_TRACES_EXPORTER=carrier-pigeon is not supported; "
        "use console, otlp or none"
    ]


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
async def test_the_trace_crosses_http(spans: InMemorySpanExporter, era: str) -> None:
    server = Server([tt.debate])
    async with (
        served(server) as url,
        connect(url, era=era, sampler=ScriptedModel()) as client,  # type: ignore[arg-type]
    ):
        await client.call_tool("debate", {"topic": "tea"})
    done = list(spans.get_finished_spans())
    servers = [
        s for s in done if s.name == "tools/call debate" and s.kind == SpanKind.SERVER
    ]
    assert servers
    for call in servers:
        assert call.parent is not None
        assert call.parent.is_remote  # carried in params._meta
        caller = next(s for s in done if s.context.span_id == call.parent.span_id)
        assert caller.kind == SpanKind.CLIENT
        assert (call.attributes or {})["network.transport"] == "tcp"
    if era == "legacy":
        asks = [s for s in done if s.name == "sampling/createMessage"]
        inward = [s for s in asks if s.kind == SpanKind.SERVER]
        assert len(inward) == 3
        for answer in inward:  # the server's question, answered in the client
            assert answer.parent is not None
            assert answer.parent.is_remote
            question = next(
                s for s in asks if s.context.span_id == answer.parent.span_id
            )
            assert question.kind == SpanKind.CLIENT
            assert any(is_child(answer, m) for m in done if m.name == "chat")
        assert all("mcp.session.id" in (s.attributes or {}) for s in servers)
        caller = one(done, "tools/call debate", SpanKind.CLIENT)
        assert (caller.attributes or {})["mcp.session.id"] == (
            servers[0].attributes or {}
        )["mcp.session.id"]
        assert (caller.attributes or {})["mcp.protocol.version"] == "2025-11-25"
    else:
        one(done, "tools/call debate (rounds)")
    undoubled(done)

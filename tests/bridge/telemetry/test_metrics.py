"""The MCP metrics: operation durations on both sides, session duration."""

from __future__ import annotations

from typing import Any

from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from bridge.server import Server
from tests.bridge.client.test_client import ScriptedModel, in_memory
from tests.fixtures import interop_server as fx


def points(reader: InMemoryMetricReader) -> dict[str, list[dict[str, Any]]]:
    data = reader.get_metrics_data()
    found: dict[str, list[dict[str, Any]]] = {}
    for resource in data.resource_metrics if data is not None else []:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                found.setdefault(metric.name, []).extend(
                    {**dict(p.attributes or {}), "count": getattr(p, "count", None)}
                    for p in metric.data.data_points
                )
    return found


async def test_operations_and_sessions_are_measured(
    reader: InMemoryMetricReader,
) -> None:
    before = points(reader)
    async with in_memory(Server([fx.ask]), "legacy", sampler=ScriptedModel()) as c:
        await c.call_tool("ask", {"prompt": "hi"})
    found = points(reader)
    server = found["mcp.server.operation.duration"]
    (call,) = [p for p in server if p.get("gen_ai.tool.name") == "ask"]
    assert call["mcp.method.name"] == "tools/call"
    assert call["network.transport"] == "inproc"
    assert call["mcp.protocol.version"] == "2025-11-25"
    sent = {p["mcp.method.name"] for p in found["mcp.client.operation.duration"]}
    # our client's requests, and the server's request to the client
    assert sent >= {"initialize", "tools/call", "sampling/createMessage"}
    received = {p["mcp.method.name"] for p in server}
    assert received >= {"initialize", "tools/call", "sampling/createMessage"}
    sessions = found["mcp.server.session.duration"]
    assert sum(p["count"] for p in sessions) > sum(
        p["count"] for p in before.get("mcp.server.session.duration", [])
    )

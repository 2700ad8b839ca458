"""What a span says about an MCP message: its name and semantic-convention
attributes, from the method, params, and the session's handler and transport.

Pure functions of plain values: no OpenTelemetry here. The names follow the
OpenTelemetry semantic conventions for MCP (``mcp.*``, ``jsonrpc.*``,
``gen_ai.*``, ``network.*``, ``error.type``, ``rpc.response.status_code``);
``yieldmcp.*`` names are ours (effects, rounds).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

__all__ = [
    "EFFECT_META",
    "PROTOCOL_VERSION_META",
    "outcome_attributes",
    "request_attributes",
    "span_name",
    "transport_attributes",
]

PROTOCOL_VERSION_META = "io.modelcontextprotocol/protocolVersion"
EFFECT_META = "io.yieldmcp/effect"
"""The ``_meta`` key of a server's question or notice naming its effect key."""
_NAMED = frozenset({"tools/call", "prompts/get"})


def _meta(params: Mapping[str, Any]) -> Mapping[str, Any]:
    meta: Any = params.get("_meta")
    return cast("Mapping[str, Any]", meta) if isinstance(meta, Mapping) else {}


def target(method: str, params: Mapping[str, Any]) -> str | None:
    """The tool or prompt a request names (the span name's ``{target}``)."""
    name = params.get("name") if method in _NAMED else None
    return name if isinstance(name, str) else None


def span_name(method: str, params: Mapping[str, Any]) -> str:
    """``{mcp.method.name} {target}``, e.g. ``tools/call book_flight``."""
    name = target(method, params)
    return method if name is None else f"{method} {name}"


def request_attributes(
    method: str,
    request_id: object,
    params: Mapping[str, Any],
    version: str | None,
) -> dict[str, Any]:
    """The attributes a request's span starts with."""
    attributes: dict[str, Any] = {
        "mcp.method.name": method,
        "jsonrpc.request.id": str(request_id),
    }
    version = _meta(params).get(PROTOCOL_VERSION_META) or version
    if isinstance(version, str):
        attributes["mcp.protocol.version"] = version
    name = target(method, params)
    if method == "tools/call" and name is not None:
        attributes["gen_ai.tool.name"] = name
        attributes["gen_ai.operation.name"] = "execute_tool"
    elif method == "prompts/get" and name is not None:
        attributes["gen_ai.prompt.name"] = name
    uri = params.get("uri")
    if isinstance(uri, str):
        attributes["mcp.resource.uri"] = uri
    return attributes


def transport_attributes(transport: object) -> dict[str, Any]:
    """``network.transport`` (and the protocol, the session id) of a transport."""
    name = transport if isinstance(transport, str) else type(transport).__name__
    attributes: dict[str, Any] = {}
    if "http" in name.lower():
        attributes["network.transport"] = "tcp"
        attributes["network.protocol.name"] = "http"
    elif "memory" in name.lower():
        attributes["network.transport"] = "inproc"
    else:
        attributes["network.transport"] = "pipe"  # stdio
    session_id: Any = getattr(transport, "session_id", None)
    if not isinstance(session_id, str):
        session_id = getattr(transport, "id", None)
    if isinstance(session_id, str):
        attributes["mcp.session.id"] = session_id
    return attributes


def outcome_attributes(result: Any, code: int | None) -> dict[str, Any]:
    """What a reply says: ``error.type`` and ``rpc.response.status_code`` for
    a JSON-RPC error ``code``; ``tool_error`` for an ``isError`` result; the
    2026-07-28 ``resultType``."""
    if code is not None:
        return {"error.type": str(code), "rpc.response.status_code": str(code)}
    attributes: dict[str, Any] = {}
    if isinstance(result, Mapping):
        fields = cast("Mapping[str, Any]", result)
        if fields.get("isError") is True:
            attributes["error.type"] = "tool_error"
        kind = fields.get("resultType")
        if isinstance(kind, str):
            attributes["mcp.result.type"] = kind
    return attributes

"""Reading finished spans: by name, by kind, as a tree."""

from __future__ import annotations

from collections import Counter
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind


def named(spans: list[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name == name]


def one(
    spans: list[ReadableSpan], name: str, kind: SpanKind | None = None
) -> ReadableSpan:
    found = [s for s in named(spans, name) if kind is None or s.kind == kind]
    assert len(found) == 1, [(s.name, s.kind) for s in found]
    return found[0]


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def parent_of(spans: list[ReadableSpan], span: ReadableSpan) -> ReadableSpan | None:
    if span.parent is None:
        return None
    return next((s for s in spans if s.context.span_id == span.parent.span_id), None)


def is_child(parent: ReadableSpan, child: ReadableSpan) -> bool:
    return (
        child.parent is not None
        and child.parent.span_id == parent.context.span_id
        and child.context.trace_id == parent.context.trace_id
    )


def undoubled(spans: list[ReadableSpan]) -> None:
    """No request has two spans of one kind, and no effect two fresh spans
    with the same outcome."""
    requests = Counter(
        (s.kind, attrs(s)["jsonrpc.request.id"], attrs(s)["mcp.method.name"])
        for s in spans
        if "jsonrpc.request.id" in attrs(s)
    )
    assert max(requests.values(), default=1) == 1, requests
    effects = Counter(
        (attrs(s)["yieldmcp.effect.key"], attrs(s).get("yieldmcp.effect.outcome"))
        for s in spans
        if attrs(s).get("yieldmcp.effect.replayed") is False
        and attrs(s).get("yieldmcp.effect.kind") != "branch"
        and not s.name.startswith("branch")
    )
    assert max(effects.values(), default=1) == 1, effects

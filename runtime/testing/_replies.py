"""Reply builders for scripts: what a model or a user would answer."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from ..messages import SCHEMA_TOOL_NAME, ToolCall, ToolUse, Usage
from ..replies import ElicitReply, SampleReply

__all__ = ["accept", "cancel", "decline", "structured", "text", "tool_calls"]

_ids = itertools.count(1)


def _next_id() -> str:
    return f"call_{next(_ids)}"


def text(
    value: str,
    *,
    model: str = "scripted",
    stop_reason: str = "endTurn",
    usage: Usage | None = None,
) -> SampleReply:
    """A model reply made of one text block."""
    return SampleReply(content=value, model=model, stop_reason=stop_reason, usage=usage)


def tool_calls(
    *calls: tuple[str, Mapping[str, Any]] | ToolCall,
    model: str = "scripted",
    usage: Usage | None = None,
) -> SampleReply:
    """A model reply calling tools: ``("name", {args})`` pairs or ``ToolCall``s.

    Calls given as pairs get fresh ids (``call_<n>``), unique in the process.
    """
    blocks = tuple(
        ToolUse(c.id, c.name, dict(c.arguments))
        if isinstance(c, ToolCall)
        else ToolUse(_next_id(), c[0], dict(c[1]))
        for c in calls
    )
    return SampleReply(content=blocks, model=model, stop_reason="toolUse", usage=usage)


def structured(
    value: BaseModel | Mapping[str, Any],
    *,
    model: str = "scripted",
    usage: Usage | None = None,
) -> SampleReply:
    """A structured-output reply: a ``__schema__`` call whose input is ``value``."""
    data = (
        value.model_dump(mode="json") if isinstance(value, BaseModel) else dict(value)
    )
    use = ToolUse(_next_id(), SCHEMA_TOOL_NAME, data)
    return SampleReply(content=(use,), model=model, stop_reason="toolUse", usage=usage)


def accept(
    content: BaseModel | Mapping[str, Any] | None = None, /, **fields: Any
) -> ElicitReply:
    """The user submitted the form with ``content`` (a model, a dict or keywords)."""
    data = (
        content.model_dump(mode="json")
        if isinstance(content, BaseModel)
        else dict(content or {})
    )
    data.update(fields)
    return ElicitReply(action="accept", content=data)


def decline() -> ElicitReply:
    """The user explicitly said no."""
    return ElicitReply(action="decline")


def cancel() -> ElicitReply:
    """The user dismissed the form without choosing."""
    return ElicitReply(action="cancel")

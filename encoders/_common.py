"""Shared, provider-neutral steps of encoding a ``SamplingRequest``.

Owns the rules every provider encoder applies the same way: which tools go on the
wire natively, how the reserved ``__schema__`` tool's history is sent when
structured output uses the provider's native mechanism, how a tool result is
flattened to text where a provider has no richer form, and how a tool choice is
checked against the offered tools. Does not know any provider's wire spelling.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, cast

from runtime.errors import InvalidMessages, LocalProtocolError
from runtime.messages import (
    SCHEMA_TOOL_NAME,
    Audio,
    Block,
    Image,
    Message,
    NamedTool,
    Text,
    ToolChoice,
    ToolResult,
    ToolSpec,
    ToolUse,
)
from runtime.requests import SamplingRequest

__all__ = [
    "ERROR_PREFIX",
    "JSONObject",
    "before_blocks",
    "check_assistant_blocks",
    "dumps",
    "native_tools",
    "own_meta",
    "prepare_messages",
    "result_text",
    "split_results",
    "tool_choice",
]

JSONObject = dict[str, Any]

ERROR_PREFIX = "Error: "
"""Prefix marking a failed tool result on providers without an error flag."""


def dumps(value: Any) -> str:
    """Compact JSON text, as providers expect tool-call arguments."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def native_tools(request: SamplingRequest) -> tuple[ToolSpec, ...]:
    """The tools to declare natively: none when structured output is requested.

    A structured-output request (``request.schema_tool``) goes to the provider's
    native structured output instead of a forced ``__schema__`` tool.
    """
    return () if request.schema_tool is not None else request.tools


def tool_choice(request: SamplingRequest) -> ToolChoice | None:
    """The tool choice to honour for the native tools, checked for consistency.

    Raises:
        LocalProtocolError: ``required`` or a named tool without tools to call,
            or a named tool that is not offered.
    """
    if request.schema_tool is not None:
        return None
    tools = request.tools
    choice = request.tool_choice
    if not tools:
        if choice == "required" or isinstance(choice, NamedTool):
            raise LocalProtocolError(
                f"tool_choice {choice!r} needs tools, but the request offers none"
            )
        return None
    if isinstance(choice, NamedTool) and choice.name not in {t.name for t in tools}:
        raise LocalProtocolError(
            f"tool_choice names {choice.name!r}, which is not among the offered "
            f"tools {sorted(t.name for t in tools)}"
        )
    return choice


def prepare_messages(request: SamplingRequest) -> tuple[Message, ...]:
    """The conversation with ``__schema__`` calls turned into plain text.

    When ``__schema__`` is not declared as a native tool (structured output went
    through the provider's native mechanism, which answered in text), its calls
    in the history become the JSON text the model produced, and the results
    answering them become user text, so no provider sees a call to an
    undeclared tool. Block ``meta`` is kept.
    """
    if any(t.name == SCHEMA_TOOL_NAME for t in native_tools(request)):
        return request.messages
    schema_ids = {
        b.id
        for m in request.messages
        for b in m.content
        if isinstance(b, ToolUse) and b.name == SCHEMA_TOOL_NAME
    }
    if not schema_ids:
        return request.messages
    return tuple(
        Message(m.role, tuple(_schema_as_text(b, schema_ids) for b in m.content))
        for m in request.messages
    )


def _schema_as_text(block: Block, schema_ids: set[str]) -> Block:
    if isinstance(block, ToolUse) and block.id in schema_ids:
        return Text(dumps(dict(block.input)), meta=block.meta)
    if isinstance(block, ToolResult) and block.tool_use_id in schema_ids:
        return Text(result_text(block), meta=block.meta)
    return block


def result_text(result: ToolResult) -> str:
    """A tool result as one string: its texts, ``Error: `` first if it failed.

    Texts are joined with newlines; a result with no text but structured content
    is that content as JSON. Images and audio are not included.
    """
    texts = [b.text for b in result.content if isinstance(b, Text)]
    if not texts and result.structured_content is not None:
        texts = [dumps(result.structured_content)]
    text = "\n".join(texts)
    return ERROR_PREFIX + text if result.is_error else text


def split_results(
    blocks: Sequence[Block],
) -> tuple[list[ToolResult], list[Text | Image | Audio]]:
    """A user message's tool results, and its other blocks, in order."""
    results = [b for b in blocks if isinstance(b, ToolResult)]
    others = [b for b in blocks if isinstance(b, Text | Image | Audio)]
    return results, others


def check_assistant_blocks(index: int, blocks: Sequence[Block]) -> None:
    """Raise InvalidMessages unless an assistant turn holds only text and calls."""
    for block in blocks:
        if not isinstance(block, Text | ToolUse):
            raise InvalidMessages(
                f"message {index}: an assistant message may hold only Text and "
                f"ToolUse blocks for a provider, got {type(block).__name__}"
            )


def before_blocks(block: Block, meta_key: str) -> Iterator[JSONObject]:
    """Opaque provider items recorded to precede ``block`` (continuity data).

    Decoders keep provider items that have no canonical block (thinking,
    reasoning, thought parts) under ``meta[meta_key]["before"]`` of the block
    that followed them; encoders put them back in front of it.
    """
    items: Any = own_meta(block, meta_key).get("before", ())
    for item in items:
        yield dict(item)


def own_meta(block: Block, meta_key: str) -> Mapping[str, Any]:
    """The provider-owned part of ``block.meta`` (empty when there is none)."""
    value: Any = None if block.meta is None else block.meta.get(meta_key)
    return cast("Mapping[str, Any]", value) if isinstance(value, Mapping) else {}

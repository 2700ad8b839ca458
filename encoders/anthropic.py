"""``SamplingRequest`` → Anthropic Messages request body (``/v1/messages``).

Owns the Messages wire spelling of a request. Pure: returns the JSON body as a
dict; the HTTP call lives in ``bridge.providers``, responses are read by
``decoders.anthropic``.

Notes on the mapping:

* Tool results go in the next user message as ``tool_result`` blocks, first,
  with the native ``is_error`` flag; a result's images travel inside it.
* Audio is not accepted anywhere: it raises ``InvalidMessages``, as do image
  types other than jpeg, png, gif and webp. Empty text blocks are left out
  (the API rejects them).
* Structured output uses ``output_config.format`` ``json_schema``; the schema
  is sent as given, so it must stay within the subset Anthropic supports.
* A request that offers no tools but whose history holds tool calls (e.g.
  structured output after a tool-using turn) declares those tools with an open
  schema and ``tool_choice`` ``none``: the API refuses tool blocks otherwise.
* ``temperature`` is sent only to the legacy ``claude-2``/``claude-3`` families;
  current models reject sampling parameters, so it is left out for them.
* ``metadata``, ``model_preferences`` and ``include_context`` are not sent.
* Thinking, redacted-thinking and other blocks without a canonical form come
  back from ``decoders.anthropic`` in block ``meta`` under :data:`META_KEY` and
  are re-sent in place, in front of the block they preceded, signature intact.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from runtime.errors import InvalidMessages
from runtime.messages import Audio, Block, Image, NamedTool, Text, ToolResult, ToolUse
from runtime.requests import SamplingRequest

from ._common import (
    JSONObject,
    before_blocks,
    check_assistant_blocks,
    dumps,
    native_tools,
    prepare_messages,
    split_results,
    tool_choice,
)

__all__ = ["META_KEY", "accepts_temperature", "encode_request"]

META_KEY = "io.yieldmcp/anthropic"
"""Block ``meta`` key holding Anthropic continuity data (see the module doc)."""

_LEGACY_MODEL = re.compile(r"^claude-(2|3|instant)")
_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})


def encode_request(
    request: SamplingRequest, *, model: str, stream: bool = False
) -> JSONObject:
    """The Messages API JSON body for ``request``.

    Raises:
        InvalidMessages: content this API cannot carry (audio, odd image types).
        LocalProtocolError: an inconsistent tool choice.
    """
    body: JSONObject = {
        "model": model,
        "max_tokens": request.max_tokens,
        "messages": _messages(request),
    }
    if request.system_prompt is not None:
        body["system"] = request.system_prompt
    if request.temperature is not None and accepts_temperature(model):
        body["temperature"] = request.temperature
    if request.stop_sequences:
        body["stop_sequences"] = list(request.stop_sequences)
    body.update(_tools(request))
    if request.schema_tool is not None:
        schema = dict(request.schema_tool.input_schema)
        body["output_config"] = {"format": {"type": "json_schema", "schema": schema}}
    if stream:
        body["stream"] = True
    return body


def accepts_temperature(model: str) -> bool:
    """True only for the legacy model families that still honour temperature."""
    return _LEGACY_MODEL.match(model) is not None


def _messages(request: SamplingRequest) -> list[JSONObject]:
    out: list[JSONObject] = []
    for index, message in enumerate(prepare_messages(request)):
        if message.role == "assistant":
            content = _assistant(index, message.content)
        else:
            content = _user(index, message.content)
        out.append({"role": message.role, "content": content})
    return out


def _assistant(index: int, blocks: Sequence[Block]) -> list[JSONObject]:
    check_assistant_blocks(index, blocks)
    out: list[JSONObject] = []
    for block in blocks:
        out.extend(before_blocks(block, META_KEY))
        if isinstance(block, ToolUse):
            use = {"type": "tool_use", "id": block.id, "name": block.name}
            out.append({**use, "input": dict(block.input)})
        elif isinstance(block, Text) and block.text:
            out.append({"type": "text", "text": block.text})
    return out


def _user(index: int, blocks: Sequence[Block]) -> list[JSONObject]:
    results, others = split_results(blocks)
    out = [_result(index, r) for r in results]
    out += [p for b in others for p in _part(index, b)]
    return out


def _result(index: int, result: ToolResult) -> JSONObject:
    content = [p for b in result.content for p in _part(index, b)]
    if not result.content and result.structured_content is not None:
        content = [{"type": "text", "text": dumps(result.structured_content)}]
    out: JSONObject = {"type": "tool_result", "tool_use_id": result.tool_use_id}
    if content:
        out["content"] = content
    if result.is_error:
        out["is_error"] = True
    return out


def _part(index: int, block: Text | Image | Audio) -> list[JSONObject]:
    if isinstance(block, Text):
        return [{"type": "text", "text": block.text}] if block.text else []
    if isinstance(block, Audio):
        raise InvalidMessages(
            f"message {index}: Anthropic does not accept audio; transcribe it first"
        )
    if block.mime_type not in _IMAGE_TYPES:
        raise InvalidMessages(
            f"message {index}: Anthropic accepts jpeg, png, gif or webp images, "
            f"got {block.mime_type!r}"
        )
    source = {"type": "base64", "media_type": block.mime_type, "data": block.data}
    return [{"type": "image", "source": source}]


def _tools(request: SamplingRequest) -> JSONObject:
    choice = tool_choice(request)
    tools = native_tools(request)
    if not tools:
        return _history_tools(request)
    declared: list[JSONObject] = []
    for spec in tools:
        tool: JSONObject = {"name": spec.name}
        if spec.description is not None:
            tool["description"] = spec.description
        tool["input_schema"] = dict(spec.input_schema)
        declared.append(tool)
    out: JSONObject = {"tools": declared}
    if isinstance(choice, NamedTool):
        out["tool_choice"] = {"type": "tool", "name": choice.name}
    elif choice is not None:
        out["tool_choice"] = {"type": {"required": "any"}.get(choice, choice)}
    return out


PAST_TOOL: Final = "Called earlier in this conversation; not offered now."


def _history_tools(request: SamplingRequest) -> JSONObject:
    """Declarations for the tools the history used, when none are offered.

    The API refuses ``tool_use``/``tool_result`` blocks in a request that
    declares no tools (HTTP 400, anthropics/anthropic-sdk-python#494), which a
    structured-output turn after a tool-using one would otherwise be. Each past
    tool is declared with an open schema, and ``tool_choice`` ``none`` keeps
    the model from calling any of them.
    """
    names = dict.fromkeys(
        block.name
        for message in request.messages
        for block in message.content
        if isinstance(block, ToolUse)
    )
    if not names:
        return {}
    declared: list[JSONObject] = [
        {"name": name, "description": PAST_TOOL, "input_schema": {"type": "object"}}
        for name in names
    ]
    return {"tools": declared, "tool_choice": {"type": "none"}}

"""``SamplingRequest`` → OpenAI Responses API request body (``/responses``).

Owns the Responses wire spelling of a request. Pure: returns the JSON body as a
dict; the HTTP call lives in ``bridge.providers``, responses are read by
``decoders.openai_responses``.

What cannot be said natively, and what is done instead:

* **Stop sequences do not exist** in this API: a request with
  ``stop_sequences`` raises ``LocalProtocolError`` (use the Chat Completions
  provider, ``openai:``, for those) rather than silently ignoring them.
* Audio is not accepted in input messages: it raises ``InvalidMessages``.
* A failed tool result has no flag: its text is sent with an ``Error: `` prefix.
  Images a tool returned travel natively in the ``function_call_output`` list.
* Structured output uses ``text.format`` ``json_schema``; ``strict`` follows the
  schema as in ``encoders.openai`` (this API defaults ``strict`` to true, so it
  is always sent explicitly, for tools too).
* Reasoning models get no ``temperature``. ``metadata``, ``model_preferences``
  and ``include_context`` are not sent.
* Reasoning items and other output items without a canonical block come back
  from ``decoders.openai_responses`` in block ``meta`` under :data:`META_KEY`
  and are re-sent in place; a function call's item id (``fc_…``) is echoed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from runtime.errors import InvalidMessages, LocalProtocolError
from runtime.messages import Audio, Block, Image, NamedTool, Text, ToolResult, ToolUse
from runtime.requests import SamplingRequest

from ._common import (
    JSONObject,
    before_blocks,
    check_assistant_blocks,
    dumps,
    native_tools,
    own_meta,
    prepare_messages,
    result_text,
    split_results,
    tool_choice,
)
from .openai import accepts_temperature, schema_name, strict_compatible

__all__ = ["META_KEY", "encode_request"]

META_KEY = "io.yieldmcp/openai-responses"
"""Block ``meta`` key holding Responses continuity data (see the module doc)."""


def encode_request(
    request: SamplingRequest, *, model: str, stream: bool = False
) -> JSONObject:
    """The Responses API JSON body for ``request``.

    Raises:
        InvalidMessages: content this API cannot carry (audio).
        LocalProtocolError: stop sequences, or an inconsistent tool choice.
    """
    if request.stop_sequences:
        raise LocalProtocolError(
            "the OpenAI Responses API has no stop sequences; drop them or use "
            "the Chat Completions provider ('openai:')"
        )
    body: JSONObject = {"model": model, "input": _input(request)}
    if request.system_prompt is not None:
        body["instructions"] = request.system_prompt
    body["max_output_tokens"] = request.max_tokens
    if request.temperature is not None and accepts_temperature(model):
        body["temperature"] = request.temperature
    body.update(_tools(request))
    if request.schema_tool is not None:
        body["text"] = {"format": _format(request)}
    if stream:
        body["stream"] = True
    return body


def _input(request: SamplingRequest) -> list[JSONObject]:
    items: list[JSONObject] = []
    for index, message in enumerate(prepare_messages(request)):
        if message.role == "assistant":
            items.extend(_assistant(index, message.content))
        else:
            items.extend(_user(index, message.content))
    return items


def _assistant(index: int, blocks: Sequence[Block]) -> list[JSONObject]:
    check_assistant_blocks(index, blocks)
    items: list[JSONObject] = []
    for block in blocks:
        items.extend(before_blocks(block, META_KEY))
        if isinstance(block, ToolUse):
            items.append(_call(block))
        elif isinstance(block, Text) and block.text:
            items.append(
                {"type": "message", "role": "assistant", "content": block.text}
            )
    return items


def _call(use: ToolUse) -> JSONObject:
    item: JSONObject = {
        "type": "function_call",
        "call_id": use.id,
        "name": use.name,
        "arguments": dumps(dict(use.input)),
    }
    item_id = own_meta(use, META_KEY).get("id")
    if isinstance(item_id, str):
        item["id"] = item_id
    return item


def _user(index: int, blocks: Sequence[Block]) -> list[JSONObject]:
    results, others = split_results(blocks)
    items = [_output(index, r) for r in results]
    if len(others) == 1 and isinstance(others[0], Text):
        items.append({"type": "message", "role": "user", "content": others[0].text})
    elif others:
        content = [_part(index, b) for b in others]
        items.append({"type": "message", "role": "user", "content": content})
    return items


def _output(index: int, result: ToolResult) -> JSONObject:
    media = [b for b in result.content if isinstance(b, Image | Audio)]
    output: Any = result_text(result)
    if media:
        output = [{"type": "input_text", "text": output}]
        output += [_part(index, b) for b in media]
    return {
        "type": "function_call_output",
        "call_id": result.tool_use_id,
        "output": output,
    }


def _part(index: int, block: Text | Image | Audio) -> JSONObject:
    if isinstance(block, Text):
        return {"type": "input_text", "text": block.text}
    if isinstance(block, Image):
        url = f"data:{block.mime_type};base64,{block.data}"
        return {"type": "input_image", "image_url": url, "detail": "auto"}
    raise InvalidMessages(
        f"message {index}: the OpenAI Responses API does not accept audio input; "
        f"use the Chat Completions provider ('openai:') or transcribe it"
    )


def _tools(request: SamplingRequest) -> JSONObject:
    choice = tool_choice(request)
    tools = native_tools(request)
    if not tools:
        return {}
    out: JSONObject = {
        "tools": [_tool(t.name, t.description, t.input_schema) for t in tools]
    }
    if isinstance(choice, NamedTool):
        out["tool_choice"] = {"type": "function", "name": choice.name}
    elif choice is not None:
        out["tool_choice"] = choice
    return out


def _tool(name: str, description: str | None, schema: Any) -> JSONObject:
    tool: JSONObject = {"type": "function", "name": name}
    if description is not None:
        tool["description"] = description
    tool["parameters"] = dict(schema)
    tool["strict"] = strict_compatible(schema)
    return tool


def _format(request: SamplingRequest) -> JSONObject:
    spec = request.schema_tool
    assert spec is not None
    out: JSONObject = {
        "type": "json_schema",
        "name": schema_name(spec.input_schema),
        "schema": dict(spec.input_schema),
        "strict": strict_compatible(spec.input_schema),
    }
    if spec.description is not None:
        out["description"] = spec.description
    return out

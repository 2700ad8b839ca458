"""``SamplingRequest`` → OpenAI Chat Completions request body (``/chat/completions``).

Owns the Chat Completions wire spelling of a request, also used for
OpenAI-compatible servers. Pure: returns the JSON body as a dict; the HTTP call,
headers and URL live in ``bridge.providers``. Responses are read by
``decoders.openai``.

What cannot be said natively, and what is sent instead:

* A failed tool result has no flag: its text is sent with an ``Error: `` prefix.
* Tool messages carry text only: images and audio returned by a tool are sent in
  a user message right after the tool messages, introduced by a text part.
* Audio is sent as ``input_audio`` and only as wav or mp3; any other audio type
  raises ``InvalidMessages``. Assistant messages may hold only text and calls.
* Structured output (``request.schema_tool``) uses ``response_format``
  ``json_schema``. ``strict`` (here and on tools) is sent only when the schema
  meets strict mode's rules (every property required, ``additionalProperties:
  false`` on every object); otherwise the schema is sent non-strict, as a hint.
* Reasoning models (``o1``/``o3``/``o4``…, ``gpt-5``…) reject ``temperature``: it
  is left out for them, and the system prompt uses the ``developer`` role.
* ``metadata``, ``model_preferences`` and ``include_context`` are not sent.
* OpenAI-compatible servers that read only ``max_tokens`` (e.g. Ollama's
  ``/v1``) are served with ``max_tokens_key="max_tokens"``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from runtime.errors import InvalidMessages
from runtime.messages import Audio, Block, Image, NamedTool, Text, ToolResult, ToolUse
from runtime.requests import SamplingRequest

from ._common import (
    JSONObject,
    check_assistant_blocks,
    dumps,
    native_tools,
    prepare_messages,
    result_text,
    split_results,
    tool_choice,
)

__all__ = [
    "accepts_temperature",
    "audio_format",
    "encode_request",
    "schema_name",
    "strict_compatible",
]

_REASONING_MODEL = re.compile(r"^(o\d|gpt-5)")
_SCHEMA_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_AUDIO_FORMATS = {
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/wave": "wav",
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
}


def encode_request(
    request: SamplingRequest,
    *,
    model: str,
    stream: bool = False,
    max_tokens_key: Literal["max_completion_tokens", "max_tokens"] = (
        "max_completion_tokens"
    ),
) -> JSONObject:
    """The Chat Completions JSON body for ``request``.

    Args:
        request: the canonical request.
        model: the model name to put in the body.
        stream: ask for an SSE stream (with usage in the final chunk).
        max_tokens_key: the field carrying ``max_tokens``.

    Raises:
        InvalidMessages: content this API cannot carry (see the module doc).
        LocalProtocolError: an inconsistent tool choice.
    """
    body: JSONObject = {
        "model": model,
        "messages": _messages(request, model),
        max_tokens_key: request.max_tokens,
    }
    if request.temperature is not None and accepts_temperature(model):
        body["temperature"] = request.temperature
    if request.stop_sequences:
        body["stop"] = list(request.stop_sequences)
    body.update(_tools(request))
    if request.schema_tool is not None:
        body["response_format"] = _response_format(request)
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return body


def accepts_temperature(model: str) -> bool:
    """False for reasoning models, which reject ``temperature``."""
    return _REASONING_MODEL.match(model) is None


def strict_compatible(schema: Any) -> bool:
    """Whether ``schema`` meets OpenAI strict mode's rules, recursively.

    Every object must list all its properties in ``required`` and set
    ``additionalProperties`` to false.
    """
    if isinstance(schema, list):
        items: list[Any] = schema  # pyright: ignore[reportUnknownVariableType]
        return all(strict_compatible(s) for s in items)
    if not isinstance(schema, Mapping):
        return True
    node: Mapping[str, Any] = schema  # pyright: ignore[reportUnknownVariableType]
    if node.get("type") == "object" or "properties" in node:
        props: Mapping[str, Any] = node.get("properties", {})
        if node.get("additionalProperties") is not False:
            return False
        if sorted(node.get("required", ())) != sorted(props):
            return False
    return all(
        strict_compatible(value)
        for key, value in node.items()
        if key not in ("enum", "const", "default", "examples")
    )


def schema_name(schema: Mapping[str, Any]) -> str:
    """A name for a response schema: its ``title`` when valid, else ``response``."""
    title = schema.get("title")
    if isinstance(title, str) and _SCHEMA_NAME.match(title):
        return title
    return "response"


def audio_format(index: int, audio: Audio) -> str:
    """OpenAI's audio ``format`` for ``audio`` (wav or mp3), or InvalidMessages."""
    fmt = _AUDIO_FORMATS.get(audio.mime_type)
    if fmt is None:
        raise InvalidMessages(
            f"message {index}: OpenAI accepts wav or mp3 audio only, got "
            f"{audio.mime_type!r}; convert it first"
        )
    return fmt


# --- messages ---------------------------------------------------------------------


def _messages(request: SamplingRequest, model: str) -> list[JSONObject]:
    out: list[JSONObject] = []
    if request.system_prompt is not None:
        role = "system" if accepts_temperature(model) else "developer"
        out.append({"role": role, "content": request.system_prompt})
    for index, message in enumerate(prepare_messages(request)):
        if message.role == "assistant":
            out.append(_assistant(index, message.content))
        else:
            out.extend(_user(index, message.content))
    return out


def _assistant(index: int, blocks: Sequence[Block]) -> JSONObject:
    check_assistant_blocks(index, blocks)
    text = "".join(b.text for b in blocks if isinstance(b, Text))
    calls = [_call(b) for b in blocks if isinstance(b, ToolUse)]
    out: JSONObject = {"role": "assistant", "content": text or (None if calls else "")}
    if calls:
        out["tool_calls"] = calls
    return out


def _call(use: ToolUse) -> JSONObject:
    return {
        "id": use.id,
        "type": "function",
        "function": {"name": use.name, "arguments": dumps(dict(use.input))},
    }


def _user(index: int, blocks: Sequence[Block]) -> list[JSONObject]:
    results, others = split_results(blocks)
    out: list[JSONObject] = [
        {"role": "tool", "tool_call_id": r.tool_use_id, "content": result_text(r)}
        for r in results
    ]
    parts = [p for r in results for p in _result_media(index, r)]
    parts += [_part(index, b) for b in others]
    if len(parts) == 1 and parts[0]["type"] == "text":
        out.append({"role": "user", "content": parts[0]["text"]})
    elif parts:
        out.append({"role": "user", "content": parts})
    return out


def _result_media(index: int, result: ToolResult) -> list[JSONObject]:
    media = [b for b in result.content if isinstance(b, Image | Audio)]
    if not media:
        return []
    intro = {
        "type": "text",
        "text": f"Attachments of tool result {result.tool_use_id}:",
    }
    return [intro, *(_part(index, b) for b in media)]


def _part(index: int, block: Text | Image | Audio) -> JSONObject:
    if isinstance(block, Text):
        return {"type": "text", "text": block.text}
    if isinstance(block, Image):
        url = f"data:{block.mime_type};base64,{block.data}"
        return {"type": "image_url", "image_url": {"url": url}}
    fmt = audio_format(index, block)
    return {"type": "input_audio", "input_audio": {"data": block.data, "format": fmt}}


# --- tools and structured output ----------------------------------------------------


def _tools(request: SamplingRequest) -> JSONObject:
    choice = tool_choice(request)
    tools = native_tools(request)
    if not tools:
        return {}
    out: JSONObject = {
        "tools": [_tool(t.name, t.description, t.input_schema) for t in tools]
    }
    if isinstance(choice, NamedTool):
        out["tool_choice"] = {"type": "function", "function": {"name": choice.name}}
    elif choice is not None:
        out["tool_choice"] = choice
    return out


def _tool(name: str, description: str | None, schema: Mapping[str, Any]) -> JSONObject:
    function: JSONObject = {"name": name}
    if description is not None:
        function["description"] = description
    function["parameters"] = dict(schema)
    if strict_compatible(schema):
        function["strict"] = True
    return {"type": "function", "function": function}


def _response_format(request: SamplingRequest) -> JSONObject:
    spec = request.schema_tool
    assert spec is not None
    json_schema: JSONObject = {
        "name": schema_name(spec.input_schema),
        "schema": dict(spec.input_schema),
    }
    if spec.description is not None:
        json_schema["description"] = spec.description
    if strict_compatible(spec.input_schema):
        json_schema["strict"] = True
    return {"type": "json_schema", "json_schema": json_schema}

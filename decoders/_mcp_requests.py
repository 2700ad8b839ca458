"""Reading a server's requests, host side: ``sampling/createMessage`` and
``elicitation/create`` params.

Owns :func:`sampling_request` (the conversation checked against MCP's tool-use
rules, :func:`runtime.messages.validate_messages`) and
:func:`elicitation_request` (``mode`` defaults to ``"form"``; a form's
``requestedSchema`` must be a flat object of primitive fields and a valid JSON
Schema, checked once per distinct schema; the tool's key and context recovered
from ``_meta``). What these requests lose on the way in is listed in
:mod:`decoders.mcp`.

It does not answer the requests (a model, a user or a handler does) and reads
no answer (``_mcp_answers``); the params' other ``_meta`` (a progress token) is
left to the caller.
"""

from __future__ import annotations

import functools
import json
import math
from typing import Any, cast

from pydantic import ValidationError

from runtime.codec import CONTEXT_META_KEY, ELICIT_KEY_META_KEY, message_from_json
from runtime.errors import InvalidEffect, InvalidMessages, RemoteProtocolError
from runtime.lowlevel import (
    check_form_properties,
    plain_form_properties,
    plain_requested_schema,
)
from runtime.messages import ModelPreferences, ToolChoice, ToolSpec, validate_messages
from runtime.requests import ElicitationRequest, SamplingRequest

from ._mcp_wire import (
    JSONObject,
    both_eras,
    check_blocks,
    content_list,
    json_object,
    plain_text_block,
    short,
    validate,
)

__all__ = ["elicitation_request", "sampling_request"]


def sampling_request(params: object) -> SamplingRequest:
    """The request in a server's ``sampling/createMessage`` params.

    The params' ``_meta`` (e.g. a progress token) is left to the caller.

    Raises:
        RemoteProtocolError: ``params`` are not valid, or the conversation breaks
            MCP's tool-use rules.
    """
    data = json_object(params, "sampling/createMessage params")
    if not plain_sampling_request(data):
        validate("CreateMessageRequestParams", data, "sampling/createMessage params")
    for message in data["messages"]:
        check_blocks(content_list(message["content"]))
    messages = tuple(message_from_json(m) for m in data["messages"])
    try:
        validate_messages(messages)
        tools = tuple(_tool_spec(t) for t in data.get("tools") or ())
    except (InvalidMessages, InvalidEffect) as exc:
        raise RemoteProtocolError(f"invalid sampling request: {exc}") from None
    return SamplingRequest(
        messages=messages,
        system_prompt=data.get("systemPrompt"),
        max_tokens=data["maxTokens"],
        temperature=data.get("temperature"),
        stop_sequences=tuple(data.get("stopSequences") or ()),
        model_preferences=_preferences(data.get("modelPreferences")),
        include_context=data.get("includeContext"),
        tools=tools,
        tool_choice=_choice(data.get("toolChoice")),
        metadata=data.get("metadata"),
    )


def plain_sampling_request(data: JSONObject) -> bool:
    """``sampling/createMessage`` params valid in both eras by construction: a
    conversation of plain text, a token budget, maybe a system prompt and a
    temperature. Recognised without building either era's models (a fifth of
    a process's start-up); anything else is validated by them."""
    temperature = data.get("temperature", 0.0)
    return (
        data.keys() <= _PLAIN_SAMPLING_KEYS
        and type(data.get("maxTokens")) is int
        and type(data.get("systemPrompt", "")) is str
        and type(temperature) is float
        and math.isfinite(temperature)
        and type(data.get("_meta", {})) is dict
        and type(data.get("messages")) is list
        and all(_plain_message(m) for m in data["messages"])
    )


_PLAIN_SAMPLING_KEYS = frozenset(
    {"messages", "maxTokens", "systemPrompt", "temperature", "_meta"}
)


def _plain_message(message: Any) -> bool:
    if type(message) is not dict or message.keys() != {"role", "content"}:
        return False
    content: Any = cast(JSONObject, message)["content"]
    blocks = cast(list[Any], content) if type(content) is list else [content]
    return message["role"] in ("user", "assistant") and all(
        plain_text_block(block) for block in blocks
    )


def _tool_spec(tool: JSONObject) -> ToolSpec:
    return ToolSpec(
        name=tool["name"],
        description=tool.get("description"),
        input_schema=tool["inputSchema"],
    )


def _choice(choice: JSONObject | None) -> ToolChoice | None:
    return None if choice is None else choice.get("mode")


def _preferences(prefs: JSONObject | None) -> ModelPreferences | None:
    if prefs is None:
        return None
    hints: list[JSONObject] = prefs.get("hints") or []
    return ModelPreferences(
        hints=tuple(h["name"] for h in hints if h.get("name") is not None),
        cost_priority=prefs.get("costPriority"),
        speed_priority=prefs.get("speedPriority"),
        intelligence_priority=prefs.get("intelligencePriority"),
    )


def elicitation_request(params: object) -> ElicitationRequest:
    """The request in a server's ``elicitation/create`` params.

    ``mode`` defaults to ``"form"``. The tool's key and context are recovered
    from ``_meta["io.yieldmcp/key"]`` and ``_meta["x-model-context"]``.

    Raises:
        RemoteProtocolError: ``params`` are not valid (including a form schema
            that is not a flat object of primitive fields).
    """
    data = json_object(params, "elicitation/create params")
    mode = data.get("mode", "form")
    key, context = _yieldmcp_meta(data.get("_meta"))
    if mode == "url":
        validate("ElicitRequestURLParams", data, "elicitation/create params")
        return ElicitationRequest(
            message=data["message"],
            mode="url",
            url=data["url"],
            elicitation_id=_optional_str(data, "elicitationId"),
            key=key,
            context=context,
        )
    if mode != "form":
        raise RemoteProtocolError(f"unknown elicitation mode {mode!r}")
    if not plain_form_request(data):  # else valid, its schema too, as built
        validate("ElicitRequestFormParams", data, "elicitation/create params")
        _check_form_schema(data["requestedSchema"])
    schema: JSONObject = data["requestedSchema"]
    return ElicitationRequest(
        message=data["message"], requested_schema=schema, key=key, context=context
    )


def plain_form_request(data: JSONObject) -> bool:
    """Form ``elicitation/create`` params valid in both eras by construction
    (:func:`~runtime.lowlevel.plain_requested_schema`): recognised without
    building either era's models, a fifth of a process's start-up."""
    return (
        data.keys() <= {"mode", "message", "requestedSchema", "_meta"}
        and data.get("mode") == "form"
        and type(data.get("message")) is str
        and type(data.get("_meta", {})) is dict
        and plain_requested_schema(data.get("requestedSchema"))
    )


def _yieldmcp_meta(meta: Any) -> tuple[str | None, JSONObject]:
    if meta is None:
        return None, {}
    if not isinstance(meta, dict):
        raise RemoteProtocolError("elicitation/create params: _meta must be an object")
    values = cast(JSONObject, meta)
    key = _optional_str(values, ELICIT_KEY_META_KEY)
    context = values.get(CONTEXT_META_KEY, {})
    if not isinstance(context, dict):
        raise RemoteProtocolError(
            f"_meta[{CONTEXT_META_KEY!r}] must be an object, got "
            f"{type(context).__name__}"
        )
    return key, cast(JSONObject, context)


def _optional_str(data: JSONObject, name: str) -> str | None:
    value = data.get(name)
    if value is not None and not isinstance(value, str):
        raise RemoteProtocolError(
            f"{name} must be a string, got {type(value).__name__}"
        )
    return value


def _primitive_in_some_era(properties: object) -> bool:
    for wire in both_eras():
        try:
            check_form_properties(wire, properties)
        except ValidationError:
            continue
        return True
    return False


def _check_form_schema(schema: JSONObject) -> None:
    if plain_requested_schema(schema):
        return  # primitive fields, and a valid JSON Schema, by construction
    properties = schema.get("properties", {})
    if not (plain_form_properties(properties) or _primitive_in_some_era(properties)):
        raise RemoteProtocolError(
            "requestedSchema must be a flat object of primitive fields (string, "
            "number, integer, boolean, enum)"
        )
    problem = _schema_problem(json.dumps(schema, sort_keys=True))
    if problem is not None:
        raise RemoteProtocolError(
            f"requestedSchema is not a valid JSON Schema: {problem}"
        )


@functools.lru_cache(maxsize=256)
def _schema_problem(schema_json: str) -> str | None:
    """Why the schema ``schema_json`` is not a valid JSON Schema, or None.

    Checked once per distinct schema: a server sends the same forms again and
    again (every round of a 2026-07-28 call), and checking against the
    metaschema costs far more than anything else in answering one.
    """
    import jsonschema  # see runtime.lowlevel.offline_validator

    try:
        jsonschema.Draft202012Validator.check_schema(json.loads(schema_json))
    except jsonschema.SchemaError as exc:
        return short(exc.message)
    return None

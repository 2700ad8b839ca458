"""MCP encoding of a server's requests: ``sampling/createMessage`` and
``elicitation/create`` params, per era.

Owns :func:`sampling_params` and :func:`elicitation_params`. Decisions a reader
should know:

* MCP's ``toolChoice`` has only ``auto``, ``required`` and ``none``. A
  ``NamedTool(name)`` choice is encoded faithfully as *offering only that tool*
  with mode ``required``; a decoder sees ``required`` and a single tool.
* The tool's elicitation key and its extra context travel in the params'
  ``_meta`` as ``io.yieldmcp/key`` and ``x-model-context``. Both eras' schemas
  accept extra ``_meta`` keys (2026-07-28 declares no ``_meta`` on elicitation
  params but does not forbid additional properties), and both names are valid
  ``_meta`` key names.
* Only 2025-11-25 URL elicitations carry ``elicitationId``.

Every payload passes :func:`~encoders._mcp_wire.checked` before it is returned.
It does not encode the answers to these requests (``_mcp_answers``), wrap them
for 2026-07-28 ``inputRequests`` (the bridge does) or send them.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import ValidationError

from runtime.codec import CONTEXT_META_KEY, ELICIT_KEY_META_KEY, message_to_json
from runtime.errors import LocalProtocolError, summarize_validation_error
from runtime.lowlevel import check_form_properties, plain_requested_schema
from runtime.messages import (
    Message,
    ModelPreferences,
    NamedTool,
    Text,
    ToolChoice,
    ToolSpec,
    boolean_property,
)
from runtime.requests import ElicitationRequest, SamplingRequest

from ._mcp_wire import Era, JSONObject, checked, era_models, plain_text, put, utf8

__all__ = ["elicitation_params", "sampling_params"]


# --- sampling (server side) -----------------------------------------------------------


def sampling_params(
    request: SamplingRequest, *, era: Era, meta: Mapping[str, Any] | None = None
) -> JSONObject:
    """The ``sampling/createMessage`` params for ``request``.

    A message with one block sends it as a single object, otherwise as a list.
    Empty optional fields are omitted. ``NamedTool(name)`` is sent as offering
    only that tool with ``toolChoice: {"mode": "required"}``.

    Args:
        request: what to ask the client's model.
        era: the negotiated protocol era.
        meta: the params' ``_meta`` (e.g. a ``progressToken``), sent as given.

    Raises:
        LocalProtocolError: the request cannot be sent as valid MCP in ``era``
            (e.g. a non-object tool-result ``structuredContent`` in 2025-11-25).
    """
    tools, choice = _tools_and_choice(request)
    out: JSONObject = {
        "messages": [_message(m) for m in request.messages],
        "maxTokens": request.max_tokens,
    }
    put(out, "systemPrompt", request.system_prompt)
    if request.temperature is not None:
        out["temperature"] = _finite(request.temperature, "temperature")
    if request.stop_sequences:
        out["stopSequences"] = list(request.stop_sequences)
    if request.model_preferences is not None:
        out["modelPreferences"] = _preferences(request.model_preferences)
    put(out, "includeContext", request.include_context)
    if request.metadata is not None:
        out["metadata"] = dict(request.metadata)
    if tools:
        out["tools"] = [_sampling_tool(t, era) for t in tools]
    if choice is not None:
        out["toolChoice"] = {"mode": choice}
    if meta is not None:
        out["_meta"] = dict(meta)
    trusted = ["maxTokens"] if type(request.max_tokens) is int else []
    if _plain_messages(request.messages):
        trusted.append("messages")
    for number, message in enumerate(request.messages, 1):
        for block in message.content:
            if isinstance(block, Text):
                utf8(block.text, f"the sampling request's message {number}")
    if type(request.system_prompt) is str:
        trusted.append("systemPrompt")
        utf8(request.system_prompt, "the sampling request's system prompt")
    return checked(
        era,
        "CreateMessageRequestParams",
        out,
        "sampling/createMessage params",
        trusted=trusted,
    )


def _plain_messages(messages: Sequence[Message]) -> bool:
    # Message checks its role; plain text blocks need no further check.
    return all(plain_text(m.content) for m in messages)


def _message(message: Message) -> JSONObject:
    out = message_to_json(message)
    if len(out["content"]) == 1:
        out["content"] = out["content"][0]
    return out


def _tools_and_choice(
    request: SamplingRequest,
) -> tuple[Sequence[ToolSpec], Literal["auto", "required", "none"] | None]:
    choice: ToolChoice | None = request.tool_choice
    if not isinstance(choice, NamedTool):
        return request.tools, choice
    named = [t for t in request.tools if t.name == choice.name]
    if not named:
        raise LocalProtocolError(
            f"tool_choice names {choice.name!r}, which is not among the offered "
            f"tools {[t.name for t in request.tools]}"
        )
    # MCP cannot name a tool: offering only that one and requiring a call is the
    # faithful equivalent.
    return named, "required"


def _sampling_tool(spec: ToolSpec, era: Era) -> JSONObject:
    problem = boolean_property(spec.input_schema) if era == "2025-11-25" else None
    if problem is not None:  # its models accept it; its schema.json does not
        raise LocalProtocolError(
            f"tool {spec.name!r} cannot be offered to a 2025-11-25 client: {problem}"
        )
    out: JSONObject = {"name": spec.name}
    put(out, "description", spec.description)
    out["inputSchema"] = copy.deepcopy(dict(spec.input_schema))
    return out


def _preferences(prefs: ModelPreferences) -> JSONObject:
    out: JSONObject = {}
    if prefs.hints:
        out["hints"] = [{"name": h} for h in prefs.hints]
    put(out, "costPriority", prefs.cost_priority)
    put(out, "speedPriority", prefs.speed_priority)
    put(out, "intelligencePriority", prefs.intelligence_priority)
    return out


# --- elicitation ----------------------------------------------------------------------


def elicitation_params(
    request: ElicitationRequest, *, era: Era, meta: Mapping[str, Any] | None = None
) -> JSONObject:
    """The ``elicitation/create`` params for ``request``.

    Form mode sends ``mode``, ``message`` and ``requestedSchema``; URL mode sends
    ``mode``, ``message``, ``url`` and, in 2025-11-25 only, ``elicitationId``.
    ``request.key`` and a non-empty ``request.context`` are added to ``meta`` as
    ``_meta["io.yieldmcp/key"]`` and ``_meta["x-model-context"]``.

    Raises:
        LocalProtocolError: the request cannot be sent as valid MCP in ``era``
            (a URL elicitation without ``url``, or without ``elicitation_id`` in
            2025-11-25; a form schema that is not flat and primitive).
    """
    if request.mode == "form":
        out: JSONObject = {
            "mode": "form",
            "message": request.message,
            "requestedSchema": copy.deepcopy(dict(request.requested_schema)),
        }
        model = "ElicitRequestFormParams"
        plain = _check_form_schema(era, out["requestedSchema"])
    else:
        out = _url_params(request, era)
        model = "ElicitRequestURLParams"
        plain = False
    merged = dict(meta or {})
    if request.key is not None:
        merged[ELICIT_KEY_META_KEY] = request.key
    if request.context:
        merged[CONTEXT_META_KEY] = dict(request.context)
    if meta is not None or merged:
        out["_meta"] = merged
    trusted = ["mode"]
    if plain:
        trusted.append("requestedSchema")
    if meta is None and type(request.key) in (str, type(None)):
        # Only ours: the form's key, and context the effect checked is JSON.
        trusted.append("_meta")
    if type(request.message) is str:
        trusted.append("message")
        utf8(request.message, "the elicitation's message")
    return checked(
        era,
        model,
        out,
        f"elicitation/create params ({request.mode} mode)",
        trusted=trusted,
    )


def _url_params(request: ElicitationRequest, era: Era) -> JSONObject:
    if request.url is None:
        raise LocalProtocolError("a URL elicitation needs a url")
    out: JSONObject = {"mode": "url", "message": request.message, "url": request.url}
    if era == "2025-11-25":
        if request.elicitation_id is None:
            raise LocalProtocolError(
                "a 2025-11-25 URL elicitation needs an elicitation_id (the client "
                "uses it to match notifications/elicitation/complete)"
            )
        out["elicitationId"] = request.elicitation_id
    return out


def _check_form_schema(era: Era, schema: JSONObject) -> bool:
    """Refuse a form that is not flat and primitive; ``True`` when the whole
    ``requestedSchema`` is also valid MCP by construction (no model built)."""
    if plain_requested_schema(schema):
        return True
    properties = schema.get("properties", {})
    try:
        check_form_properties(era_models(era), properties)
    except ValidationError as exc:
        raise LocalProtocolError(
            "requestedSchema is not a flat form of primitive fields: "
            + summarize_validation_error(exc)
        ) from None
    for name, field in properties.items():
        # The models read null as "absent"; schema.json has no null for any
        # of a field's keys, so a client checking against it would refuse.
        null = next((key for key, value in field.items() if value is None), None)
        if null is not None:
            raise LocalProtocolError(
                f"requestedSchema field {name!r}: {null!r} is null; leave it out"
            )
    return False


def _finite(value: float, name: str) -> float:
    if not math.isfinite(value):
        raise LocalProtocolError(f"{name} must be a finite number, got {value!r}")
    return value

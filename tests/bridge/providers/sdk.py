"""Validation of recorded provider JSON against the official SDKs' own types.

Responses and stream events are validated with the SDKs' pydantic models, and
then walked key by key against the validated model, because several SDK models
accept (or silently drop) unknown keys: a typo in a recording must fail.
Requests are checked with a strict walker over the SDKs' request ``TypedDict``
types (required keys, unknown keys, literals, unions, recursion).

Ollama has no typed SDK for the server's full shape (the ``ollama`` package's
models drop ``tool_calls[].id``, ``function.index`` and ``tool_call_id``), so
those server-only fields are allow-listed here, from the server's Go types.
"""

from __future__ import annotations

import collections.abc
import json
import re
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NotRequired, Required

import anthropic.types
import ollama
import ollama._types as ollama_types
import openai.types.chat
import openai.types.responses
from anthropic.types import message_create_params
from google.genai import types as genai
from openai.types.chat import completion_create_params
from openai.types.responses import response_create_params
from pydantic import BaseModel, TypeAdapter
from typing_extensions import ReadOnly, is_typeddict

PROVIDERS = ("openai", "openai_responses", "anthropic", "ollama", "gemini")

# --- strict TypedDict walker (requests) ------------------------------------------

_SEQUENCES = {
    list,
    collections.abc.Iterable,
    collections.abc.Sequence,
    typing.Iterable,
    typing.Sequence,
    typing.List,  # noqa: UP006
}
_MAPPINGS = {dict, collections.abc.Mapping, typing.Dict, typing.Mapping}  # noqa: UP006


def typed_errors(value: Any, tp: Any, path: str = "$") -> list[str]:
    """Where ``value`` breaks the TypedDict-based type ``tp`` (empty: it fits)."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any or tp is object:
        return []
    if origin in (typing.Annotated, Required, NotRequired, ReadOnly):
        return typed_errors(value, args[0], path)
    if origin in (typing.Union, types.UnionType):
        return _union_errors(value, args, path)
    if origin is typing.Literal:
        ok = any(value == a and type(value) is type(a) for a in args)
        return [] if ok else [f"{path}: {value!r} not in {args}"]
    if tp is type(None):
        return [] if value is None else [f"{path}: expected null"]
    if is_typeddict(tp):
        return _typeddict_errors(value, tp, path)
    if origin in _SEQUENCES:
        if not isinstance(value, list):
            return [f"{path}: expected a list"]
        return [
            e
            for i, v in enumerate(value)
            for e in typed_errors(v, args[0], f"{path}[{i}]")
        ]
    if origin in _MAPPINGS or tp in _MAPPINGS:
        if not isinstance(value, dict):
            return [f"{path}: expected an object"]
        inner = args[1] if args else Any
        return [
            e for k, v in value.items() for e in typed_errors(v, inner, f"{path}.{k}")
        ]
    return _scalar_errors(value, tp, path)


def _scalar_errors(value: Any, tp: Any, path: str) -> list[str]:
    if tp is bool:
        ok = isinstance(value, bool)
    elif tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif tp is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    elif isinstance(tp, type):
        ok = isinstance(value, tp)
    else:
        ok = True  # TypeVars and exotic forms: not used by the shapes we emit
    return [] if ok else [f"{path}: {value!r} is not {tp}"]


def _union_errors(value: Any, members: Iterable[Any], path: str) -> list[str]:
    attempts = [typed_errors(value, m, path) for m in members]
    if any(not a for a in attempts):
        return []
    return min(attempts, key=len)


def _typeddict_errors(value: Any, tp: Any, path: str) -> list[str]:
    if not isinstance(value, dict):
        return [f"{path}: expected an object for {tp.__name__}"]
    hints = typing.get_type_hints(tp, include_extras=True)
    wire = {_alias(name, hint): name for name, hint in hints.items()}
    errors = [
        f"{path}: missing required key {name!r} of {tp.__name__}"
        for name in tp.__required_keys__
        if _alias(name, hints[name]) not in value
    ]
    for key, item in value.items():
        if key not in wire:
            errors.append(f"{path}.{key}: unknown key for {tp.__name__}")
        else:
            errors += typed_errors(item, hints[wire[key]], f"{path}.{key}")
    return errors


def _alias(name: str, hint: Any) -> str:
    for meta in getattr(hint, "__metadata__", ()):
        alias = getattr(meta, "alias", None)
        if isinstance(alias, str):
            return alias
    return name


# --- pydantic key walker (responses, events) --------------------------------------


def unknown_keys(data: Any, instance: Any, path: str = "$") -> list[str]:
    """Keys of ``data`` that the validated model ``instance`` has no field for."""
    if isinstance(instance, BaseModel) and isinstance(data, dict):
        fields = type(instance).model_fields
        wire = {name: name for name in fields}
        wire.update({f.alias: name for name, f in fields.items() if f.alias})
        found: list[str] = []
        for key, item in data.items():
            if key not in wire:
                found.append(f"{path}.{key}")
            else:
                found += unknown_keys(
                    item, getattr(instance, wire[key]), f"{path}.{key}"
                )
        return found
    if isinstance(instance, list | tuple) and isinstance(data, list):
        return [
            e
            for i, (d, v) in enumerate(zip(data, instance, strict=False))
            for e in unknown_keys(d, v, f"{path}[{i}]")
        ]
    if isinstance(instance, dict) and isinstance(data, dict):
        return [
            e
            for k, d in data.items()
            if k in instance
            for e in unknown_keys(d, instance[k], f"{path}.{k}")
        ]
    return []


def _generic(path: str) -> str:
    return re.sub(r"\[\d+\]", "[]", path)


def check_model(
    data: Any, validate: Callable[[Any], Any], allow: Iterable[str] = ()
) -> Any:
    """Validate ``data`` and fail on any key the model does not know."""
    instance = validate(data)
    extra = [p for p in unknown_keys(data, instance) if _generic(p) not in set(allow)]
    assert extra == [], f"keys unknown to the SDK model: {extra}"
    return instance


def _json_validate(model: type[BaseModel]) -> Callable[[Any], Any]:
    return lambda data: model.model_validate_json(json.dumps(data))


# --- per provider ------------------------------------------------------------------

_OLLAMA_SERVER_ONLY = (
    "$.message.tool_calls[].id",
    "$.message.tool_calls[].function.index",
)


def validate_response(provider: str, body: Mapping[str, Any]) -> None:
    """``body`` is a whole (non-streamed) response of ``provider``."""
    if provider == "openai":
        check_model(body, openai.types.chat.ChatCompletion.model_validate)
    elif provider == "openai_responses":
        check_model(body, openai.types.responses.Response.model_validate)
    elif provider == "anthropic":
        check_model(body, anthropic.types.Message.model_validate)
    elif provider == "ollama":
        check_model(body, ollama.ChatResponse.model_validate, _OLLAMA_SERVER_ONLY)
    else:
        check_model(body, _json_validate(genai.GenerateContentResponse))


_RESPONSES_EVENT: Any = TypeAdapter(openai.types.responses.ResponseStreamEvent)
_ANTHROPIC_EVENT: Any = TypeAdapter(anthropic.types.RawMessageStreamEvent)


def validate_event(provider: str, event: Mapping[str, Any]) -> None:
    """``event`` is one parsed stream event (SSE data or NDJSON line)."""
    if provider == "openai":
        check_model(event, openai.types.chat.ChatCompletionChunk.model_validate)
    elif provider == "openai_responses":
        check_model(event, _RESPONSES_EVENT.validate_python)
    elif provider == "anthropic":
        if event.get("type") == "ping":
            assert dict(event) == {"type": "ping"}
        elif event.get("type") == "error":
            check_model(event, anthropic.types.ErrorResponse.model_validate)
        else:
            check_model(event, _ANTHROPIC_EVENT.validate_python)
    elif provider == "ollama" and "error" in event:
        # The server's mid-stream error line (routes.go); no SDK type exists.
        assert set(event) == {"error"}
        assert isinstance(event["error"], str)
    elif provider == "ollama":
        check_model(event, ollama.ChatResponse.model_validate, _OLLAMA_SERVER_ONLY)
    else:
        check_model(event, _json_validate(genai.GenerateContentResponse))


def request_errors(provider: str, body: Mapping[str, Any]) -> list[str]:
    """Where ``body`` breaks ``provider``'s request types (empty: it fits)."""
    stream = bool(body.get("stream"))
    if provider == "openai":
        params = completion_create_params
        tp = (
            params.CompletionCreateParamsStreaming
            if stream
            else params.CompletionCreateParamsNonStreaming
        )
        return typed_errors(dict(body), tp)
    if provider == "openai_responses":
        params = response_create_params
        tp = (
            params.ResponseCreateParamsStreaming
            if stream
            else params.ResponseCreateParamsNonStreaming
        )
        return typed_errors(dict(body), tp)
    if provider == "anthropic":
        params = message_create_params
        tp = (
            params.MessageCreateParamsStreaming
            if stream
            else params.MessageCreateParamsNonStreaming
        )
        return typed_errors(dict(body), tp)
    if provider == "ollama":
        return _ollama_request_errors(body)
    return _gemini_request_errors(body)


_OLLAMA_MESSAGE_SERVER_ONLY = (
    "$.tool_call_id",
    "$.tool_calls[].id",
    "$.tool_calls[].function.index",
)


def _ollama_request_errors(body: Mapping[str, Any]) -> list[str]:
    errors = [
        f"$.{k}: unknown key"
        for k in body
        if k not in ollama_types.ChatRequest.model_fields
    ]
    for message in body.get("messages", ()):
        # The SDK wraps each base64 image in an Image model; the wire has strings.
        images = [{"value": image} for image in message.get("images", ())]
        message = {**message, **({"images": images} if images else {})}
        check_model(message, ollama.Message.model_validate, _OLLAMA_MESSAGE_SERVER_ONLY)
    for tool in body.get("tools", ()):
        # Parameters are the caller's JSON Schema, passed through as given.
        function = {k: v for k, v in tool["function"].items() if k != "parameters"}
        check_model({**tool, "function": function}, ollama.Tool.model_validate)
    check_model(body.get("options", {}), ollama.Options.model_validate)
    ollama_types.ChatRequest.model_validate(
        {k: v for k, v in body.items() if k != "messages"}
    )
    return errors


_GEMINI_TOP = {
    "contents": None,
    "systemInstruction": genai.Content,
    "tools": None,
    "toolConfig": genai.ToolConfig,
    "generationConfig": genai.GenerationConfig,
}


def _gemini_request_errors(body: Mapping[str, Any]) -> list[str]:
    errors = [f"$.{k}: unknown key" for k in body if k not in _GEMINI_TOP]
    for content in body.get("contents", ()):
        check_model(content, _json_validate(genai.Content))
    for tool in body.get("tools", ()):
        check_model(tool, _json_validate(genai.Tool))
    for key in ("systemInstruction", "toolConfig", "generationConfig"):
        if key in body:
            check_model(body[key], _json_validate(_GEMINI_TOP[key]))
    return errors

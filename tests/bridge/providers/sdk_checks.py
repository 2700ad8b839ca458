"""The per-provider checks of :mod:`tests.bridge.providers.sdk`, against the
official SDKs' own types.

The SDKs (anthropic, openai, google-genai, ollama) take about four seconds of
CPU to import, which every pytest worker paid at collection for the few
modules that validate with them: :mod:`.sdk` imports this module only when a
check runs, and those test modules share one worker (``xdist_group``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

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

from tests.bridge.providers.sdk import check_model, typed_errors


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

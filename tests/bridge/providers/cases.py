"""Canonical requests shared by the provider tests, and per-provider encoding."""

from __future__ import annotations

import json
from typing import Any

import encoders.anthropic
import encoders.gemini
import encoders.ollama
import encoders.openai
import encoders.openai_responses
from runtime.messages import Image, Message, NamedTool, ToolResult, ToolSpec, ToolUse
from runtime.requests import SamplingRequest
from tests.helpers import ROOT

DATA = ROOT / "tests" / "data" / "providers"

MODELS = {
    "openai": "gpt-4o-mini",
    "openai_responses": "gpt-4.1-mini",
    "anthropic": "claude-sonnet-4-5",
    "ollama": "llama3.2",
    "gemini": "gemini-2.5-flash",
}

PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9"
    "awAAAABJRU5ErkJggg=="
)

WEATHER = ToolSpec(
    name="get_weather",
    description="Current weather for a city.",
    input_schema={
        "type": "object",
        "properties": {"city": {"type": "string", "description": "City name"}},
        "required": ["city"],
        "additionalProperties": False,
    },
)
SEARCH = ToolSpec(
    name="search",
    description="Search the web.",
    input_schema={
        "type": "object",
        "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
        "required": ["query"],
    },
)
FORECAST = ToolSpec(
    name="__schema__",
    description="The forecast to report.",
    input_schema={
        "type": "object",
        "title": "Forecast",
        "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}},
        "required": ["city", "celsius"],
        "additionalProperties": False,
    },
)

ASK = Message.user("What is the weather in Paris?")

CASES: dict[str, SamplingRequest] = {
    "text": SamplingRequest(messages=[Message.user("Hello!")], max_tokens=256),
    "system": SamplingRequest(
        messages=[ASK], system_prompt="You are terse.", max_tokens=256
    ),
    "image": SamplingRequest(
        messages=[Message.user("What is in this picture?", Image(PNG, "image/png"))],
        max_tokens=256,
    ),
    "tool_history": SamplingRequest(
        messages=[
            Message.user("Weather in Paris and Atlantis?"),
            Message.assistant(
                "Let me check both.",
                ToolUse("call_paris", "get_weather", {"city": "Paris"}),
                ToolUse("call_atlantis", "get_weather", {"city": "Atlantis"}),
            ),
            Message(
                "user",
                (
                    ToolResult("call_paris", "18°C, sunny"),
                    ToolResult(
                        "call_atlantis", "unknown city: Atlantis", is_error=True
                    ),
                ),
            ),
        ],
        tools=(WEATHER,),
        tool_choice="auto",
        max_tokens=512,
    ),
    "choice_auto": SamplingRequest(
        messages=[ASK], tools=(WEATHER, SEARCH), tool_choice="auto", max_tokens=256
    ),
    "choice_required": SamplingRequest(
        messages=[ASK], tools=(WEATHER, SEARCH), tool_choice="required", max_tokens=256
    ),
    "choice_none": SamplingRequest(
        messages=[ASK], tools=(WEATHER, SEARCH), tool_choice="none", max_tokens=256
    ),
    "choice_named": SamplingRequest(
        messages=[ASK],
        tools=(WEATHER, SEARCH),
        tool_choice=NamedTool("get_weather"),
        max_tokens=256,
    ),
    "structured": SamplingRequest(
        messages=[ASK], tools=(FORECAST,), tool_choice="required", max_tokens=256
    ),
    "structured_retry": SamplingRequest(
        messages=[
            ASK,
            Message.assistant(ToolUse("call_s1", "__schema__", {"city": "Paris"})),
            Message(
                "user",
                (ToolResult("call_s1", "celsius: Field required", is_error=True),),
            ),
        ],
        tools=(FORECAST,),
        tool_choice="required",
        max_tokens=256,
    ),
    "sampling": SamplingRequest(
        messages=[Message.user("Count to ten.")],
        max_tokens=50,
        temperature=0.3,
        stop_sequences=("7",),
    ),
}


def encode(provider: str, request: SamplingRequest, *, stream: bool = False) -> Any:
    """``request`` encoded for ``provider`` with its test model."""
    model = MODELS[provider]
    if provider == "openai":
        return encoders.openai.encode_request(request, model=model, stream=stream)
    if provider == "openai_responses":
        return encoders.openai_responses.encode_request(
            request, model=model, stream=stream
        )
    if provider == "anthropic":
        return encoders.anthropic.encode_request(request, model=model, stream=stream)
    if provider == "ollama":
        return encoders.ollama.encode_request(request, model=model, stream=stream)
    return encoders.gemini.encode_request(request)


def load(provider: str, name: str) -> Any:
    """The recorded JSON ``tests/data/providers/<provider>/<name>.json``."""
    return json.loads((DATA / provider / f"{name}.json").read_text())

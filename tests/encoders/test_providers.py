"""Encoders: exact request bodies per provider, checked against the SDKs' types."""

from __future__ import annotations

import pytest

import encoders.anthropic
import encoders.openai
import encoders.openai_responses
from runtime.errors import InvalidMessages, LocalProtocolError
from runtime.messages import Audio, Image, Message, NamedTool, Text, ToolResult, ToolUse
from runtime.requests import SamplingRequest
from tests.bridge.providers.cases import (
    ASK,
    CASES,
    FORECAST,
    PNG,
    SEARCH,
    WEATHER,
    encode,
    load,
)
from tests.bridge.providers.sdk import PROVIDERS, SDK_GROUP, request_errors

pytestmark = pytest.mark.xdist_group(SDK_GROUP)  # one worker imports the SDKs

UNSUPPORTED = {("openai_responses", "sampling"): LocalProtocolError}
MATRIX = [(p, c) for p in PROVIDERS for c in CASES if (p, c) not in UNSUPPORTED]


@pytest.mark.parametrize(("provider", "case"), MATRIX)
def test_request_body_matches_the_recording(provider: str, case: str) -> None:
    assert encode(provider, CASES[case]) == load(provider, f"request_{case}")


@pytest.mark.parametrize(("provider", "case"), MATRIX)
def test_recorded_request_fits_the_sdk_request_type(provider: str, case: str) -> None:
    assert request_errors(provider, load(provider, f"request_{case}")) == []


@pytest.mark.parametrize(("provider", "case"), MATRIX)
def test_streaming_request_fits_the_sdk_request_type(provider: str, case: str) -> None:
    assert request_errors(provider, encode(provider, CASES[case], stream=True)) == []


@pytest.mark.parametrize(("provider", "case"), sorted(UNSUPPORTED))
def test_what_a_provider_cannot_say_raises(provider: str, case: str) -> None:
    with pytest.raises(UNSUPPORTED[provider, case]):
        encode(provider, CASES[case])


@pytest.mark.parametrize(
    ("provider", "path", "key"),
    [
        ("openai", ("messages", 3), "is_error"),
        ("openai_responses", ("input", 4), "is_error"),
        ("anthropic", (), "temperature"),
        ("ollama", ("messages", 3), "is_error"),
        ("gemini", ("contents", 2, "parts", 1, "functionResponse"), "isError"),
    ],
)
def test_the_request_checker_rejects_an_unknown_key(
    provider: str, path: tuple[object, ...], key: str
) -> None:
    body = load(provider, "request_tool_history")
    node = body
    for step in path:
        node = node[step]
    node[key] = True
    try:
        errors = request_errors(provider, body)
    except (AssertionError, ValueError) as exc:  # pydantic-checked providers raise
        errors = [str(exc)]
    assert errors


def test_openai_stream_asks_for_usage() -> None:
    body = encode("openai", CASES["text"], stream=True)
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}


def test_openai_reasoning_models_get_no_temperature_and_a_developer_prompt() -> None:
    request = SamplingRequest(
        messages=[ASK], system_prompt="Be brief.", temperature=0.5
    )
    body = encoders.openai.encode_request(request, model="o4-mini")
    assert "temperature" not in body
    assert body["messages"][0] == {"role": "developer", "content": "Be brief."}


def test_openai_compatible_servers_can_get_max_tokens() -> None:
    body = encoders.openai.encode_request(
        CASES["text"], model="llama3.2", max_tokens_key="max_tokens"
    )
    assert body["max_tokens"] == 256
    assert "max_completion_tokens" not in body


def test_openai_sends_tool_result_images_in_a_following_user_message() -> None:
    request = SamplingRequest(
        messages=[
            ASK,
            Message.assistant(ToolUse("call_1", "get_weather", {"city": "Paris"})),
            Message(
                "user", (ToolResult("call_1", (Text("map"), Image(PNG, "image/png"))),)
            ),
        ],
        tools=(WEATHER,),
    )
    messages = encoders.openai.encode_request(request, model="gpt-4o")["messages"]
    assert messages[2] == {"role": "tool", "tool_call_id": "call_1", "content": "map"}
    assert messages[3]["role"] == "user"
    assert [p["type"] for p in messages[3]["content"]] == ["text", "image_url"]
    assert request_errors("openai", {"model": "gpt-4o", "messages": messages}) == []


def test_openai_audio_must_be_wav_or_mp3() -> None:
    good = SamplingRequest(messages=[Message.user(Audio("UklGRg==", "audio/wav"))])
    part = encoders.openai.encode_request(good, model="gpt-4o-audio-preview")
    assert part["messages"][0]["content"][0]["input_audio"]["format"] == "wav"
    bad = SamplingRequest(messages=[Message.user(Audio("ZkxhQw==", "audio/flac"))])
    with pytest.raises(InvalidMessages):
        encoders.openai.encode_request(bad, model="gpt-4o-audio-preview")


@pytest.mark.parametrize("provider", ["openai_responses", "anthropic", "ollama"])
def test_audio_is_refused_where_the_api_has_no_audio_input(provider: str) -> None:
    request = SamplingRequest(messages=[Message.user(Audio("UklGRg==", "audio/wav"))])
    with pytest.raises(InvalidMessages):
        encode(provider, request)


def test_gemini_sends_audio_inline() -> None:
    request = SamplingRequest(messages=[Message.user(Audio("UklGRg==", "audio/wav"))])
    part = encode("gemini", request)["contents"][0]["parts"][0]
    assert part == {"inlineData": {"mimeType": "audio/wav", "data": "UklGRg=="}}


def test_anthropic_sends_temperature_only_to_legacy_models() -> None:
    request = SamplingRequest(messages=[ASK], temperature=0.5)
    legacy = encoders.anthropic.encode_request(request, model="claude-3-5-haiku-latest")
    current = encoders.anthropic.encode_request(request, model="claude-sonnet-4-5")
    assert legacy["temperature"] == 0.5
    assert "temperature" not in current


def test_anthropic_declares_past_tools_when_a_turn_offers_none() -> None:
    # Structured output after a tool-using turn: the API refuses tool blocks in
    # a request that declares no tools (anthropic-sdk-python#494).
    used = ToolUse("call_1", "get_weather", {"city": "Paris"})
    history = [
        ASK,
        Message.assistant(used),
        Message("user", (ToolResult("call_1", "12 C"),)),
    ]
    request = SamplingRequest(
        messages=history, tools=(FORECAST,), tool_choice="required"
    )
    body = encode("anthropic", request)
    assert "output_config" in body
    assert [t["name"] for t in body["tools"]] == ["get_weather"]
    assert body["tool_choice"] == {"type": "none"}
    assert request_errors("anthropic", body) == []
    plain = encode("anthropic", SamplingRequest(messages=[ASK]))
    assert "tools" not in plain
    assert "tool_choice" not in plain


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_named_tool_that_is_not_offered_is_refused(provider: str) -> None:
    request = SamplingRequest(
        messages=[ASK], tools=(SEARCH,), tool_choice=NamedTool("get_weather")
    )
    with pytest.raises(LocalProtocolError):
        encode(provider, request)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_required_tool_choice_without_tools_is_refused(provider: str) -> None:
    request = SamplingRequest(messages=[ASK], tool_choice="required")
    with pytest.raises(LocalProtocolError):
        encode(provider, request)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_assistant_images_are_refused(provider: str) -> None:
    request = SamplingRequest(
        messages=[ASK, Message.assistant(Image(PNG, "image/png")), Message.user("ok")]
    )
    with pytest.raises(InvalidMessages):
        encode(provider, request)


def test_anthropic_refuses_unsupported_image_types() -> None:
    request = SamplingRequest(messages=[Message.user(Image(PNG, "image/tiff"))])
    with pytest.raises(InvalidMessages):
        encode("anthropic", request)


def test_responses_sends_tool_result_images_natively() -> None:
    request = SamplingRequest(
        messages=[
            ASK,
            Message.assistant(ToolUse("call_1", "get_weather", {"city": "Paris"})),
            Message(
                "user", (ToolResult("call_1", (Text("map"), Image(PNG, "image/png"))),)
            ),
        ],
        tools=(WEATHER,),
    )
    body = encoders.openai_responses.encode_request(request, model="gpt-4.1")
    output = body["input"][2]["output"]
    assert [p["type"] for p in output] == ["input_text", "input_image"]
    assert request_errors("openai_responses", body) == []

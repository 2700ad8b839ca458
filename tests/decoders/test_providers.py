"""Decoders: recorded responses and streams, SDK-validated, decode as expected."""

from __future__ import annotations

import json

import pytest

from decoders import openai_responses
from runtime.errors import ProviderError, RemoteProtocolError
from runtime.messages import Message, ToolResult, ToolUse
from runtime.requests import SamplingRequest
from tests.bridge.providers.cases import ASK, DATA, WEATHER, encode, load
from tests.bridge.providers.recordings import (
    accumulate,
    as_json,
    decode_recording,
    expected,
    recordings,
    stream_path,
    stream_payloads,
    structured,
)
from tests.bridge.providers.sdk import (
    PROVIDERS,
    SDK_GROUP,
    validate_event,
    validate_response,
)

pytestmark = pytest.mark.xdist_group(SDK_GROUP)  # one worker imports the SDKs

RESPONSES = [(p, n) for p in PROVIDERS for n in recordings(p, "response")]
STREAMS = [(p, n) for p in PROVIDERS for n in recordings(p, "stream")]
GOOD_STREAMS = [(p, n) for p, n in STREAMS if (DATA / p / f"reply_{n}.json").exists()]
TRUNCATED = [(p, n) for p, n in STREAMS if n == "stream_truncated"]
ERRORS = [(p, n) for p, n in STREAMS if n == "stream_error"]


@pytest.mark.parametrize(("provider", "name"), RESPONSES)
def test_recorded_response_fits_the_sdk_type(provider: str, name: str) -> None:
    validate_response(provider, load(provider, name))


@pytest.mark.parametrize(("provider", "name"), STREAMS)
def test_every_recorded_stream_event_fits_the_sdk_type(
    provider: str, name: str
) -> None:
    for data in stream_payloads(provider, stream_path(provider, name).read_text()):
        if data != "[DONE]":
            validate_event(provider, json.loads(data))


@pytest.mark.parametrize(("provider", "name"), RESPONSES)
def test_recorded_response_decodes_to_the_expected_reply(
    provider: str, name: str
) -> None:
    assert as_json(decode_recording(provider, name)) == expected(provider, name)


@pytest.mark.parametrize(("provider", "name"), GOOD_STREAMS)
def test_recorded_stream_accumulates_to_the_expected_reply(
    provider: str, name: str
) -> None:
    payloads = stream_payloads(provider, stream_path(provider, name).read_text())
    reply = accumulate(provider, payloads, is_structured=structured(name))
    assert as_json(reply) == expected(provider, name)


TWINS = [
    (p, n, n.replace("stream_", "response_"))
    for p, n in GOOD_STREAMS
    if (DATA / p / f"{n.replace('stream_', 'response_')}.json").exists()
]


@pytest.mark.parametrize(("provider", "stream", "whole"), TWINS)
def test_a_stream_and_its_whole_response_give_the_same_reply(
    provider: str, stream: str, whole: str
) -> None:
    assert expected(provider, stream) == expected(provider, whole)


@pytest.mark.parametrize(("provider", "name"), TRUNCATED)
def test_a_truncated_stream_raises_remote_protocol_error(
    provider: str, name: str
) -> None:
    payloads = stream_payloads(provider, stream_path(provider, name).read_text())
    with pytest.raises(RemoteProtocolError):
        accumulate(provider, payloads)


@pytest.mark.parametrize(("provider", "name"), ERRORS)
def test_an_error_in_a_stream_raises_provider_error(provider: str, name: str) -> None:
    payloads = stream_payloads(provider, stream_path(provider, name).read_text())
    with pytest.raises(ProviderError):
        accumulate(provider, payloads)


def test_a_failed_responses_answer_raises_provider_error() -> None:
    body = {**load("openai_responses", "response_text"), "status": "failed"}
    body["error"] = {"code": "server_error", "message": "The model failed."}
    with pytest.raises(ProviderError) as caught:
        openai_responses.decode_response(body)
    assert caught.value.code == "server_error"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_body_of_the_wrong_shape_raises_remote_protocol_error(provider: str) -> None:
    from tests.bridge.providers.recordings import APIS

    with pytest.raises(RemoteProtocolError):
        APIS[provider].decode({"unexpected": []}, False)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_structured_text_that_is_not_json_stays_text(provider: str) -> None:
    from tests.bridge.providers.recordings import APIS

    body = load(provider, "response_max_tokens")
    reply = APIS[provider].decode(body, True)
    assert reply.tool_uses == ()
    assert reply.text == "One, two, three, four"
    assert reply.stop_reason == "maxTokens"


# --- continuity: what a provider sent comes back verbatim in the next request ---


def _history(provider: str, name: str) -> SamplingRequest:
    reply = decode_recording(provider, name)
    results = tuple(ToolResult(u.id, "18°C") for u in reply.tool_uses)
    messages = [ASK, Message("assistant", reply.content), Message("user", results)]
    return SamplingRequest(messages=messages, tools=(WEATHER,))


def test_anthropic_thinking_blocks_go_back_in_front_of_their_tool_use() -> None:
    body = encode("anthropic", _history("anthropic", "response_continuity"))
    original = load("anthropic", "response_continuity")["content"]
    assert body["messages"][1] == {"role": "assistant", "content": original}


def test_gemini_signatures_and_thoughts_go_back_unchanged() -> None:
    body = encode("gemini", _history("gemini", "response_continuity"))
    parts = load("gemini", "response_continuity")["candidates"][0]["content"]["parts"]
    assert body["contents"][1] == {"role": "model", "parts": parts}
    response = body["contents"][2]["parts"][0]["functionResponse"]
    assert "id" not in response  # the id was synthesized; Gemini never saw it


def test_gemini_call_ids_go_back_when_gemini_sent_them() -> None:
    body = encode("gemini", _history("gemini", "response_tool_calls"))
    parts = load("gemini", "response_tool_calls")["candidates"][0]["content"]["parts"]
    assert body["contents"][1] == {"role": "model", "parts": parts}
    ids = [p["functionResponse"]["id"] for p in body["contents"][2]["parts"]]
    assert ids == ["fc-paris-01", "fc-atlantis-02"]


def test_responses_reasoning_items_and_call_item_ids_go_back() -> None:
    body = encode(
        "openai_responses", _history("openai_responses", "response_continuity")
    )
    output = load("openai_responses", "response_continuity")["output"]
    reasoning, call = body["input"][1], body["input"][2]
    assert reasoning == output[0]
    assert call == {k: v for k, v in output[1].items() if k != "status"}


def test_missing_ids_are_unique_across_turns() -> None:
    first = decode_recording("gemini", "response_missing_ids")
    second = decode_recording("gemini", "response_continuity")
    ids = [u.id for u in (*first.tool_uses, *second.tool_uses)]
    assert len(ids) == len(set(ids))


def test_invalid_arguments_are_kept_raw_for_the_retry_path() -> None:
    reply = decode_recording("openai", "response_invalid_args")
    assert reply.tool_uses == (
        ToolUse("call_Bad001", "get_weather", {"__raw__": '{"city": "Paris"'}),
    )

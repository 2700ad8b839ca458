"""Property tests: generated conversations and answers, every provider."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runtime.messages import (
    Image,
    Message,
    NamedTool,
    Text,
    ToolResult,
    ToolUse,
    validate_messages,
)
from runtime.requests import SamplingRequest
from tests.bridge.providers.cases import PNG, SEARCH, WEATHER, encode
from tests.bridge.providers.fake_models import Answer, Call, stream, whole
from tests.bridge.providers.recordings import APIS, as_json
from tests.bridge.providers.sdk import PROVIDERS, SDK_GROUP, request_errors

pytestmark = pytest.mark.xdist_group(SDK_GROUP)  # one worker imports the SDKs

texts = st.text(min_size=1, max_size=12)
json_values = st.one_of(
    st.integers(-5, 5), st.text(max_size=6), st.booleans(), st.none()
)
arguments = st.dictionaries(st.text(min_size=1, max_size=5), json_values, max_size=3)
providers = st.sampled_from(PROVIDERS)


@st.composite
def conversations(draw: st.DrawFn) -> SamplingRequest:
    """A valid MCP conversation of text, images, tool calls and results."""
    messages: list[Message] = []
    for turn in range(draw(st.integers(1, 3))):
        user: list[Any] = [Text(draw(texts))]
        if draw(st.booleans()):
            user.append(Image(PNG, "image/png"))
        messages.append(Message("user", tuple(user)))
        names = draw(st.lists(st.sampled_from(["get_weather", "search"]), max_size=2))
        uses = [
            ToolUse(f"call_{turn}_{n}", name, draw(arguments))
            for n, name in enumerate(names)
        ]
        said = [Text(draw(texts))] if draw(st.booleans()) or not uses else []
        messages.append(Message("assistant", (*said, *uses)))
        if uses:
            results = tuple(
                ToolResult(u.id, draw(texts), is_error=draw(st.booleans()))
                for u in uses
            )
            messages.append(Message("user", results))
    if messages[-1].role == "assistant":
        messages.append(Message.user(draw(texts)))
    validate_messages(messages)
    choice = draw(
        st.sampled_from([None, "auto", "required", "none", NamedTool("search")])
    )
    return SamplingRequest(
        messages=messages,
        system_prompt=draw(st.none() | texts),
        tools=(WEATHER, SEARCH),
        tool_choice=choice,
        max_tokens=draw(st.integers(1, 4096)),
    )


@st.composite
def answers(draw: st.DrawFn) -> Answer:
    text = draw(st.text(max_size=30))
    count = draw(st.integers(0, 3))
    calls = tuple(
        Call(
            f"call_{n}",
            draw(st.sampled_from(["get_weather", "search"])),
            draw(arguments),
        )
        for n in range(count)
    )
    return Answer(text, calls)


cuts = st.lists(st.floats(0, 1), max_size=6)


@given(providers, conversations(), st.booleans())
def test_every_generated_conversation_encodes_to_a_valid_request(
    provider: str, request: SamplingRequest, streaming: bool
) -> None:
    assert request_errors(provider, encode(provider, request, stream=streaming)) == []


@given(providers, answers(), cuts, cuts)
def test_stream_accumulation_is_chunking_invariant(
    provider: str, answer: Answer, one: list[float], other: list[float]
) -> None:
    api = APIS[provider]

    def accumulate(payloads: list[str]) -> Any:
        accumulator = api.accumulator(False)
        for data in payloads:
            api.feed(accumulator, data)
        return as_json(accumulator.finish())

    first = accumulate(stream(provider, answer, one))
    assert first == accumulate(stream(provider, answer, other))
    assert first == as_json(api.decode(whole(provider, answer), False))


@given(providers, answers())
def test_a_decoded_answer_carries_the_text_calls_and_stop_reason(
    provider: str, answer: Answer
) -> None:
    reply = APIS[provider].decode(whole(provider, answer), False)
    assert reply.text == answer.text
    assert [(u.id, u.name, dict(u.input)) for u in reply.tool_uses] == [
        (c.id, c.name, c.args) for c in answer.calls
    ]
    assert reply.stop_reason == ("toolUse" if answer.calls else "endTurn")


def _assistant_turn(provider: str, body: dict[str, Any]) -> Any:
    if provider == "anthropic":
        return body["messages"][1]["content"]
    if provider == "gemini":
        return body["contents"][1]["parts"]
    if provider == "openai_responses":
        return [
            i for i in body["input"] if i.get("role") != "user" and "output" not in i
        ]
    return body["messages"][1]


def _native_turn(provider: str, answer: Answer) -> Any:
    native = whole(provider, answer)
    if provider == "anthropic":
        return native["content"]
    if provider == "gemini":
        return native["candidates"][0]["content"]["parts"]
    if provider == "openai_responses":
        return [
            {"type": "message", "role": "assistant", "content": answer.text}
            if item["type"] == "message"
            else {k: v for k, v in item.items() if k != "status"}
            for item in native["output"]
        ]
    if provider == "ollama":
        return native["message"]
    message = dict(native["choices"][0]["message"])
    if not answer.calls:
        message["content"] = answer.text  # an empty answer is sent back as ""
    return message


@given(providers, answers())
def test_an_answer_fed_back_as_history_reproduces_the_native_turn(
    provider: str, answer: Answer
) -> None:
    reply = APIS[provider].decode(whole(provider, answer), False)
    messages = [Message.user("go"), Message("assistant", reply.content or (Text(""),))]
    results = tuple(ToolResult(u.id, "done") for u in reply.tool_uses)
    messages.append(Message("user", results) if results else Message.user("more"))
    body = encode(provider, SamplingRequest(messages=messages, tools=(WEATHER, SEARCH)))
    assert _normalise(provider, _assistant_turn(provider, body)) == _normalise(
        provider, _native_turn(provider, answer)
    )


def _normalise(provider: str, turn: Any) -> Any:
    # Arguments travel as JSON text on OpenAI: compare them parsed.
    if provider == "openai":
        turn = dict(turn)
        turn.pop("refusal", None)
        turn.pop("annotations", None)
        for call in turn.get("tool_calls", ()):
            call["function"]["arguments"] = json.loads(call["function"]["arguments"])
    if provider == "openai_responses":
        for item in turn:
            if "arguments" in item:
                item["arguments"] = json.loads(item["arguments"])
    return turn

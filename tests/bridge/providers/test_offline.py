"""OfflineModel: deterministic, schema-valid answers with no network."""

from __future__ import annotations

import math
import time
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from pydantic import BaseModel, Field

from bridge.providers import OfflineModel, provider_from_spec
from runtime import Message, NamedTool, Text, ToolResult, ToolSpec, ToolUse
from runtime.errors import ProviderConfigError, ProviderError
from runtime.lowlevel import SamplingRequest
from runtime.messages import SCHEMA_TOOL_NAME
from tests.bridge.providers.hostile import within


class Weather(BaseModel):
    city: str = Field(min_length=2)
    days: int = Field(ge=1, le=7)


class Search(BaseModel):
    query: str
    limit: int | None = Field(default=None, ge=1)


class Pick(BaseModel):
    side: str = Field(json_schema_extra={"enum": ["left", "right"]})


WEATHER = ToolSpec.from_model("weather", Weather)
SEARCH = ToolSpec.from_model("search", Search)
TOOLS = (WEATHER, SEARCH)
SCHEMA = ToolSpec(name=SCHEMA_TOOL_NAME, input_schema=Weather.model_json_schema())

prompts = st.text(min_size=1, max_size=60)
seeds = st.integers(min_value=0, max_value=2**32)


def ask(prompt: str, **options: Any) -> SamplingRequest:
    return SamplingRequest(messages=(Message.user(prompt),), **options)


def only_use(reply: Any) -> ToolUse:
    (use,) = reply.content
    assert isinstance(use, ToolUse)
    return use


def is_valid(schema: Any, value: Any) -> bool:
    return not list(Draft202012Validator(schema).iter_errors(value))  # pyright: ignore[reportUnknownMemberType]


@given(prompt=prompts, seed=seeds)
def test_the_same_seed_and_request_give_the_same_reply(prompt: str, seed: int) -> None:
    request = ask(prompt, tools=TOOLS, tool_choice="required")
    assert OfflineModel(seed).reply(request) == OfflineModel(seed).reply(request)


def test_different_requests_and_seeds_give_different_replies() -> None:
    replies = {OfflineModel(0).reply(ask(f"question {n}")).text for n in range(10)}
    assert len(replies) == 10
    calls = {
        repr(only_use(OfflineModel(seed).reply(ask("same", tools=TOOLS))).input)
        for seed in range(10)
    }
    assert len(calls) > 1


@given(prompt=prompts, seed=seeds)
def test_structured_output_is_a_schema_call_valid_against_the_schema(
    prompt: str, seed: int
) -> None:
    request = ask(prompt, tools=(SCHEMA,), tool_choice="required")
    reply = OfflineModel(seed).reply(request)
    use = only_use(reply)
    assert (use.name, reply.stop_reason) == (SCHEMA_TOOL_NAME, "toolUse")
    Weather.model_validate(use.input)


@given(prompt=prompts, seed=seeds, choice=st.sampled_from([None, "auto", "required"]))
def test_offered_tools_get_one_call_with_valid_arguments(
    prompt: str, seed: int, choice: Any
) -> None:
    reply = OfflineModel(seed).reply(ask(prompt, tools=TOOLS, tool_choice=choice))
    use = only_use(reply)
    spec = {t.name: t for t in TOOLS}[use.name]
    assert is_valid(spec.input_schema, dict(use.input))


def test_random_tool_choice_reaches_every_tool() -> None:
    names = {
        only_use(OfflineModel(seed).reply(ask("go", tools=TOOLS))).name
        for seed in range(20)
    }
    assert names == {"weather", "search"}


@given(seed=seeds)
def test_a_named_tool_is_the_one_called(seed: int) -> None:
    request = ask("go", tools=TOOLS, tool_choice=NamedTool("search"))
    assert only_use(OfflineModel(seed).reply(request)).name == "search"


def test_tool_choice_none_gets_text() -> None:
    reply = OfflineModel().reply(ask("go", tools=TOOLS, tool_choice="none"))
    assert reply.tool_uses == ()
    assert reply.stop_reason == "endTurn"


def test_auto_after_tool_results_answers_in_text_so_agent_loops_end() -> None:
    messages = (
        Message.user("weather in Oslo?"),
        Message.assistant(ToolUse("c1", "weather", {"city": "Oslo", "days": 1})),
        Message("user", (ToolResult("c1", "rain"),)),
    )
    auto = OfflineModel().reply(SamplingRequest(messages=messages, tools=TOOLS))
    assert auto.tool_uses == ()
    required = SamplingRequest(messages=messages, tools=TOOLS, tool_choice="required")
    assert len(OfflineModel().reply(required).tool_uses) == 1


def test_plain_text_says_it_is_the_offline_model_and_quotes_the_prompt() -> None:
    reply = OfflineModel().reply(ask("Give one short travel tip for Rome."))
    (block,) = reply.content
    assert isinstance(block, Text)
    assert "offline model" in reply.text.lower()
    assert "Give one short travel tip for Rome" in reply.text
    assert reply.stop_reason == "endTurn"


def test_a_stop_sequence_cuts_the_text() -> None:
    reply = OfflineModel().reply(ask("hello", stop_sequences=("model",)))
    assert reply.stop_reason == "stopSequence"
    assert "model" not in reply.text


def test_max_tokens_truncates_the_text() -> None:
    reply = OfflineModel().reply(ask("hello there", max_tokens=2))
    assert (len(reply.text), reply.stop_reason) == (8, "maxTokens")


def test_usage_is_estimated_and_the_model_is_named() -> None:
    short = OfflineModel().reply(ask("hi"))
    long = OfflineModel().reply(ask("hi " * 200))
    assert short.usage is not None
    assert long.usage is not None
    assert 0 < short.usage.input_tokens < long.usage.input_tokens
    assert short.usage.output_tokens > 0
    assert short.model == "offline"
    assert OfflineModel(7).reply(ask("hi")).model == "offline:7"


def test_arguments_answered_with_an_error_are_not_repeated() -> None:
    spec = ToolSpec.from_model("pick", Pick)
    for seed in range(50):
        messages = (
            Message.user("pick a side"),
            Message.assistant(ToolUse("c1", "pick", {"side": "left"})),
            Message("user", (ToolResult("c1", "left is wrong", is_error=True),)),
        )
        request = SamplingRequest(
            messages=messages, tools=(spec,), tool_choice="required"
        )
        use = only_use(OfflineModel(seed).reply(request))
        assert use.input == {"side": "right"}
        assert use.id != "c1"


async def test_complete_is_the_provider_entry_point() -> None:
    request = ask("hi")
    assert await OfflineModel(3).complete(request) == OfflineModel(3).reply(request)


@pytest.mark.parametrize(
    ("spec", "seed"), [("offline", 0), ("offline:7", 7), ("offline:", 0)]
)
def test_provider_from_spec_builds_the_offline_model(spec: str, seed: int) -> None:
    assert provider_from_spec(spec, env={}) == OfflineModel(seed)


def test_the_reply_model_name_is_a_spec_for_the_same_model() -> None:
    model = OfflineModel(42)
    assert provider_from_spec(model.reply(ask("hi")).model, env={}) == model


@pytest.mark.parametrize("spec", ["offline:x", "offline:1.5"])
def test_a_bad_offline_seed_raises_a_one_line_config_error(spec: str) -> None:
    with pytest.raises(ProviderConfigError) as caught:
        provider_from_spec(spec, env={})
    assert "\n" not in str(caught.value)


# --- schemas it cannot answer: what a hostile server may offer ----------------------


def offering(schema: dict[str, Any], *messages: Message) -> SamplingRequest:
    tool = ToolSpec(name="x", input_schema=schema)
    conversation = messages or (Message.user("go"),)
    return SamplingRequest(messages=conversation, tools=(tool,), tool_choice="required")


def property_a(schema: Any) -> dict[str, Any]:
    return {"type": "object", "required": ["a"], "properties": {"a": schema}}


LOOP = {
    "$defs": {"n": {"type": "array", "minItems": 40, "items": {"$ref": "#/$defs/n"}}},
    **property_a({"$ref": "#/$defs/n"}),
}


@pytest.mark.parametrize(
    ("schema", "words"),
    [
        (property_a({"type": "string", "minLength": 300_000_000}), "at /a, minLength"),
        (property_a({"type": "array", "minItems": 1e300}), "at /a, minItems 1e+300"),
        (property_a({"type": "array", "minItems": 1, "items": 5}), "items is 5"),
        (property_a("x"), '#/properties/a is "x", not a schema'),
        (property_a({"type": "integer", "minimum": math.inf}), "minimum is Inf"),
        (LOOP, "at /a/0/0/"),
    ],
)
def test_a_tool_schema_it_cannot_answer_fails_with_one_provider_error_line(
    schema: dict[str, Any], words: str
) -> None:
    with within(15), pytest.raises(ProviderError) as caught:
        OfflineModel().reply(offering(schema))
    error = caught.value
    assert (error.provider, error.code) == ("offline", "unsatisfiable_schema")
    text = str(error)
    assert text.isprintable()
    assert text.startswith(
        'offline: the offline model cannot answer from tool "x"\'s input schema: '
    )
    assert words in text


def test_an_output_schema_it_cannot_answer_is_named_so() -> None:
    schema = property_a({"type": "string", "minLength": 300_000_000})
    tool = ToolSpec(name=SCHEMA_TOOL_NAME, input_schema=schema)
    with within(15), pytest.raises(ProviderError, match="from the output schema: "):
        OfflineModel().reply(ask("go", tools=(tool,), tool_choice="required"))


async def test_complete_fails_the_same_way_without_holding_the_loop() -> None:
    request = offering(property_a({"type": "array", "minItems": 1e300}))
    with within(15), pytest.raises(ProviderError, match="minItems 1e\\+300"):
        await OfflineModel().complete(request)


def test_a_request_too_deep_to_write_is_one_provider_error() -> None:
    deep: dict[str, Any] = {}
    for _ in range(5_000):  # built here: JSON off the wire is never this deep
        deep = {"items": deep}
    with within(15), pytest.raises(ProviderError, match="cannot be written as JSON"):
        OfflineModel().reply(offering(property_a(deep)))


def test_redraws_share_one_work_budget_and_keep_the_last_draw() -> None:
    # Each draw tries thousands of options that cannot be met before the one
    # that can; the answer was refused, so it redraws until the work is spent.
    hopeless = [{"type": "string", "minLength": 200_000 + n} for n in range(12_000)]
    schema = property_a({"anyOf": [*hopeless, {"const": 1}]})
    refused = (
        Message.user("go"),
        Message.assistant(ToolUse("c1", "x", {"a": 1})),
        Message("user", (ToolResult("c1", "no", is_error=True),)),
    )
    started = time.monotonic()
    with within(15):
        use = only_use(OfflineModel().reply(offering(schema, *refused)))
    assert use.input == {"a": 1}
    assert time.monotonic() - started < 10

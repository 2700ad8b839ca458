"""encoders.mcp: exact MCP JSON for representative values, valid in each era.

Every encoding checked here is also validated against the official schema of
each era it is produced for (``tests/mcp_schema.py``).
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import math
import re
from enum import StrEnum
from typing import Any, Literal

import mcp_types
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, Field, RootModel, ValidationError

from encoders import mcp as enc
from runtime import (
    Audio,
    Image,
    Message,
    ModelPreferences,
    NamedTool,
    Text,
    ToolResult,
    ToolSpec,
    ToolUse,
    codec,
    tool,
)
from runtime.context import Context
from runtime.effects import Op
from runtime.errors import LocalProtocolError
from runtime.lowlevel import (
    Elicit,
    ElicitReply,
    ElicitUrl,
    Sample,
    SampleReply,
    Usage,
    check_form_properties,
    check_json,
)
from runtime.requests import ElicitationRequest, SamplingRequest
from tests.mcp_schema import ERAS, is_valid, validate
from tests.runtime.wire.test_plain_forms import form_fields

LEGACY, MODERN = ERAS

HI = {"role": "user", "content": {"type": "text", "text": "Hi"}}
WEATHER = ToolSpec(
    name="get_weather",
    description="Weather for a city",
    input_schema={
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
)
TIME = ToolSpec(name="get_time")
WEATHER_JSON = {
    "name": "get_weather",
    "description": "Weather for a city",
    "inputSchema": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}
TIME_JSON = {"name": "get_time", "inputSchema": {"type": "object", "properties": {}}}


def _params(request: SamplingRequest, **kwargs: Any) -> dict[str, Any]:
    """Encode for both eras; check each is valid and that they agree."""
    outs = [enc.sampling_params(request, era=era, **kwargs) for era in ERAS]
    for era, out in zip(ERAS, outs, strict=True):
        validate(era, "CreateMessageRequestParams", out)
    assert outs[0] == outs[1]
    return outs[0]


def _request(*messages: Message, **kwargs: Any) -> SamplingRequest:
    return SamplingRequest(messages=messages or (Message.user("Hi"),), **kwargs)


# --- sampling/createMessage params ----------------------------------------------------


def test_a_plain_sample_sends_its_one_block_as_a_single_object() -> None:
    request = Sample(messages=[Message.user("Hi")]).request()
    assert _params(request) == {"messages": [HI], "maxTokens": 1024}


def test_every_optional_field_is_spelled_as_mcp_spells_it() -> None:
    request = _request(
        system_prompt="Be brief.",
        max_tokens=50,
        temperature=0.2,
        stop_sequences=["END"],
        model_preferences=ModelPreferences(
            hints=["claude-3-sonnet", "claude"],
            cost_priority=0.3,
            speed_priority=0.8,
            intelligence_priority=0.5,
        ),
        include_context="thisServer",
        metadata={"trace": "abc"},
    )
    assert _params(request, meta={"progressToken": "p1"}) == {
        "messages": [HI],
        "maxTokens": 50,
        "systemPrompt": "Be brief.",
        "temperature": 0.2,
        "stopSequences": ["END"],
        "modelPreferences": {
            "hints": [{"name": "claude-3-sonnet"}, {"name": "claude"}],
            "costPriority": 0.3,
            "speedPriority": 0.8,
            "intelligencePriority": 0.5,
        },
        "includeContext": "thisServer",
        "metadata": {"trace": "abc"},
        "_meta": {"progressToken": "p1"},
    }


def test_model_preferences_send_only_what_is_set() -> None:
    only_hints = _request(model_preferences=ModelPreferences(hints=["gpt"]))
    assert _params(only_hints)["modelPreferences"] == {"hints": [{"name": "gpt"}]}
    empty = _request(model_preferences=ModelPreferences())
    assert _params(empty)["modelPreferences"] == {}


class Move(BaseModel):
    row: int
    col: int


def test_structured_output_is_the_schema_tool_with_choice_required() -> None:
    request = Sample(messages=[Message.user("Hi")], schema=Move).request()
    assert _params(request) == {
        "messages": [HI],
        "maxTokens": 1024,
        "tools": [
            {
                "name": "__schema__",
                "description": (
                    "Respond with structured data matching this schema by calling "
                    "this tool."
                ),
                "inputSchema": {
                    "properties": {
                        "row": {"title": "Row", "type": "integer"},
                        "col": {"title": "Col", "type": "integer"},
                    },
                    "required": ["row", "col"],
                    "title": "Move",
                    "type": "object",
                },
            }
        ],
        "toolChoice": {"mode": "required"},
    }


@pytest.mark.parametrize("choice", ["auto", "required", "none"])
def test_a_tool_choice_mode_is_sent_as_is(choice: Any) -> None:
    request = _request(tools=[WEATHER, TIME], tool_choice=choice)
    assert _params(request) == {
        "messages": [HI],
        "maxTokens": 1024,
        "tools": [WEATHER_JSON, TIME_JSON],
        "toolChoice": {"mode": choice},
    }


def test_no_tool_choice_sends_none() -> None:
    assert "toolChoice" not in _params(_request(tools=[WEATHER]))


def test_a_named_tool_choice_offers_only_that_tool_and_requires_a_call() -> None:
    request = _request(tools=[WEATHER, TIME], tool_choice=NamedTool("get_time"))
    assert _params(request) == {
        "messages": [HI],
        "maxTokens": 1024,
        "tools": [TIME_JSON],
        "toolChoice": {"mode": "required"},
    }


def test_a_named_tool_choice_that_is_not_offered_is_refused() -> None:
    request = _request(tools=[WEATHER], tool_choice=NamedTool("get_time"))
    with pytest.raises(LocalProtocolError, match="get_time"):
        enc.sampling_params(request, era=MODERN)


def test_a_multi_turn_tool_conversation_keeps_ids_errors_and_meta() -> None:
    request = _request(
        Message.user("Weather in Paris and Oslo?"),
        Message.assistant(
            "Checking.",
            ToolUse("c1", "get_weather", {"city": "Paris"}, meta={"sig": "x"}),
            ToolUse("c2", "get_weather", {"city": "Oslo"}),
        ),
        Message(
            "user",
            [
                ToolResult("c1", "18C", structured_content={"celsius": 18}),
                ToolResult("c2", "unknown city", is_error=True),
            ],
        ),
        tools=[WEATHER],
    )
    assert _params(request)["messages"] == [
        {
            "role": "user",
            "content": {"type": "text", "text": "Weather in Paris and Oslo?"},
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking."},
                {
                    "type": "tool_use",
                    "id": "c1",
                    "name": "get_weather",
                    "input": {"city": "Paris"},
                    "_meta": {"sig": "x"},
                },
                {
                    "type": "tool_use",
                    "id": "c2",
                    "name": "get_weather",
                    "input": {"city": "Oslo"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "toolUseId": "c1",
                    "content": [{"type": "text", "text": "18C"}],
                    "structuredContent": {"celsius": 18},
                },
                {
                    "type": "tool_result",
                    "toolUseId": "c2",
                    "content": [{"type": "text", "text": "unknown city"}],
                    "isError": True,
                },
            ],
        },
    ]


def test_images_and_audio_are_sent_with_their_mime_types() -> None:
    request = _request(
        Message.user(
            "What is this?",
            Image("aW1n", "image/png"),
            Audio("YXVk", "audio/wav", meta={"k": 1}),
        )
    )
    assert _params(request)["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image", "data": "aW1n", "mimeType": "image/png"},
                {
                    "type": "audio",
                    "data": "YXVk",
                    "mimeType": "audio/wav",
                    "_meta": {"k": 1},
                },
            ],
        }
    ]


def test_a_tool_result_holding_an_image_is_valid() -> None:
    request = _request(
        Message.user("Draw"),
        Message.assistant(ToolUse("c1", "draw", {})),
        Message.user(ToolResult("c1", [Image("aW1n", "image/png")])),
    )
    last = _params(request)["messages"][-1]
    assert last["content"]["content"] == [
        {"type": "image", "data": "aW1n", "mimeType": "image/png"}
    ]


def test_non_object_structured_content_in_a_tool_result_is_2026_only() -> None:
    request = _request(
        Message.user("List"),
        Message.assistant(ToolUse("c1", "ls", {})),
        Message.user(ToolResult("c1", "a, b", structured_content=["a", "b"])),
    )
    out = enc.sampling_params(request, era=MODERN)
    validate(MODERN, "CreateMessageRequestParams", out)
    with pytest.raises(LocalProtocolError, match="structuredContent"):
        enc.sampling_params(request, era=LEGACY)


def test_a_boolean_property_schema_in_a_sampling_tool_is_2026_only() -> None:
    loose = ToolSpec(
        name="pick", input_schema={"type": "object", "properties": {"a": True}}
    )
    request = _request(tools=(loose,))
    out = enc.sampling_params(request, era=MODERN)
    validate(MODERN, "CreateMessageRequestParams", out)  # JSON Schema's, and 2026's
    with pytest.raises(LocalProtocolError) as refused:
        enc.sampling_params(request, era=LEGACY)  # the models would let it through
    assert str(refused.value) == (
        "tool 'pick' cannot be offered to a 2025-11-25 client: "
        "input_schema.properties['a'] is True; MCP wants an object schema there "
        "(write {})"
    )


@pytest.mark.parametrize(
    "request_",
    [
        _request(model_preferences=ModelPreferences(cost_priority=2.0)),
        _request(temperature=float("nan")),
    ],
    ids=["priority-out-of-range", "nan-temperature"],
)
def test_values_mcp_cannot_carry_are_refused_before_sending(
    request_: SamplingRequest,
) -> None:
    for era in ERAS:
        with pytest.raises(LocalProtocolError):
            enc.sampling_params(request_, era=era)


def test_metadata_follows_the_typescript_json_type_not_2026_schema_json() -> None:
    # The generated 2026 schema.json defines JSONValue without null and with
    # "integer" for numbers; the TypeScript schema and mcp-types allow both.
    request = _request(metadata={"temperature": 0.5, "user": None})
    out = enc.sampling_params(request, era=MODERN)
    assert out["metadata"] == {"temperature": 0.5, "user": None}
    assert not is_valid(MODERN, "CreateMessageRequestParams", out)
    validate(LEGACY, "CreateMessageRequestParams", out)


def test_an_unknown_era_is_refused() -> None:
    with pytest.raises(LocalProtocolError, match="era"):
        enc.sampling_params(_request(), era="2024-11-05")  # type: ignore[arg-type]
    # A definition whose every key is valid by construction checks nothing
    # against the models, and still refuses an era it cannot speak.
    with pytest.raises(LocalProtocolError, match="unknown MCP era '2024-11-05'"):
        enc.tool_definition(greet, era="2024-11-05")  # type: ignore[arg-type]


def test_encoded_schemas_do_not_alias_the_request() -> None:
    request = _request(tools=[WEATHER])
    out = enc.sampling_params(request, era=MODERN)
    out["tools"][0]["inputSchema"]["properties"].clear()
    assert WEATHER.input_schema["properties"] == {"city": {"type": "string"}}


# --- CreateMessageResult (host side) --------------------------------------------------


def test_a_text_reply_is_one_block_with_model_and_stop_reason() -> None:
    reply = SampleReply(content="Paris.", model="m1", stop_reason="endTurn")
    for era in ERAS:
        out = enc.sample_result(reply, era=era)
        validate(era, "CreateMessageResult", out)
        assert out == {
            "role": "assistant",
            "content": {"type": "text", "text": "Paris."},
            "model": "m1",
            "stopReason": "endTurn",
        }


def test_a_tool_use_reply_is_a_list_and_usage_travels_in_meta() -> None:
    reply = SampleReply(
        content=[ToolUse("c1", "f", {"x": 1}), ToolUse("c2", "f", {"x": 2})],
        model="m1",
        stop_reason="toolUse",
        usage=Usage(12, 3),
    )
    out = enc.sample_result(reply, era=LEGACY)
    validate(LEGACY, "CreateMessageResult", out)
    assert out == {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": "c1", "name": "f", "input": {"x": 1}},
            {"type": "tool_use", "id": "c2", "name": "f", "input": {"x": 2}},
        ],
        "model": "m1",
        "stopReason": "toolUse",
        "_meta": {"io.yieldmcp/usage": {"inputTokens": 12, "outputTokens": 3}},
    }


def test_an_empty_reply_is_an_empty_list() -> None:
    out = enc.sample_result(SampleReply(content=(), model="m"), era=MODERN)
    validate(MODERN, "CreateMessageResult", out)
    assert out["content"] == []


# --- elicitation/create params --------------------------------------------------------

FORM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name", "minLength": 1},
        "email": {"type": "string", "format": "email"},
        "cabin": {
            "type": "string",
            "enum": ["economy", "business"],
            "default": "economy",
        },
        "seat": {
            "type": "string",
            "oneOf": [
                {"const": "w", "title": "Window"},
                {"const": "a", "title": "Aisle"},
            ],
        },
        "bags": {"type": "integer", "minimum": 0, "maximum": 3, "default": 0},
        "budget": {"type": "number"},
        "confirm": {"type": "boolean", "default": True},
        "meals": {
            "type": "array",
            "items": {"type": "string", "enum": ["veg", "fish"]},
            "default": [],
        },
    },
    "required": ["name", "email"],
}


@pytest.mark.parametrize("era", ERAS)
def test_a_form_carries_its_schema_key_and_context(era: enc.Era) -> None:
    request = ElicitationRequest(
        message="Book it?",
        requested_schema=FORM_SCHEMA,
        key="booking",
        context={"flight": "LH123"},
    )
    out = enc.elicitation_params(request, era=era, meta={"progressToken": 7})
    validate(era, "ElicitRequestFormParams", out)
    validate(era, "ElicitRequestParams", out)
    assert out == {
        "mode": "form",
        "message": "Book it?",
        "requestedSchema": FORM_SCHEMA,
        "_meta": {
            "progressToken": 7,
            "io.yieldmcp/key": "booking",
            "x-model-context": {"flight": "LH123"},
        },
    }


def test_a_form_without_key_or_context_has_no_meta() -> None:
    request = ElicitationRequest(message="Name?", requested_schema=FORM_SCHEMA)
    assert "_meta" not in enc.elicitation_params(request, era=MODERN)


class Cabin(StrEnum):
    ECONOMY = "economy"
    BUSINESS = "business"


class Booking(BaseModel):
    name: str = Field(title="Name", min_length=1)
    email: str = Field(json_schema_extra={"format": "email"})
    cabin: Cabin = Cabin.ECONOMY
    seat: Literal["window", "aisle"] = "window"
    bags: int = Field(0, ge=0, le=3)
    budget: float | None = None
    confirm: bool = True
    meals: list[Literal["veg", "fish"]] = Field(default_factory=list)


@pytest.mark.parametrize("era", ERAS)
def test_an_elicit_effect_encodes_validly(era: enc.Era) -> None:
    effect = Elicit(key="booking", message="Book?", model=Booking, context={"n": 1})
    out = enc.elicitation_params(effect.request(), era=era)
    validate(era, "ElicitRequestFormParams", out)
    assert out["requestedSchema"] == effect.requested_schema
    assert out["_meta"] == {"io.yieldmcp/key": "booking", "x-model-context": {"n": 1}}


@given(
    properties=st.dictionaries(st.text(max_size=5), form_fields(), max_size=2),
    required=st.none() | st.lists(st.text(max_size=5), max_size=2),
    era=st.sampled_from(ERAS),
)
def test_a_form_sent_without_the_eras_models_is_valid_mcp(
    properties: dict[str, Any], required: list[str] | None, era: enc.Era
) -> None:
    # A form of plain fields is sent without building the era's models (see
    # runtime.lowlevel.plain_form_properties): what is sent must be valid all
    # the same; what is refused, the models refuse, or schema.json would (a
    # null the models read as absent).
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required is not None:
        schema["required"] = required
    request = ElicitationRequest(message="Form?", requested_schema=schema, key="k")
    try:
        out = enc.elicitation_params(request, era=era)
    except LocalProtocolError:
        try:
            check_form_properties(_models(era), properties)
        except ValidationError:
            return
        assert any(None in field.values() for field in properties.values())
        return
    validate(era, "ElicitRequestFormParams", out)
    check_json(_models(era).ElicitRequestFormParams, out)


def _models(era: str) -> Any:
    return importlib.import_module(_ERA_MODULES[era])


def test_a_url_elicitation_carries_its_id_only_in_2025() -> None:
    effect = ElicitUrl(
        message="Sign in", url="https://x.example/a", elicitation_id="e1"
    )
    legacy = enc.elicitation_params(effect.request(), era=LEGACY)
    modern = enc.elicitation_params(effect.request(), era=MODERN)
    validate(LEGACY, "ElicitRequestURLParams", legacy)
    validate(MODERN, "ElicitRequestURLParams", modern)
    assert legacy == {
        "mode": "url",
        "message": "Sign in",
        "url": "https://x.example/a",
        "elicitationId": "e1",
    }
    assert modern == {"mode": "url", "message": "Sign in", "url": "https://x.example/a"}


def test_a_2025_url_elicitation_without_an_id_is_refused() -> None:
    request = ElicitationRequest(message="Go", mode="url", url="https://x.example")
    with pytest.raises(LocalProtocolError, match="elicitation_id"):
        enc.elicitation_params(request, era=LEGACY)
    assert "elicitationId" not in enc.elicitation_params(request, era=MODERN)


def test_a_url_elicitation_without_a_url_is_refused() -> None:
    with pytest.raises(LocalProtocolError, match="url"):
        enc.elicitation_params(ElicitationRequest(message="Go", mode="url"), era=MODERN)


def test_a_nested_form_schema_is_refused() -> None:
    schema = {
        "type": "object",
        "properties": {"address": {"type": "object", "properties": {}}},
    }
    request = ElicitationRequest(message="Where?", requested_schema=schema)
    with pytest.raises(LocalProtocolError, match="flat"):
        enc.elicitation_params(request, era=MODERN)


def test_the_meta_key_names_are_valid_mcp_meta_keys() -> None:
    # MCP _meta keys: an optional reverse-DNS prefix ending in "/", then a name
    # that starts and ends alphanumeric; "mcp"/"modelcontextprotocol" as the
    # second label is reserved.
    for key in (codec.ELICIT_KEY_META_KEY, codec.CONTEXT_META_KEY):
        assert re.fullmatch(_META_KEY, key), key
        assert key.split("/")[0].split(".")[1:2] not in (
            ["mcp"],
            ["modelcontextprotocol"],
        )


_META_KEY = (
    r"(?:[A-Za-z](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
    r"(?:\.[A-Za-z](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*/)?"
    r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
)


# --- ElicitResult (host side) ---------------------------------------------------------


def test_an_accepted_answer_sends_its_content() -> None:
    out = enc.elicit_result(
        ElicitReply(action="accept", content={"name": "Ada", "meals": ["veg"]})
    )
    assert out == {"action": "accept", "content": {"name": "Ada", "meals": ["veg"]}}
    for era in ERAS:
        validate(era, "ElicitResult", out)


@pytest.mark.parametrize("action", ["decline", "cancel"])
def test_a_refusal_sends_no_content(action: Any) -> None:
    out = enc.elicit_result(ElicitReply(action=action))
    assert out == {"action": action}
    validate(LEGACY, "ElicitResult", out)


def test_a_refusal_with_content_is_refused() -> None:
    with pytest.raises(LocalProtocolError, match="decline"):
        enc.elicit_result(ElicitReply(action="decline", content={"a": 1}))


def test_integral_floats_are_sent_as_integers_to_satisfy_the_schema() -> None:
    out = enc.elicit_result(ElicitReply(action="accept", content={"age": 30.0}))
    assert out["content"] == {"age": 30}
    assert type(out["content"]["age"]) is int
    validate(LEGACY, "ElicitResult", out)


def test_a_fractional_float_answer_hits_the_schema_json_quirk() -> None:
    # The TypeScript schema says `number`; the generated schema.json says
    # `integer` (PROTOCOL.md §3.2). We follow the TypeScript schema.
    out = enc.elicit_result(ElicitReply(action="accept", content={"budget": 30.5}))
    assert out["content"] == {"budget": 30.5}
    for era in ERAS:
        assert not is_valid(era, "ElicitResult", out)


# --- tools/list: Tool definitions -----------------------------------------------------


class Trip(BaseModel):
    """Where to."""

    city: str
    nights: int = 1


class Weather(BaseModel):
    celsius: float
    summary: str


class Names(RootModel[list[str]]):
    pass


@tool(title="Forecast", annotations={"readOnlyHint": True, "openWorldHint": False})
def forecast(params: Trip, ctx: Context) -> Op[Weather]:
    """Tomorrow's weather for the trip."""
    return Weather(celsius=20.5, summary="sunny")
    yield  # pragma: no cover


@tool
def names(ctx: Context) -> Op[Names]:
    """Everyone's name."""
    return Names(["a", "b"])
    yield  # pragma: no cover


@tool
def greet(params: Trip, ctx: Context) -> str:
    """Say hello."""
    return f"Hello {params.city}"


@tool
def anything(ctx: Context):  # no return annotation: what it returns is data
    """Returns whatever the test hands the encoder."""


@pytest.mark.parametrize("era", ERAS)
def test_a_tool_definition_has_schemas_title_and_annotations(era: enc.Era) -> None:
    out = enc.tool_definition(forecast, era=era)
    validate(era, "Tool", out)
    assert out == {
        "name": "forecast",
        "title": "Forecast",
        "description": "Tomorrow's weather for the trip.",
        "inputSchema": {
            "description": "Where to.",
            "properties": {
                "city": {"title": "City", "type": "string"},
                "nights": {"default": 1, "title": "Nights", "type": "integer"},
            },
            "required": ["city"],
            "title": "Trip",
            "type": "object",
        },
        "outputSchema": {
            "properties": {
                "celsius": {"title": "Celsius", "type": "number"},
                "summary": {"title": "Summary", "type": "string"},
            },
            "required": ["celsius", "summary"],
            "title": "Weather",
            "type": "object",
        },
        "annotations": {"readOnlyHint": True, "openWorldHint": False},
    }


@tool(annotations={"readOnlyHint": "yes"})
def badly_annotated(ctx: Context) -> str:
    """Its annotations are not MCP's."""
    return "x"


@tool(title=7)  # type: ignore[arg-type]  # what an untyped caller can pass
def badly_titled(ctx: Context) -> str:
    return "x"


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("broken", [badly_annotated, badly_titled])
def test_a_definition_the_author_broke_is_refused_not_sent(
    era: enc.Era, broken: Any
) -> None:
    # Schemas and constants are valid by construction and not checked again;
    # what the author wrote in (annotations, a title) still is.
    with pytest.raises(LocalProtocolError, match=f"tool '{broken.name}' definition"):
        enc.tool_definition(broken, era=era)


class Quote(BaseModel):
    price: float = math.inf
    currency: str = "EUR"


@dataclasses.dataclass
class Range:
    low: float = -math.inf
    high: float = math.nan


@tool
def search(query: str, max_price: float = math.inf) -> Quote:
    """Its limit's default is no limit, and so is its result's."""
    return Quote()


@tool
def ranged(ctx: Context) -> Range:
    return Range()


@tool
def ranges(ctx: Context) -> list[Range]:
    return [Range()]


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("unbounded", [search, ranged, ranges])
def test_a_non_finite_default_is_not_advertised_so_strict_json_reads_the_list(
    era: enc.Era, unbounded: Any
) -> None:
    # NaN and Infinity are not JSON: one of them in tools/list makes a strict
    # host (JSON.parse, the TypeScript SDK) drop every tool of the server.
    out = enc.tool_definition(unbounded, era=era)
    validate(era, "Tool", out)
    json.dumps(out, allow_nan=False)  # raises on NaN and Infinity
    if unbounded is search:
        assert out["inputSchema"]["properties"]["max_price"] == {
            "title": "Max Price",
            "type": "number",
        }
        assert out["outputSchema"]["properties"]["price"] == {
            "title": "Price",
            "type": "number",
        }
        assert out["outputSchema"]["properties"]["currency"]["default"] == "EUR"


_PROPERTY = st.one_of(
    st.just({}),
    st.fixed_dictionaries(
        {"type": st.sampled_from(["string", "integer", "number", "boolean"])},
        optional={"description": st.text(), "title": st.text()},
    ),
    st.fixed_dictionaries(
        {
            "type": st.just("array"),
            "items": st.fixed_dictionaries({"type": st.just("string")}),
        }
    ),
)


@st.composite
def _authored(draw: st.DrawFn) -> dict[str, Any]:
    """What an author passes ``tool`` with an explicit ``input_schema``: any
    name ``tool`` accepts, any title and description text, any flat object
    schema."""
    properties = draw(
        st.dictionaries(st.text(min_size=1, max_size=12), _PROPERTY, max_size=4)
    )
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if properties and draw(st.booleans()):
        schema["required"] = draw(
            st.lists(st.sampled_from(sorted(properties)), unique=True)
        )
    if draw(st.booleans()):
        schema["additionalProperties"] = draw(st.booleans())
    return {
        "name": draw(st.from_regex(r"[A-Za-z0-9_.\-]{1,128}", fullmatch=True)),
        "title": draw(st.none() | st.text()),
        "description": draw(st.none() | st.text()),
        "input_schema": schema,
    }


def _body(ctx: Context) -> str:
    return "x"


@given(authored=_authored(), era=st.sampled_from(ERAS))
def test_a_definition_trusted_without_the_eras_models_is_valid_mcp(
    authored: dict[str, Any], era: enc.Era
) -> None:
    # tool_definition checks only what is not valid by construction; what it
    # trusts must pass the official schema and the era's models all the same.
    out = enc.tool_definition(tool(_body, **authored), era=era)
    validate(era, "Tool", out)
    check_json(importlib.import_module(_ERA_MODULES[era]).Tool, out)  # as checked()


_ERA_MODULES = {
    "2025-11-25": "mcp_types._v2025_11_25",
    "2026-07-28": "mcp_types._v2026_07_28",
}


def test_a_tool_with_no_return_annotation_has_no_output_schema() -> None:
    out = enc.tool_definition(anything, era=LEGACY)
    validate(LEGACY, "Tool", out)
    assert set(out) == {"name", "description", "inputSchema"}


@pytest.mark.parametrize("era", ERAS)
def test_a_str_output_is_wrapped_in_result_as_the_sdk_does(era: enc.Era) -> None:
    out = enc.tool_definition(greet, era=era)
    validate(era, "Tool", out)
    assert out["outputSchema"] == {
        "properties": {"result": {"title": "Result", "type": "string"}},
        "required": ["result"],
        "title": "greetOutput",
        "type": "object",
    }
    assert _result("Hello Paris", era, greet) == {
        "content": [{"type": "text", "text": "Hello Paris"}],
        "structuredContent": {"result": "Hello Paris"},
        **_complete(era),
    }


def test_a_non_object_output_schema_is_2026_only() -> None:
    legacy = enc.tool_definition(names, era=LEGACY)
    modern = enc.tool_definition(names, era=MODERN)
    validate(LEGACY, "Tool", legacy)
    validate(MODERN, "Tool", modern)
    assert "outputSchema" not in legacy
    assert modern["outputSchema"]["type"] == "array"
    assert modern["inputSchema"]["type"] == "object"


# --- tools/call: CallToolResult -------------------------------------------------------


def _result(value: Any, era: enc.Era, the_tool: Any = anything) -> dict[str, Any]:
    out = enc.tool_result(value, the_tool, era=era)
    validate(era, "CallToolResult", out)
    return out


def _complete(era: enc.Era) -> dict[str, Any]:
    return {"resultType": "complete"} if era == MODERN else {}


@pytest.mark.parametrize("era", ERAS)
def test_a_string_result_is_one_text_block(era: enc.Era) -> None:
    assert _result("Hello Paris", era) == {
        "content": [{"type": "text", "text": "Hello Paris"}],
        **_complete(era),
    }


@pytest.mark.parametrize("era", ERAS)
def test_none_is_a_result_without_content(era: enc.Era) -> None:
    assert _result(None, era) == {"content": [], **_complete(era)}


@pytest.mark.parametrize("era", ERAS)
def test_a_model_result_is_structured_content_plus_its_json_text(era: enc.Era) -> None:
    value = Weather(celsius=20.5, summary="sunny")
    assert _result(value, era, forecast) == {
        "content": [{"type": "text", "text": '{"celsius":20.5,"summary":"sunny"}'}],
        "structuredContent": {"celsius": 20.5, "summary": "sunny"},
        **_complete(era),
    }


def test_a_root_model_list_is_structured_only_in_2026() -> None:
    value = Names(["a", "b"])
    legacy = _result(value, LEGACY, names)
    modern = _result(value, MODERN, names)
    assert legacy == {"content": [{"type": "text", "text": '["a","b"]'}]}
    assert modern["structuredContent"] == ["a", "b"]


@pytest.mark.parametrize("era", ERAS)
def test_a_dict_result_is_structured_in_both_eras(era: enc.Era) -> None:
    assert _result({"n": 1, "é": "ü"}, era) == {
        "content": [{"type": "text", "text": '{"n":1,"é":"ü"}'}],
        "structuredContent": {"n": 1, "é": "ü"},
        **_complete(era),
    }


def test_scalars_and_lists_are_structured_only_in_2026() -> None:
    for value, text in [(42, "42"), ([1, 2], "[1,2]"), (True, "true")]:
        assert _result(value, LEGACY) == {"content": [{"type": "text", "text": text}]}
        assert _result(value, MODERN) == {
            "content": [{"type": "text", "text": text}],
            "structuredContent": value,
            "resultType": "complete",
        }


@pytest.mark.parametrize("era", ERAS)
def test_content_blocks_are_passed_through(era: enc.Era) -> None:
    blocks = [
        Text("see"),
        Image("aW1n", "image/png"),
        Audio("YXVk", "audio/wav"),
        mcp_types.ResourceLink(
            uri="file:///r.txt", name="r.txt", mime_type="text/plain"
        ),
        mcp_types.EmbeddedResource(
            resource=mcp_types.TextResourceContents(uri="file:///r.txt", text="hi")
        ),
    ]
    assert _result(blocks, era) == {
        "content": [
            {"type": "text", "text": "see"},
            {"type": "image", "data": "aW1n", "mimeType": "image/png"},
            {"type": "audio", "data": "YXVk", "mimeType": "audio/wav"},
            {
                "type": "resource_link",
                "uri": "file:///r.txt",
                "name": "r.txt",
                "mimeType": "text/plain",
            },
            {"type": "resource", "resource": {"uri": "file:///r.txt", "text": "hi"}},
        ],
        **_complete(era),
    }
    assert _result(Text("one"), era)["content"] == [{"type": "text", "text": "one"}]


@pytest.mark.parametrize(
    ("value", "match"),
    [
        ([Text("a"), 1], "mixing"),
        (ToolUse("c", "f", {}), "sampling"),
        (object(), "has no JSON form"),
        (float("inf"), "has no JSON form"),
    ],
    ids=["mixed-list", "tool-use", "object", "infinity"],
)
def test_values_a_tool_result_cannot_carry_are_refused(value: Any, match: str) -> None:
    with pytest.raises(LocalProtocolError, match=match):
        enc.tool_result(value, anything, era=MODERN)


def _nested(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize("era", ERAS)
def test_a_result_nested_past_what_a_message_carries_is_refused(era: enc.Era) -> None:
    # The result's own level and {"a": …}'s, then the arrays: 198 is what a
    # result may nest (a message may 200, and a task's result is one level
    # further down). Deeper, the client dropped the reply unread and waited.
    enc.tool_result({"a": _nested(196)}, anything, era=era)
    for levels in (197, 5000):  # 5000: past pydantic's serialiser too
        with pytest.raises(LocalProtocolError) as caught:
            enc.tool_result({"a": _nested(levels)}, anything, era=era)
        assert str(caught.value) == (
            "the result of tool 'anything': JSON nested deeper than the 198 "
            "levels its place in an MCP message leaves (a whole message may "
            "nest 200, the most an MCP reader takes; deeper, it cannot be read)"
        )


def test_a_declared_output_schema_requires_structured_content() -> None:
    with pytest.raises(LocalProtocolError, match="outputSchema"):
        enc.tool_result("not a Weather", forecast, era=LEGACY)


@pytest.mark.parametrize("era", ERAS)
def test_a_tool_error_is_text_with_is_error(era: enc.Era) -> None:
    out = enc.tool_error("City not found", era=era)
    validate(era, "CallToolResult", out)
    assert out == {
        "content": [{"type": "text", "text": "City not found"}],
        "isError": True,
        **_complete(era),
    }


# --- paths without a runtime self-check -----------------------------------------------
# Plain text, structured data and error results, plain-text sampling messages and
# replies are spelled by the encoder from values valid by construction, and not
# validated again when encoded; these properties pin that they are valid MCP.

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False,
    allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)  # fmt: skip


@given(text=st.text(), era=st.sampled_from(ERAS))
def test_text_results_and_errors_are_valid_mcp(text: str, era: enc.Era) -> None:
    validate(era, "CallToolResult", enc.tool_result(text, greet, era=era))
    validate(era, "CallToolResult", enc.tool_result([Text(text)], anything, era=era))
    validate(era, "CallToolResult", enc.tool_error(text, era=era))


@given(value=_json, era=st.sampled_from(ERAS))
def test_structured_results_are_valid_mcp(value: Any, era: enc.Era) -> None:
    validate(era, "CallToolResult", enc.tool_result(value, anything, era=era))


@given(
    texts=st.lists(st.text(), min_size=1, max_size=3),
    system=st.none() | st.text(),
    max_tokens=st.integers(min_value=1, max_value=2**31),
    era=st.sampled_from(ERAS),
)
def test_plain_text_sampling_is_valid_mcp(
    texts: list[str], system: str | None, max_tokens: int, era: enc.Era
) -> None:
    request = SamplingRequest(
        messages=[Message.user(t) for t in texts],
        system_prompt=system,
        max_tokens=max_tokens,
    )
    validate(era, "CreateMessageRequestParams", enc.sampling_params(request, era=era))
    reply = SampleReply(content=[Text(t) for t in texts], model=texts[0])
    validate(era, "CreateMessageResult", enc.sample_result(reply, era=era))


def test_blocks_from_the_tool_are_still_checked() -> None:
    bad = Image("aW1n", "image/png", meta={1: "a key that is not a string"})
    with pytest.raises(LocalProtocolError, match="tool 'anything' result"):
        enc.tool_result([bad], anything, era=MODERN)
    with pytest.raises(LocalProtocolError, match="sampling result"):
        enc.sample_result(SampleReply(content=[bad]), era=LEGACY)
    untyped = SampleReply(content=[Text("hi")], model=None)  # type: ignore[arg-type]
    with pytest.raises(LocalProtocolError, match="model"):
        enc.sample_result(untyped, era=LEGACY)
    with pytest.raises(LocalProtocolError, match="maxTokens"):
        enc.sampling_params(_request(max_tokens="16"), era=LEGACY)  # type: ignore[arg-type]


@pytest.mark.parametrize("era", ERAS)
def test_block_annotations_are_sent_and_read_back(era: enc.Era) -> None:
    notes = {"audience": ["user"], "priority": 0.9}
    blocks = [
        Text("for you", annotations=notes),
        Image("iVBORw0=", "image/png", annotations=notes),
        Audio("UklGRg==", "audio/wav", annotations=notes),
    ]
    sent = _result(blocks, era)["content"]
    assert [b["annotations"] for b in sent] == [notes] * 3
    assert [codec.block_from_json(b) for b in sent] == blocks

"""decoders.mcp: reading what MCP peers send, and round trips with encoders.mcp.

Unit tests pin exact decodes and the RemoteProtocolError cases. Property tests:

* generated sampling requests (valid conversations) encode to schema-valid
  params in both eras and decode back equal, modulo the documented
  normalisation (``NamedTool`` becomes its one tool with choice ``required``);
* generated sample replies round-trip through ``sample_result``/``sample_reply``;
* answers generated from flat form schemas are accepted, mutated ones refused
  with a RemoteProtocolError naming the field;
* on arbitrary JSON (random, or valid payloads with random damage) every
  decoder returns or raises RemoteProtocolError, nothing else.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from typing import Any

import attrs
import jsonschema
import mcp_types
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from decoders import mcp as dec
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
    tool,
)
from runtime.context import Context
from runtime.errors import RemoteProtocolError
from runtime.lowlevel import ElicitReply, SampleReply, Usage
from runtime.requests import ElicitationRequest, SamplingRequest
from tests.mcp_schema import ERAS, is_valid, validate

LEGACY, MODERN = ERAS
HI = {"role": "user", "content": {"type": "text", "text": "Hi"}}


def _wire(value: Any) -> Any:
    """``value`` as it arrives from a peer: through real JSON text."""
    return json.loads(json.dumps(value, allow_nan=False))


def _refused(match: str | None = None) -> Any:
    return pytest.raises(RemoteProtocolError, match=match)


# --- sample_reply ---------------------------------------------------------------------


def test_a_single_block_result_decodes_to_a_reply() -> None:
    reply = dec.sample_reply(
        {
            "role": "assistant",
            "content": {"type": "text", "text": "Paris."},
            "model": "m1",
            "stopReason": "endTurn",
        }
    )
    assert reply == SampleReply(content="Paris.", model="m1", stop_reason="endTurn")


def test_a_list_result_keeps_its_blocks_meta_and_usage() -> None:
    reply = dec.sample_reply(
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me check.", "_meta": {"sig": "s"}},
                {"type": "tool_use", "id": "c1", "name": "f", "input": {"x": 1}},
            ],
            "model": "m1",
            "stopReason": "toolUse",
            "_meta": {"io.yieldmcp/usage": {"inputTokens": 9, "outputTokens": 4}},
        }
    )
    assert reply == SampleReply(
        content=[
            Text("Let me check.", meta={"sig": "s"}),
            ToolUse("c1", "f", {"x": 1}),
        ],
        model="m1",
        stop_reason="toolUse",
        usage=Usage(9, 4),
    )


@pytest.mark.parametrize(
    ("result", "match"),
    [
        ([], "JSON object"),
        ({"role": "assistant", "content": []}, "model"),
        ({"role": "assistant", "content": [{"type": "video"}], "model": "m"}, None),
        ({"role": "user", "content": [], "model": "m"}, "assistant"),
        (
            {"role": "assistant", "content": {"type": "text", "text": 3}, "model": "m"},
            "text",
        ),
        (
            {
                "role": "assistant",
                "content": [],
                "model": "m",
                "_meta": {"io.yieldmcp/usage": {"inputTokens": -1, "outputTokens": 0}},
            },
            "inputTokens",
        ),
        (
            {
                "role": "assistant",
                "content": [],
                "model": "m",
                "_meta": {"io.yieldmcp/usage": "lots"},
            },
            "inputTokens",
        ),
    ],
    ids=[
        "not-an-object",
        "no-model",
        "unknown-block",
        "user-role",
        "text-not-a-string",
        "negative-usage",
        "usage-not-an-object",
    ],
)
def test_a_malformed_sampling_result_is_a_remote_protocol_error(
    result: Any, match: str | None
) -> None:
    with _refused(match):
        dec.sample_reply(result)


def test_a_wire_name_is_required_not_the_python_name() -> None:
    with _refused("stop"):
        dec.sample_reply(
            {"role": "assistant", "content": [], "model": "m", "stopReason": 1}
        )
    snake = {"role": "assistant", "content": [], "model": "m", "stop_reason": "x"}
    assert dec.sample_reply(snake).stop_reason is None  # unknown key, ignored


def test_a_resource_inside_a_tool_result_is_refused_clearly() -> None:
    result = {
        "role": "assistant",
        "model": "m",
        "content": {
            "type": "tool_result",
            "toolUseId": "c1",
            "content": [{"type": "resource_link", "uri": "file:///a", "name": "a"}],
        },
    }
    with _refused("resource_link"):
        dec.sample_reply(result)


# --- elicit_reply ---------------------------------------------------------------------

FORM = ElicitationRequest(
    message="Book?",
    requested_schema={
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1},
            "cabin": {"type": "string", "enum": ["economy", "business"]},
            "bags": {"type": "integer", "minimum": 0, "maximum": 3},
            "budget": {"type": "number"},
            "confirm": {"type": "boolean"},
            "meals": {"type": "array", "items": {"type": "string", "enum": ["veg"]}},
        },
        "required": ["name"],
    },
)


def test_an_accepted_answer_is_validated_and_kept() -> None:
    content = {"name": "Ada", "cabin": "business", "bags": 2, "meals": ["veg"]}
    reply = dec.elicit_reply({"action": "accept", "content": content}, FORM)
    assert reply == ElicitReply(action="accept", content=content)


def test_numbers_follow_the_typescript_schema_not_schema_json() -> None:
    # schema.json types answers as integer (PROTOCOL.md §3.2); a float answers a
    # number field, and an integral float answers an integer field.
    answer = {"action": "accept", "content": {"name": "A", "budget": 30.5, "bags": 2.0}}
    assert dec.elicit_reply(answer, FORM).content == answer["content"]
    assert not is_valid(MODERN, "ElicitResult", answer)


@pytest.mark.parametrize(
    ("content", "field"),
    [
        ({}, "name"),
        ({"name": ""}, "name"),
        ({"name": "A", "cabin": "first"}, "cabin"),
        ({"name": "A", "bags": 4}, "bags"),
        ({"name": "A", "bags": 1.5}, "bags"),
        ({"name": "A", "confirm": "yes"}, "confirm"),
        ({"name": "A", "meals": ["fish"]}, "meals"),
        ({"name": None}, "name"),
    ],
)
def test_an_answer_that_breaks_the_schema_names_the_field(
    content: dict[str, Any], field: str
) -> None:
    with _refused(f"field '{field}'"):
        dec.elicit_reply({"action": "accept", "content": content}, FORM)


def test_an_accept_without_content_is_checked_as_an_empty_form() -> None:
    with _refused("field 'name' is required"):
        dec.elicit_reply({"action": "accept"}, FORM)
    optional = ElicitationRequest(
        message="Any?", requested_schema={"type": "object", "properties": {}}
    )
    assert dec.elicit_reply({"action": "accept"}, optional).content is None


@pytest.mark.parametrize("action", ["decline", "cancel"])
def test_a_refusal_carries_no_content(action: Any) -> None:
    reply = dec.elicit_reply({"action": action, "content": {"name": 5}}, FORM)
    assert reply == ElicitReply(action=action)


def test_a_url_answer_carries_no_content() -> None:
    url = ElicitationRequest(message="Go", mode="url", url="https://x.example")
    reply = dec.elicit_reply({"action": "accept", "content": {"a": "b"}}, url)
    assert reply == ElicitReply(action="accept")


@pytest.mark.parametrize(
    "result",
    [
        {"action": "maybe"},
        {"content": {}},
        {"action": "accept", "content": {"name": {"nested": 1}}},
        "accept",
    ],
)
def test_a_malformed_elicitation_result_is_refused(result: Any) -> None:
    with _refused():
        dec.elicit_reply(result, FORM)


@pytest.mark.parametrize(
    "result",
    [
        {"action": "accept", "content": {"name": "Ada", "bags": 2}},
        {"action": "accept", "content": {"name": "A", "bags": 4}},
        {"action": "accept"},
        {"action": "decline", "content": {"name": 5}},
        {"action": "maybe"},
        "accept",
    ],
)
def test_form_reply_reads_a_form_answer_as_elicit_reply_does(result: Any) -> None:
    def outcome(read: Callable[[], ElicitReply]) -> object:
        try:
            return read()
        except RemoteProtocolError as exc:
            return str(exc)

    schema = FORM.requested_schema
    assert outcome(lambda: dec.form_reply(result, schema)) == outcome(
        lambda: dec.elicit_reply(result, FORM)
    )


# --- sampling_request (host side) -----------------------------------------------------


def test_sampling_params_decode_field_by_field() -> None:
    request = dec.sampling_request(
        {
            "messages": [HI],
            "maxTokens": 50,
            "systemPrompt": "Be brief.",
            "temperature": 1,
            "stopSequences": ["END"],
            "modelPreferences": {
                "hints": [{"name": "claude"}, {}],
                "speedPriority": 0.5,
            },
            "includeContext": "none",
            "metadata": {"k": "v"},
            "tools": [
                {
                    "name": "f",
                    "title": "F",
                    "inputSchema": {"type": "object"},
                    "annotations": {"readOnlyHint": True},
                }
            ],
            "toolChoice": {"mode": "none"},
            "_meta": {"progressToken": 1},
        }
    )
    assert request == SamplingRequest(
        messages=[Message.user("Hi")],
        max_tokens=50,
        system_prompt="Be brief.",
        temperature=1,
        stop_sequences=["END"],
        model_preferences=ModelPreferences(hints=["claude"], speed_priority=0.5),
        include_context="none",
        metadata={"k": "v"},
        tools=[ToolSpec(name="f", input_schema={"type": "object"})],
        tool_choice="none",
    )


def test_an_empty_tool_choice_reads_as_no_choice() -> None:
    params = {
        "messages": [HI],
        "maxTokens": 5,
        "tools": [{"name": "f", "inputSchema": {"type": "object"}}],
        "toolChoice": {},
    }
    assert dec.sampling_request(params).tool_choice is None


@pytest.mark.parametrize(
    ("messages", "match"),
    [
        ([], "at least one message"),
        (
            [
                HI,
                {
                    "role": "assistant",
                    "content": {
                        "type": "tool_use",
                        "id": "c",
                        "name": "f",
                        "input": {},
                    },
                },
            ],
            "tool_result",
        ),
        (
            [
                {
                    "role": "assistant",
                    "content": {
                        "type": "tool_use",
                        "id": "c",
                        "name": "f",
                        "input": {},
                    },
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "toolUseId": "c", "content": []},
                        {"type": "text", "text": "and also"},
                    ],
                },
            ],
            "only ToolResult",
        ),
        (
            [
                {
                    "role": "user",
                    "content": {
                        "type": "tool_use",
                        "id": "c",
                        "name": "f",
                        "input": {},
                    },
                }
            ],
            "only the assistant",
        ),
    ],
    ids=["empty", "unanswered-tool-use", "mixed-tool-results", "user-tool-use"],
)
def test_a_conversation_breaking_mcp_tool_rules_is_refused(
    messages: list[Any], match: str
) -> None:
    with _refused(match):
        dec.sampling_request({"messages": messages, "maxTokens": 5})


@pytest.mark.parametrize(
    "params",
    [
        {"messages": [HI]},
        {"messages": [HI], "maxTokens": "100"},
        {"messages": [HI], "maxTokens": True},
        {"messages": [HI], "max_tokens": 5},
        {
            "messages": [HI],
            "maxTokens": 5,
            "tools": [{"name": "bad name", "inputSchema": {"type": "object"}}],
        },
        {"messages": [HI], "maxTokens": 5, "tools": [{"name": "f"}]},
        {"messages": [HI], "maxTokens": 5, "toolChoice": {"mode": "any"}},
        {"messages": [HI], "maxTokens": 5, "modelPreferences": {"costPriority": 3}},
    ],
    ids=[
        "no-max-tokens",
        "string-max-tokens",
        "bool-max-tokens",
        "python-name",
        "bad-tool-name",
        "tool-without-schema",
        "unknown-choice",
        "priority-out-of-range",
    ],
)
def test_malformed_sampling_params_are_refused(params: Any) -> None:
    with _refused():
        dec.sampling_request(params)


# --- elicitation_request (host side) --------------------------------------------------


def test_a_form_request_recovers_key_and_context_from_meta() -> None:
    params = enc.elicitation_params(
        ElicitationRequest(
            message="Book?",
            requested_schema=FORM.requested_schema,
            key="booking",
            context={"flight": "LH1"},
        ),
        era=LEGACY,
        meta={"progressToken": 1},
    )
    assert dec.elicitation_request(_wire(params)) == ElicitationRequest(
        message="Book?",
        requested_schema=FORM.requested_schema,
        key="booking",
        context={"flight": "LH1"},
    )


def test_a_url_request_keeps_its_id_in_2025_and_has_none_in_2026() -> None:
    legacy = {"mode": "url", "message": "Go", "url": "https://x", "elicitationId": "e"}
    assert dec.elicitation_request(legacy) == ElicitationRequest(
        message="Go", mode="url", url="https://x", elicitation_id="e"
    )
    modern = {"mode": "url", "message": "Go", "url": "https://x"}
    assert dec.elicitation_request(modern).elicitation_id is None


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"mode": "chat", "message": "x"}, "mode"),
        ({"message": "x"}, "requestedSchema"),
        ({"mode": "url", "message": "x"}, "url"),
        (
            {
                "message": "x",
                "requestedSchema": {
                    "type": "object",
                    "properties": {"a": {"type": "object"}},
                },
            },
            "flat",
        ),
        (
            {
                "message": "x",
                "requestedSchema": {
                    "type": "object",
                    "properties": {"a": {"type": "string", "minLength": -1}},
                },
            },
            "JSON Schema",
        ),
        (
            {
                "message": "x",
                "requestedSchema": {"type": "object", "properties": {}},
                "_meta": {"io.yieldmcp/key": 3},
            },
            "io.yieldmcp/key",
        ),
        (
            {
                "message": "x",
                "requestedSchema": {"type": "object", "properties": {}},
                "_meta": {"x-model-context": []},
            },
            "x-model-context",
        ),
        (
            {
                "message": "x",
                "requestedSchema": {"type": "object", "properties": {}},
                "_meta": 5,
            },
            "_meta",
        ),
        (
            {"mode": "url", "message": "x", "url": "u", "elicitationId": 4},
            "elicitationId",
        ),
    ],
    ids=[
        "unknown-mode",
        "no-schema",
        "no-url",
        "nested",
        "bad-schema",
        "key-not-str",
        "context-not-object",
        "meta-not-object",
        "id-not-str",
    ],
)
def test_malformed_elicitation_params_are_refused(params: Any, match: str) -> None:
    with _refused(match):
        dec.elicitation_request(params)


def test_a_form_schema_is_judged_the_same_every_time_it_is_sent() -> None:
    # The metaschema check is made once per distinct schema (it is by far the
    # dearest part of decoding a request); its verdict must not change.
    def form(min_length: int) -> dict[str, Any]:
        field = {"type": "string", "minLength": min_length}
        schema = {"type": "object", "properties": {"a": field}}
        return {"message": "x", "requestedSchema": schema}

    refusals: list[str] = []
    for _ in range(3):
        with _refused("not a valid JSON Schema") as refused:
            dec.elicitation_request(form(-1))
        refusals.append(str(refused.value))
        accepted = dec.elicitation_request(form(1))
        assert accepted.requested_schema == form(1)["requestedSchema"]
    assert refusals == [refusals[0]] * 3


# --- call_tool_result (client side) ---------------------------------------------------


def test_a_2025_result_without_result_type_decodes() -> None:
    decoded = dec.call_tool_result(
        {
            "content": [
                {"type": "text", "text": "see "},
                {"type": "image", "data": "aW1n", "mimeType": "image/png"},
                {"type": "text", "text": "this"},
            ],
            "structuredContent": {"n": 1},
        }
    )
    assert decoded == dec.ToolCallResult(
        content=(Text("see "), Image("aW1n", "image/png"), Text("this")),
        structured_content={"n": 1},
    )
    assert decoded.text == "see this"


def test_resources_decode_to_the_official_models() -> None:
    link = {"type": "resource_link", "uri": "file:///a", "name": "a", "size": 3}
    embedded = {
        "type": "resource",
        "resource": {"uri": "file:///b", "blob": "YmxvYg==", "mimeType": "x/y"},
    }
    decoded = dec.call_tool_result(
        {"content": [link, embedded], "isError": True, "resultType": "complete"}
    )
    assert decoded.is_error
    assert decoded.content == (
        mcp_types.ResourceLink(uri="file:///a", name="a", size=3),
        mcp_types.EmbeddedResource(
            resource=mcp_types.BlobResourceContents(
                uri="file:///b", blob="YmxvYg==", mime_type="x/y"
            )
        ),
    )


@pytest.mark.parametrize(
    ("result", "match"),
    [
        ({"resultType": "input_required", "requestState": "s"}, None),
        ({"resultType": "task", "content": []}, "task"),
        (
            {"content": [{"type": "tool_use", "id": "c", "name": "f", "input": {}}]},
            None,
        ),
        ({"content": "text"}, None),
        ({"content": [], "isError": "yes"}, "isError"),
        ({"content": [], "structuredContent": [1], "resultType": 5}, None),
    ],
    ids=[
        "input-required",
        "task",
        "tool-use-block",
        "content-not-a-list",
        "is-error-not-bool",
        "bad-result-type",
    ],
)
def test_a_malformed_or_interim_tool_result_is_refused(
    result: Any, match: str | None
) -> None:
    with _refused(match):
        dec.call_tool_result(result)


class _Weather(BaseModel):
    celsius: float
    summary: str


@tool
def _forecast(ctx: Context) -> _Weather:
    return _Weather(celsius=1.5, summary="cold")


@tool
def _greet(ctx: Context):  # no return annotation: blocks or data, as returned
    return "hi"


@pytest.mark.parametrize("era", ERAS)
def test_a_tool_result_decodes_back_on_the_client(era: enc.Era) -> None:
    value = _Weather(celsius=1.5, summary="cold")
    decoded = dec.call_tool_result(enc.tool_result(value, _forecast, era=era))
    assert decoded.structured_content == value.model_dump()
    assert _Weather.model_validate_json(decoded.text) == value
    link = mcp_types.ResourceLink(uri="file:///a", name="a")
    assert dec.call_tool_result(enc.tool_result([link], _greet, era=era)).content == (
        link,
    )


# --- Hypothesis: strategies -----------------------------------------------------------

_json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
_json = st.recursive(
    _json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
_objects = st.dictionaries(st.text(max_size=5), _json, max_size=3)
_meta = st.none() | _objects
_texts = st.text(max_size=20)
_names = st.from_regex(r"\A[A-Za-z0-9_.\-]{1,12}\Z")
_mimes = st.sampled_from(["image/png", "image/jpeg", "audio/wav", "x/y"])


def _media(kind: type[Image] | type[Audio]) -> st.SearchStrategy[Any]:
    return st.builds(kind, st.text(max_size=12), _mimes, meta=_meta)


_plain_blocks = st.one_of(
    st.builds(Text, _texts, meta=_meta), _media(Image), _media(Audio)
)


@st.composite
def _tool_result(draw: st.DrawFn, tool_use_id: str, era: str) -> ToolResult:
    structured = draw(st.none() | (_objects if era == LEGACY else _json))
    return ToolResult(
        tool_use_id,
        draw(st.lists(_plain_blocks, max_size=2)),
        is_error=draw(st.booleans()),
        structured_content=structured,
        meta=draw(_meta),
    )


@st.composite
def conversations(
    draw: st.DrawFn, era: str, tool_names: list[str]
) -> tuple[Message, ...]:
    """Valid MCP sampling conversations: every tool use answered next turn."""
    messages: list[Message] = []
    ids = iter(range(10**6))
    for _ in range(draw(st.integers(1, 4))):
        turn = draw(st.sampled_from(["user", "assistant", "tools"]))
        plain = tuple(draw(st.lists(_plain_blocks, max_size=3)))
        if turn != "tools" or not tool_names:
            messages.append(
                Message("assistant" if turn == "assistant" else "user", plain)
            )
            continue
        uses = [
            ToolUse(
                f"call_{next(ids)}",
                draw(st.sampled_from(tool_names)),
                draw(_objects),
                meta=draw(_meta),
            )
            for _ in range(draw(st.integers(1, 3)))
        ]
        answers = [draw(_tool_result(u.id, era)) for u in draw(st.permutations(uses))]
        messages.append(Message("assistant", (*plain, *uses)))
        messages.append(Message("user", tuple(answers)))
    return tuple(messages)


_tool_specs = st.builds(
    ToolSpec,
    name=_names,
    description=st.none() | _texts,
    input_schema=st.just({"type": "object", "properties": {"q": {"type": "string"}}})
    | st.just({"type": "object", "additionalProperties": False}),
)
_priority = st.none() | st.floats(0, 1)
_preferences = st.builds(
    ModelPreferences,
    hints=st.lists(_texts, max_size=3),
    cost_priority=_priority,
    speed_priority=_priority,
    intelligence_priority=_priority,
)


@st.composite
def sampling_requests(draw: st.DrawFn, era: str) -> SamplingRequest:
    tools = draw(st.lists(_tool_specs, max_size=3, unique_by=lambda t: t.name))
    names = [t.name for t in tools]
    choices: st.SearchStrategy[Any] = st.none()
    if tools:
        choices = st.sampled_from([None, "auto", "required", "none"]) | st.sampled_from(
            names
        ).map(NamedTool)
    return SamplingRequest(
        messages=draw(conversations(era, names)),
        system_prompt=draw(st.none() | _texts),
        max_tokens=draw(st.integers(1, 10**6)),
        temperature=draw(st.none() | st.floats(0, 2)),
        stop_sequences=draw(st.lists(_texts, max_size=2)),
        model_preferences=draw(st.none() | _preferences),
        include_context=draw(
            st.sampled_from([None, "none", "thisServer", "allServers"])
        ),
        tools=tools,
        tool_choice=draw(choices),
        metadata=draw(st.none() | _objects),
    )


def _normalised(request: SamplingRequest) -> SamplingRequest:
    """What MCP can carry: a named choice is its one tool, required."""
    choice = request.tool_choice
    if not isinstance(choice, NamedTool):
        return request
    tools = tuple(t for t in request.tools if t.name == choice.name)
    return attrs.evolve(request, tools=tools, tool_choice="required")


_reply_blocks = st.one_of(
    _plain_blocks,
    st.builds(ToolUse, st.text(max_size=8), _names, _objects, meta=_meta),
)
sample_replies = st.builds(
    SampleReply,
    content=st.lists(_reply_blocks, max_size=3),
    model=_texts,
    stop_reason=st.none()
    | st.sampled_from(["endTurn", "toolUse", "maxTokens"])
    | _texts,
    usage=st.none() | st.builds(Usage, st.integers(0, 10**7), st.integers(0, 10**7)),
)


# --- Hypothesis: properties -----------------------------------------------------------


@given(st.data())
def test_generated_requests_encode_validly_and_decode_back(data: st.DataObject) -> None:
    era = data.draw(st.sampled_from(ERAS))
    request = data.draw(sampling_requests(era))
    params = enc.sampling_params(request, era=era)
    validate(era, "CreateMessageRequestParams", _schema_json_view(era, params))
    assert dec.sampling_request(_wire(params)) == _normalised(request)


def _schema_json_view(era: str, params: dict[str, Any]) -> dict[str, Any]:
    """``params`` minus metadata the 2026 schema.json wrongly refuses.

    Its ``JSONValue`` omits ``null`` and non-integer numbers, which the
    TypeScript schema (and mcp-types) allow; see the encoder tests.
    """
    if era == MODERN and _outside_schema_json(params.get("metadata")):
        return {k: v for k, v in params.items() if k != "metadata"}
    return params


def _outside_schema_json(value: Any) -> bool:
    if isinstance(value, dict):
        return any(_outside_schema_json(v) for v in value.values())
    if isinstance(value, list):
        return any(_outside_schema_json(v) for v in value)
    return value is None or (isinstance(value, float) and not value.is_integer())


@given(st.sampled_from(ERAS), sample_replies)
def test_generated_replies_round_trip(era: enc.Era, reply: SampleReply) -> None:
    result = enc.sample_result(reply, era=era)
    validate(era, "CreateMessageResult", result)
    assert dec.sample_reply(_wire(result)) == reply


_FIELD_KINDS = ["string", "number", "integer", "boolean", "enum", "titled", "multi"]


@st.composite
def flat_fields(draw: st.DrawFn) -> dict[str, Any]:
    """One primitive field of an MCP form schema."""
    kind = draw(st.sampled_from(_FIELD_KINDS))
    options = draw(
        st.lists(st.text(min_size=1, max_size=6), min_size=1, max_size=4, unique=True)
    )
    if kind == "string":
        low = draw(st.integers(0, 3))
        return {
            "type": "string",
            "minLength": low,
            "maxLength": low + draw(st.integers(0, 5)),
        }
    if kind in ("number", "integer"):
        low = draw(st.integers(-100, 100))
        return {"type": kind, "minimum": low, "maximum": low + draw(st.integers(0, 50))}
    if kind == "boolean":
        return {"type": "boolean", "default": draw(st.booleans())}
    if kind == "enum":
        return {"type": "string", "enum": options, "default": options[0]}
    if kind == "titled":
        return {
            "type": "string",
            "oneOf": [{"const": o, "title": o.upper()} for o in options],
        }
    return {"type": "array", "items": {"type": "string", "enum": options}}


@st.composite
def forms(draw: st.DrawFn) -> dict[str, Any]:
    properties = draw(st.dictionaries(_names, flat_fields(), min_size=1, max_size=5))
    required = draw(st.lists(st.sampled_from(sorted(properties)), unique=True))
    return {"type": "object", "properties": properties, "required": required}


def _value(field: dict[str, Any]) -> st.SearchStrategy[Any]:
    kind = field["type"]
    if "enum" in field:
        return st.sampled_from(field["enum"])
    if "oneOf" in field:
        return st.sampled_from([o["const"] for o in field["oneOf"]])
    if kind == "string":
        return st.text(min_size=field["minLength"], max_size=field["maxLength"])
    if kind == "integer":
        return st.integers(field["minimum"], field["maximum"])
    if kind == "number":
        return st.floats(field["minimum"], field["maximum"]) | st.integers(
            field["minimum"], field["maximum"]
        )
    if kind == "boolean":
        return st.booleans()
    return st.lists(st.sampled_from(field["items"]["enum"]), unique=True)


@st.composite
def answers(draw: st.DrawFn, schema: dict[str, Any]) -> dict[str, Any]:
    content: dict[str, Any] = {}
    for name, field in schema["properties"].items():
        if name in schema["required"] or draw(st.booleans()):
            content[name] = draw(_value(field))
    return content


def _fractional(content: dict[str, Any]) -> bool:
    return any(isinstance(v, float) and not v.is_integer() for v in content.values())


@given(st.data())
def test_answers_generated_from_a_form_are_accepted(data: st.DataObject) -> None:
    schema = data.draw(forms())
    request = ElicitationRequest(message="Fill in", requested_schema=schema)
    for era in ERAS:
        validate(
            era, "ElicitRequestFormParams", enc.elicitation_params(request, era=era)
        )
    content = data.draw(answers(schema))
    reply = dec.elicit_reply(_wire({"action": "accept", "content": content}), request)
    assert reply == ElicitReply(action="accept", content=content)
    result = enc.elicit_result(reply)
    if not _fractional(content):  # the schema.json quirk, PROTOCOL.md §3.2
        validate(LEGACY, "ElicitResult", result)


def _wrong_type(field: dict[str, Any]) -> Any:
    return "not-a-number" if field["type"] in ("number", "integer", "boolean") else 7


@st.composite
def broken_answers(
    draw: st.DrawFn, schema: dict[str, Any]
) -> tuple[dict[str, Any], str]:
    content = draw(answers(schema))
    name = draw(st.sampled_from(sorted(schema["properties"])))
    field = schema["properties"][name]
    ways = ["wrong-type", "null"]
    if name in schema["required"]:
        ways.append("missing")
    if "enum" in field or "oneOf" in field:
        ways.append("not-an-option")
    if field["type"] in ("number", "integer"):
        ways.append("too-big")
    if field["type"] == "integer":
        ways.append("fraction")
    way = draw(st.sampled_from(ways))
    if way == "missing":
        content.pop(name, None)
    else:
        content[name] = {
            "wrong-type": _wrong_type(field),
            "null": None,
            "not-an-option": "\x00none of these",
            "too-big": field.get("maximum", 0) + 1,
            "fraction": 0.5 + field.get("minimum", 0),
        }[way]
    return content, name


@given(st.data())
def test_mutated_answers_are_refused_naming_the_field(data: st.DataObject) -> None:
    schema = data.draw(forms())
    request = ElicitationRequest(message="Fill in", requested_schema=schema)
    content, name = data.draw(broken_answers(schema))
    with pytest.raises(RemoteProtocolError) as info:
        dec.elicit_reply(_wire({"action": "accept", "content": content}), request)
    assert "field " in str(info.value)
    # The first error (by path) is reported; the broken field is one of them.
    assert any(repr(n) in str(info.value) for n in schema["properties"])
    if not _other_errors(schema, content, name):
        assert f"field {name!r}" in str(info.value)


def _other_errors(schema: dict[str, Any], content: dict[str, Any], name: str) -> bool:
    validator = jsonschema.Draft202012Validator(schema)
    return any(
        (list(e.path) or [None])[0] not in (name, None)
        for e in validator.iter_errors(content)
    )


# --- Hypothesis: decoders on arbitrary input ------------------------------------------


def _valid_payloads() -> list[tuple[str, Any]]:
    request = SamplingRequest(
        messages=(
            Message.user("Hi", Image("aW1n", "image/png")),
            Message.assistant(ToolUse("c1", "f", {"a": 1})),
            Message.user(ToolResult("c1", "ok", structured_content={"x": 1})),
        ),
        tools=(ToolSpec(name="f"),),
        tool_choice="auto",
        model_preferences=ModelPreferences(hints=["m"], cost_priority=0.5),
    )
    reply = SampleReply(
        content=[Text("t"), ToolUse("c", "f", {})], model="m", usage=Usage(1, 2)
    )
    form = ElicitationRequest(
        message="m", requested_schema=FORM.requested_schema, key="k", context={"c": 1}
    )
    url = ElicitationRequest(
        message="m", mode="url", url="https://x", elicitation_id="e"
    )
    return [
        ("sampling", enc.sampling_params(request, era=LEGACY)),
        ("reply", enc.sample_result(reply, era=LEGACY)),
        ("elicitation", enc.elicitation_params(form, era=LEGACY)),
        ("elicitation", enc.elicitation_params(url, era=LEGACY)),
        ("answer", {"action": "accept", "content": {"name": "A", "bags": 1}}),
        (
            "tool",
            {"content": [{"type": "text", "text": "x"}], "resultType": "complete"},
        ),
    ]


_DECODERS: dict[str, Any] = {
    "sampling": dec.sampling_request,
    "reply": dec.sample_reply,
    "elicitation": dec.elicitation_request,
    "answer": lambda value: dec.elicit_reply(value, FORM),
    "tool": dec.call_tool_result,
}


def _decode_or_refuse(decoder: Any, value: Any) -> None:
    with contextlib.suppress(RemoteProtocolError):
        decoder(value)


@given(st.sampled_from(sorted(_DECODERS)), _json)
def test_decoders_refuse_random_json_with_remote_protocol_errors_only(
    name: str, value: Any
) -> None:
    _decode_or_refuse(_DECODERS[name], value)


@st.composite
def damaged(draw: st.DrawFn, value: Any) -> Any:
    """``value`` with one node replaced by random JSON, or one key removed."""
    if isinstance(value, dict) and value and draw(st.integers(0, 3)) > 0:
        key = draw(st.sampled_from(sorted(value)))
        copy = dict(value)
        if draw(st.booleans()):
            copy[key] = draw(damaged(value[key]))
        else:
            del copy[key]
        return copy
    if isinstance(value, list) and value and draw(st.integers(0, 3)) > 0:
        index = draw(st.integers(0, len(value) - 1))
        return [*value[:index], draw(damaged(value[index])), *value[index + 1 :]]
    return draw(_json)


@given(st.data())
def test_decoders_refuse_damaged_payloads_with_remote_protocol_errors_only(
    data: st.DataObject,
) -> None:
    name, payload = data.draw(st.sampled_from(_valid_payloads()))
    _decode_or_refuse(_DECODERS[name], data.draw(damaged(payload)))


def test_the_damage_strategy_starts_from_valid_payloads() -> None:
    for name, payload in _valid_payloads():
        _DECODERS[name](payload)

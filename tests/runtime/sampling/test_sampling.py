"""Sampling results: text, tool calls, structured output, exchanges, retries."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, Field

from runtime import (
    Context,
    Message,
    NamedTool,
    Op,
    SampleValidationError,
    Text,
    ToolCall,
    ToolResult,
    ToolSpec,
    ToolUse,
    tool,
)
from runtime.lowlevel import InvalidEffect, InvalidMessages, SampleReply, Usage
from runtime.testing import ScriptedPeer, run_scripted, structured, text, tool_calls

ctx = Context()


class Move(BaseModel):
    cell: int = Field(ge=0, le=8)


LOOKUP = ToolSpec(
    name="lookup",
    input_schema={
        "type": "object",
        "properties": {"q": {"type": "string"}},
        "required": ["q"],
    },
)


def one(effect: object, reply: SampleReply, key: str = "0") -> object:
    return effect.resolve(reply, key)  # type: ignore[attr-defined]


def test_plain_text_result_and_its_two_message_exchange() -> None:
    sample = ctx.sample("hello", system_prompt="be brief")
    result = sample.resolve(text("hi there", model="m1"), "0")
    assert (result.text, result.model, result.stop_reason) == (
        "hi there",
        "m1",
        "endTurn",
    )
    assert result.tool_calls == ()
    assert result.exchange.messages == (
        Message.user("hello"),
        Message.assistant("hi there"),
    )
    assert result.exchange.history == result.exchange.messages


def test_tool_calls_come_back_with_tool_use_stop_reason() -> None:
    sample = ctx.sample("find x", tools=[LOOKUP])
    reply = SampleReply(
        content=(ToolUse("c1", "lookup", {"q": "x"}),), stop_reason="other"
    )
    result = sample.resolve(reply, "0")
    assert [(c.id, c.name, dict(c.arguments)) for c in result.tool_calls] == [
        ("c1", "lookup", {"q": "x"})
    ]
    assert result.stop_reason == "toolUse"
    assert len(result.exchange.messages) == 2


def test_structured_output_is_read_from_the_schema_tool_call() -> None:
    result = ctx.sample("move?", schema=Move).resolve(structured({"cell": 4}), "0")
    assert result.parsed == Move(cell=4)
    assert result.parse_error is None
    request, use, ack = result.exchange.messages
    assert request == Message.user("move?")
    assert isinstance(use.content[0], ToolUse)
    assert use.content[0].name == "__schema__"
    assert ack == Message("user", (ToolResult(use.content[0].id, "Received."),))


@pytest.mark.parametrize(
    "prose",
    [
        '{"cell": 2}',
        'Sure! ```json\n{"cell": 2}\n``` good luck',
        'My move is {"cell": 2}.',
    ],
)
def test_structured_output_is_also_read_from_json_text(prose: str) -> None:
    result = ctx.sample("move?", schema=Move).resolve(text(prose), "3.1/2")
    assert result.parsed == Move(cell=2)
    _request, use, _ack = result.exchange.messages
    assert use.content == (ToolUse("call_3_1_2", "__schema__", {"cell": 2}),)


def test_invalid_structured_output_is_a_parse_error_not_an_exception() -> None:
    result = ctx.sample("move?", schema=Move).resolve(structured({"cell": 11}), "0")
    assert result.parsed is None
    assert result.parse_error is not None
    assert "cell" in result.parse_error.message
    assert result.parse_error.raw_text == '{"cell":11}'
    ack = result.exchange.messages[2].content[0]
    assert isinstance(ack, ToolResult)
    assert ack.is_error


def test_prose_without_json_is_a_parse_error_with_a_two_message_exchange() -> None:
    result = ctx.sample("move?", schema=Move).resolve(text("the middle one"), "0")
    assert result.parse_error is not None
    assert result.parse_error.raw_text == "the middle one"
    assert len(result.exchange.messages) == 2


def test_schema_and_tools_are_mutually_exclusive() -> None:
    with pytest.raises(InvalidEffect, match="mutually exclusive"):
        ctx.sample("x", schema=Move, tools=[LOOKUP])  # type: ignore[call-overload]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({}, "exactly one of"),
        ({"prompt": "x", "messages": [Message.user("x")]}, "exactly one of"),
        ({"prompt": "x", "tool_choice": "required"}, "needs `tools`"),
        (
            {"prompt": "x", "tools": [LOOKUP], "tool_choice": NamedTool("nope")},
            "not among",
        ),
        (
            {"prompt": "x", "tools": [LOOKUP], "tool_choice": "sometimes"},
            "tool_choice must",
        ),
        ({"prompt": "x", "tools": [LOOKUP, LOOKUP]}, "unique"),
        ({"prompt": "x", "tools": [ToolSpec(name="__schema__")]}, "reserved"),
        ({"prompt": "x", "max_tokens": 0}, "max_tokens"),
        ({"prompt": "x", "temperature": -1.0}, "temperature"),
    ],
)
def test_bad_sample_arguments_fail_where_the_sample_is_built(
    kwargs: dict[str, object], match: str
) -> None:
    with pytest.raises(InvalidEffect, match=match):
        ctx.sample(**kwargs)  # type: ignore[call-overload]


def test_every_field_reaches_the_request() -> None:
    sample = ctx.sample(
        "x", tools=[LOOKUP], tool_choice=NamedTool("lookup"), system_prompt="s",
        max_tokens=7, temperature=0.5, stop_sequences=["END"],
        include_context="thisServer", metadata={"k": 1},
    )  # fmt: skip
    request = sample.request()
    assert (request.system_prompt, request.max_tokens, request.temperature) == (
        "s",
        7,
        0.5,
    )
    assert request.stop_sequences == ("END",)
    assert request.tool_choice == NamedTool("lookup")
    assert request.tools == (LOOKUP,)
    assert request.include_context == "thisServer"
    assert request.metadata == {"k": 1}


def test_a_schema_request_offers_only_the_schema_tool_as_required() -> None:
    request = ctx.sample("x", schema=Move).request()
    assert request.tool_choice == "required"
    assert [t.name for t in request.tools] == ["__schema__"]
    assert request.tools[0].input_schema == Move.model_json_schema()
    assert request.schema_tool is request.tools[0]


# --- sample_schema / sample_tools ---------------------------------------------------


@tool
def pick(ctx: Context) -> Op[int]:
    move = yield from ctx.sample_schema("pick a cell", schema=Move, retries=2)
    return move.parsed.cell * 10 + move.attempts


def test_sample_schema_retries_with_a_hint_until_valid() -> None:
    peer = ScriptedPeer(
        samples=[text("no idea"), structured({"cell": 9}), structured({"cell": 5})]
    )
    assert run_scripted(pick, {}, peer) == 53
    first, second, third = peer.samples
    assert first.messages == (Message.user("pick a cell"),)
    hint = second.messages[-1]
    assert hint.role == "user"
    assert "not valid" in hint.text
    error_ack = third.messages[-1].content[0]
    assert isinstance(error_ack, ToolResult)
    assert error_ack.is_error
    assert "cell" in error_ack.content[0].text  # type: ignore[union-attr]


def test_sample_schema_gives_up_with_sample_validation_error() -> None:
    peer = ScriptedPeer(samples=[text("a"), text("b"), text("c")])
    with pytest.raises(SampleValidationError) as info:
        run_scripted(pick, {}, peer)
    assert (info.value.method, info.value.attempts) == ("sample_schema", 3)
    assert info.value.last_result.text == "c"


@tool
def choose(ctx: Context) -> Op[str]:
    result = yield from ctx.sample_tools("choose", tools=[LOOKUP], retries=2)
    return f"{result.tool_calls[0].arguments['q']}@{result.attempts}"


def test_sample_tools_retries_unknown_tools_and_bad_arguments() -> None:
    peer = ScriptedPeer(
        samples=[
            text("I'd rather chat"),
            tool_calls(("search", {"q": "x"})),
            tool_calls(("lookup", {"q": "y"})),
        ]
    )
    assert run_scripted(choose, {}, peer) == "y@3"
    second, third = peer.samples[1:]
    assert "You must call one of these tools: lookup" in second.messages[-1].text
    call, answer = third.messages[-2:]
    assert [b.name for b in call.content if isinstance(b, ToolUse)] == ["search"]
    (correction,) = answer.content
    assert isinstance(correction, ToolResult)
    assert correction.is_error
    assert "no tool named 'search'" in correction.content[0].text  # type: ignore[union-attr]
    assert all(s.tool_choice == "required" for s in peer.samples)


def test_sample_tools_answers_invalid_calls_with_error_results() -> None:
    peer = ScriptedPeer(
        samples=[tool_calls(("lookup", {"q": 1})), tool_calls(("lookup", {"q": "z"}))]
    )
    assert run_scripted(choose, {}, peer) == "z@2"
    correction = peer.samples[1].messages[-1].content[0]
    assert isinstance(correction, ToolResult)
    assert correction.is_error
    assert "invalid arguments" in correction.content[0].text  # type: ignore[union-attr]


FIND = ToolSpec(name="find", input_schema=LOOKUP.input_schema)


@tool
def choose_named(ctx: Context) -> Op[str]:
    result = yield from ctx.sample_tools(
        "choose", tools=[FIND, LOOKUP], tool_choice=NamedTool("lookup")
    )
    return f"{result.tool_calls[0].name}@{result.attempts}"


def test_sample_tools_with_a_named_choice_refuses_another_offered_tool() -> None:
    peer = ScriptedPeer(
        samples=[tool_calls(("find", {"q": "x"})), tool_calls(("lookup", {"q": "y"}))]
    )
    assert run_scripted(choose_named, {}, peer) == "lookup@2"
    correction = peer.samples[1].messages[-1].content[0]
    assert isinstance(correction, ToolResult)
    assert correction.is_error
    text_of = correction.content[0].text  # type: ignore[union-attr]
    assert "the tool to call is 'lookup', not 'find'" in text_of


def test_sample_tools_rejects_arguments_that_break_the_input_schema() -> None:
    peer = ScriptedPeer(samples=[tool_calls(("lookup", {"q": 3})) for _ in range(3)])
    with pytest.raises(SampleValidationError, match="invalid arguments") as info:
        run_scripted(choose, {}, peer)
    assert info.value.method == "sample_tools"


def test_usage_is_carried_to_the_result() -> None:
    result = ctx.sample("x").resolve(text("y", usage=Usage(3, 4)), "0")
    assert result.usage == Usage(3, 4)
    assert result.usage.total == 7


def test_content_blocks_survive_into_the_result() -> None:
    reply = SampleReply(content=(Text("a", meta={"sig": "s"}), Text("b")))
    result = ctx.sample("x").resolve(reply, "0")
    assert result.content == reply.content
    assert result.text == "ab"


def test_unparseable_tool_arguments_are_a_problem_without_required_fields() -> None:
    from runtime.lowlevel import tool_call_problems
    from runtime.messages import RAW_ARGUMENTS_KEY

    loose = ToolSpec(name="loose", input_schema={"type": "object"})
    calls = (ToolCall("c1", "loose", {RAW_ARGUMENTS_KEY: "{not json"}),)
    assert "not valid JSON" in tool_call_problems(calls, [loose])["c1"]


def test_tool_result_content_accepts_strings_among_blocks() -> None:
    result = ToolResult("t1", ("text", Text("more")))
    assert result.content == (Text("text"), Text("more"))
    with pytest.raises(InvalidMessages):
        ToolResult("t1", (ToolUse("x", "y", {}),))  # type: ignore[arg-type]


def test_a_reused_tool_use_id_is_renamed_so_the_history_stays_valid() -> None:
    peer = ScriptedPeer(
        samples=[
            SampleReply(content=(ToolUse("same", "__schema__", {}),)),
            SampleReply(content=(ToolUse("same", "__schema__", {"cell": 1}),)),
        ]
    )
    assert run_scripted(pick, {}, peer) == 12
    _first, second = peer.samples
    ids = [b.id for m in second.messages for b in m.content if isinstance(b, ToolUse)]
    assert ids == ["same"]  # the retry's history is valid: no repeated id


def test_duplicate_ids_within_one_reply_are_made_unique() -> None:
    reply = SampleReply(
        content=(ToolUse("x", "lookup", {"q": "a"}), ToolUse("x", "lookup", {"q": "b"}))
    )
    result = ctx.sample("go", tools=[LOOKUP]).resolve(reply, "3")
    assert [c.id for c in result.tool_calls] == ["x", "x_3"]


def test_a_structured_exchange_carries_parsed_as_the_design_says() -> None:
    result = ctx.sample("move?", schema=Move).resolve(structured({"cell": 4}), "0")
    assert result.exchange.parsed == Move(cell=4) == result.parsed
    assert len(result.exchange.messages) == 3


def test_sample_schema_exchange_parsed_is_its_parsed() -> None:
    @tool
    def pick(ctx: Context) -> Op[int]:
        move = yield from ctx.sample_schema("move?", schema=Move)
        assert move.exchange.parsed == move.parsed
        return move.exchange.parsed.cell

    assert run_scripted(pick, {}, ScriptedPeer(samples=[structured({"cell": 2})])) == 2


def test_text_and_failed_output_exchanges_have_no_parsed() -> None:
    assert ctx.sample("hi").resolve(text("hello"), "0").exchange.parsed is None
    failed = ctx.sample("move?", schema=Move).resolve(structured({"cell": 99}), "0")
    assert failed.parse_error is not None
    assert failed.exchange.parsed is None


class Budget(BaseModel):
    most: float = float("inf")


@tool
def budget(ctx: Context) -> Op[float]:
    got = yield from ctx.sample_schema("your budget?", schema=Budget)
    return got.parsed.most


def test_a_schema_whose_default_json_cannot_carry_is_sent_without_it() -> None:
    # The request's tool said "default": Infinity, which a strict client
    # (the TypeScript SDK) cannot read: the call waited out its timeout.
    peer = ScriptedPeer(samples=[structured({})])
    assert run_scripted(budget, {}, peer) == float("inf")  # the model's default
    (asked,) = peer.samples
    (spec,) = asked.request().tools
    assert spec.input_schema["properties"]["most"] == {
        "title": "Most",
        "type": "number",
    }

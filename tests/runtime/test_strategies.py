"""The testing kit's Hypothesis strategies generate what they promise."""

from __future__ import annotations

import datetime as dt
from typing import Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from pydantic import BaseModel, Field

from runtime import (
    Context,
    InvalidAnswer,
    Op,
    PeerError,
    RequestTimeout,
    ToolSpec,
    tool,
)
from runtime._sampling import tool_call_problems
from runtime.testing import accept
from runtime.testing.strategies import (
    answers,
    elicit_replies,
    failures,
    from_schema,
    run_in_drawn_order,
    sample_replies,
)

ctx_free = Context({})


class Move(BaseModel):
    cell: int = Field(ge=0, le=8)
    why: str = Field(min_length=1)


class Form(BaseModel):
    day: dt.date
    seat: Literal["window", "aisle"]
    count: int = Field(ge=1, le=9)
    vegetarian: bool = False


LOOKUP = ToolSpec(
    name="lookup",
    input_schema={
        "type": "object",
        "properties": {"q": {"type": "string", "minLength": 1}},
        "required": ["q"],
        "additionalProperties": False,
    },
)


@given(st.data())
def test_from_schema_values_validate(data: st.DataObject) -> None:
    schema = Form.model_json_schema()
    value = data.draw(from_schema(schema))
    assert Draft202012Validator(schema).is_valid(value)


@given(sample_replies(ctx_free.sample("move", schema=Move), valid=True))
def test_valid_structured_replies_parse(reply: object) -> None:
    result = ctx_free.sample("move", schema=Move).resolve(reply, "0")
    assert isinstance(result.parsed, Move)


@given(sample_replies(ctx_free.sample("move", schema=Move), valid=False))
def test_invalid_structured_replies_are_parse_errors(reply: object) -> None:
    result = ctx_free.sample("move", schema=Move).resolve(reply, "0")
    assert result.parsed is None
    assert result.parse_error is not None


@given(sample_replies(ctx_free.sample("x", tools=[LOOKUP]), valid=True))
def test_valid_tool_replies_call_offered_tools_correctly(reply: object) -> None:
    result = ctx_free.sample("x", tools=[LOOKUP]).resolve(reply, "0")
    assert result.tool_calls
    assert tool_call_problems(result.tool_calls, [LOOKUP]) == {}


@given(sample_replies(ctx_free.sample("x", tools=[LOOKUP]), valid=False))
def test_invalid_tool_replies_are_unusable(reply: object) -> None:
    result = ctx_free.sample("x", tools=[LOOKUP]).resolve(reply, "0")
    assert not result.tool_calls or tool_call_problems(result.tool_calls, [LOOKUP])


FORM_CTX = Context({"form": Form})


@given(elicit_replies(FORM_CTX.elicit("form", "fill in"), valid=True))
def test_valid_elicit_replies_resolve(reply: object) -> None:
    result = FORM_CTX.elicit("form", "fill in").resolve(reply, "0")
    assert result.action in ("accept", "decline", "cancel")
    assert (result.content is not None) == (result.action == "accept")


@given(elicit_replies(FORM_CTX.elicit("form", "fill in"), valid=False))
def test_invalid_elicit_content_is_rejected(reply: object) -> None:
    with pytest.raises(InvalidAnswer):
        FORM_CTX.elicit("form", "fill in").resolve(reply, "0")


@given(failures())
def test_failures_are_exceptions(error: BaseException) -> None:
    assert isinstance(error, Exception)


@tool(elicits={"form": Form})
def two_at_once(ctx: Context) -> Op[tuple[str, str]]:
    def ask(c: Context, prompt: str) -> Op[str]:
        reply = yield from c.sample(prompt)
        return reply.text

    def form(c: Context) -> Op[str]:
        reply = yield from c.elicit("form", "fill in")
        return reply.action

    return (yield from ctx.branch(lambda c: ask(c, "a"), form))


@given(st.data())
async def test_drawn_orders_give_child_ordered_results(data: st.DataObject) -> None:
    from runtime.testing import text

    def answer(question: object) -> object:
        if hasattr(question, "messages"):
            return text("sampled")
        return accept(day="2026-01-01", seat="aisle", count=2)

    result = await run_in_drawn_order(two_at_once, {}, data, answer)
    assert result == ("sampled", "accept")


@given(st.data())
async def test_drawn_answers_either_complete_or_raise_cleanly(
    data: st.DataObject,
) -> None:
    try:
        result = await run_in_drawn_order(two_at_once, {}, data)
    except ExceptionGroup as group:
        # Only the drawn failures and invalid content can fail the branch.
        _, rest = group.split((PeerError, RequestTimeout, InvalidAnswer))
        assert rest is None
    else:
        assert isinstance(result[0], str)
        assert result[1] in ("accept", "decline", "cancel")


def test_answers_cover_each_question_kind() -> None:
    assert answers(FORM_CTX.elicit("form", "x")) is not None

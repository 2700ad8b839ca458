"""The testing kit's Hypothesis strategies generate what they promise."""

from __future__ import annotations

import datetime as dt
import enum
from typing import Any, Literal

import pytest
import trio
import trio.testing
from hypothesis import Phase, assume, find, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from pydantic import BaseModel, Field

from runtime import Context, Limits, NamedTool, Op, ToolSpec, tool
from runtime.lowlevel import (
    BranchTimeout,
    InvalidAnswer,
    PeerError,
    PeerQuestion,
    RequestTimeout,
    SampleReply,
    run,
    tool_call_problems,
)
from runtime.testing import ScriptedPeer, accept, run_scripted, text
from runtime.testing.strategies import (
    DelayedPeer,
    answers,
    delays,
    elicit_replies,
    failures,
    from_schema,
    run_in_drawn_order,
    sample_replies,
)
from tests.helpers import fewer_examples

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


@tool(elicits={"form": Form})
def ask_both(ctx: Context) -> Op[str]:
    reply = yield from ctx.sample("hello")
    form = yield from ctx.elicit("form", "fill in")
    return f"{reply.text}:{form.action}"


@given(failures())
def test_failures_raise_when_delivered_for_a_sample(error: Exception) -> None:
    assert isinstance(error, PeerError | RequestTimeout)
    with pytest.raises(type(error)) as info:
        run_scripted(ask_both, {}, ScriptedPeer(samples=[error]))
    assert info.value is error


@given(failures())
def test_failures_raise_when_delivered_for_an_elicitation(error: Exception) -> None:
    peer = ScriptedPeer(samples=[text("hi")], elicits={"form": [error]})
    with pytest.raises(type(error)) as info:
        run_scripted(ask_both, {}, peer)
    assert info.value is error
    assert [a.key for a in peer.asked] == ["0", "1"]


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


QUESTIONS: dict[str, PeerQuestion[Any]] = {
    "sample": ctx_free.sample("hi"),
    "structured": ctx_free.sample("move", schema=Move),
    "tools": ctx_free.sample("x", tools=[LOOKUP]),
    "elicit": FORM_CTX.elicit("form", "fill in"),
    "url": ctx_free.elicit_url("sign in", "https://example.com/login"),
    "roots": ctx_free.list_roots(),
}


# Finding is enough: shrinking the example found would only cost time.
FIND = settings(phases=[Phase.generate], database=None, max_examples=2000)


@pytest.mark.parametrize("kind", list(QUESTIONS))
@fewer_examples(0.25)  # once per kind of question
@given(data=st.data())
def test_every_drawn_answer_is_one_its_question_accepts(
    kind: str, data: st.DataObject
) -> None:
    question = QUESTIONS[kind]
    answer = data.draw(answers(question))
    if isinstance(answer, BaseException):
        assert isinstance(answer, PeerError | RequestTimeout)
        return
    try:
        question.resolve(answer, "0")  # a wrong kind of reply: RemoteProtocolError
    except InvalidAnswer:
        assert kind == "elicit"  # only accepted form content is validated
    encoded = question.reply_to_json(answer)
    assert question.reply_from_json(encoded) == answer


@pytest.mark.parametrize("kind", list(QUESTIONS))
def test_answers_include_replies_and_failures(kind: str) -> None:
    question = QUESTIONS[kind]
    find(answers(question), lambda a: isinstance(a, BaseException), settings=FIND)
    find(answers(question), lambda a: not isinstance(a, BaseException), settings=FIND)


# --- invalid arguments, named tools -------------------------------------------------


class Cabin(enum.Enum):
    ECONOMY = "economy"
    BUSINESS = "business"


class Booking(BaseModel):
    """Book seats."""

    seats: int = Field(ge=1, le=9)
    cabin: Cabin
    note: str = ""


BOOK = ToolSpec.from_model("book", Booking)
CABINS = [c.value for c in Cabin]
TWO_TOOLS = ctx_free.sample("x", tools=[LOOKUP, BOOK])
NAMED = ctx_free.sample("x", tools=[LOOKUP, BOOK], tool_choice=NamedTool("book"))
SCHEMAS = {t.name: t.input_schema for t in (LOOKUP, BOOK)}


def _breaks_its_schema(name: str, arguments: Any) -> bool:
    return not Draft202012Validator(dict(SCHEMAS[name])).is_valid(arguments)


@given(sample_replies(TWO_TOOLS, valid=False))
def test_invalid_calls_to_offered_tools_break_their_schemas(
    reply: SampleReply,
) -> None:
    assume(reply.tool_uses)  # prose, the other kind of invalid reply
    offered = [u for u in reply.tool_uses if u.name in SCHEMAS]
    broken = [u for u in offered if _breaks_its_schema(u.name, u.input)]
    unknown = [u for u in reply.tool_uses if u.name not in SCHEMAS]
    assert broken or unknown
    result = TWO_TOOLS.resolve(reply, "0")
    problems = tool_call_problems(result.tool_calls, [LOOKUP, BOOK])
    assert sum("invalid arguments" in p for p in problems.values()) == len(broken)


SPECS = {"lookup": LOOKUP, "book": BOOK}


def _seats_out_of_range(args: Any) -> bool:
    seats = args.get("seats")
    return type(seats) is int and not 1 <= seats <= 9


@pytest.mark.parametrize(
    ("name", "breakage"),
    [
        ("lookup", lambda args: "q" not in args),
        ("lookup", lambda args: not isinstance(args.get("q", ""), str)),
        ("lookup", lambda args: set(args) - {"q"}),
        ("book", lambda args: "cabin" not in args),
        ("book", lambda args: args.get("cabin", "economy") not in CABINS),
        ("book", _seats_out_of_range),
    ],
    ids=[
        "missing-required",
        "wrong-type",
        "unknown-property",
        "missing-enum",
        "not-in-enum",
        "out-of-range",
    ],
)
def test_invalid_replies_call_offered_tools_with_invalid_arguments(
    name: str, breakage: Any
) -> None:
    def broken_call(reply: SampleReply) -> bool:
        return any(u.name == name and breakage(u.input) for u in reply.tool_uses)

    sample = ctx_free.sample("x", tools=[SPECS[name]])
    found = find(sample_replies(sample, valid=False), broken_call, settings=FIND)
    for use in found.tool_uses:
        if use.name == name and breakage(use.input):
            assert _breaks_its_schema(name, use.input)


@given(sample_replies(NAMED, valid=True))
def test_valid_replies_call_only_the_named_tool(reply: SampleReply) -> None:
    result = NAMED.resolve(reply, "0")
    assert result.tool_calls
    assert {c.name for c in result.tool_calls} == {"book"}
    assert tool_call_problems(result.tool_calls, [LOOKUP, BOOK]) == {}


@given(sample_replies(NAMED, valid=False))
def test_invalid_replies_under_a_named_tool_are_unusable(reply: SampleReply) -> None:
    result = NAMED.resolve(reply, "0")
    # Never a call to the other offered tool: that is neither clearly valid
    # nor rejected by sample_tools.
    assert "lookup" not in {c.name for c in result.tool_calls}
    assert not result.tool_calls or tool_call_problems(
        result.tool_calls, [LOOKUP, BOOK]
    )


# --- delays -------------------------------------------------------------------------


def _prompt_text(question: PeerQuestion[Any]) -> SampleReply:
    return text(question.messages[0].text)  # type: ignore[attr-defined]


@tool
def three_asks(ctx: Context) -> Op[tuple[str, ...]]:
    def ask(c: Context, prompt: str) -> Op[str]:
        reply = yield from c.sample(prompt)
        return reply.text

    return (
        yield from ctx.branch(
            lambda c: ask(c, "a"), lambda c: ask(c, "b"), lambda c: ask(c, "c")
        )
    )


TIME_LIMIT = 5.0


@tool
def three_asks_in_time(ctx: Context) -> Op[str]:
    def ask(c: Context, prompt: str) -> Op[str]:
        reply = yield from c.sample(prompt)
        return reply.text

    try:
        a, b, c = yield from ctx.branch(
            lambda x: ask(x, "a"),
            lambda x: ask(x, "b"),
            lambda x: ask(x, "c"),
            limits=Limits(timeout=TIME_LIMIT),
        )
    except BranchTimeout:
        return "timeout"
    return a + b + c


def _delayed_run(
    program: Any, data: st.DataObject
) -> tuple[Any, float, dict[str, float]]:
    def delay(key: str, question: PeerQuestion[Any]) -> float:
        return data.draw(delays(max_seconds=2 * TIME_LIMIT), label=f"delay {key}")

    peer = DelayedPeer(ScriptedPeer(samples=_prompt_text), delay)

    async def main() -> tuple[Any, float]:
        start = trio.current_time()
        result = await run(program, {}, peer)
        return result, trio.current_time() - start

    result, elapsed = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    return result, elapsed, peer.delayed


@given(st.data())
def test_delayed_answers_come_back_in_child_order(data: st.DataObject) -> None:
    result, elapsed, delayed = _delayed_run(three_asks, data)
    assert result == ("a", "b", "c")
    assert sorted(delayed) == ["0.0/0", "0.1/0", "0.2/0"]
    # The children waited together: the branch took the longest delay, not the sum.
    assert elapsed == pytest.approx(max(delayed.values()))


@given(st.data())
def test_a_branch_times_out_exactly_when_an_answer_is_too_late(
    data: st.DataObject,
) -> None:
    result, elapsed, delayed = _delayed_run(three_asks_in_time, data)
    slowest = max(delayed.values())
    assume(slowest != TIME_LIMIT)
    if slowest < TIME_LIMIT:
        assert (result, elapsed) == ("abc", pytest.approx(slowest))
    else:
        assert (result, elapsed) == ("timeout", pytest.approx(TIME_LIMIT))


def test_delays_shrink_to_answering_at_once() -> None:
    assert find(delays(), lambda d: True) == 0.0
    assert find(delays(max_seconds=3.0), lambda d: d > 2.5) <= 3.0

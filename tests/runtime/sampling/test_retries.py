"""``sample_schema`` and ``sample_tools`` answer every tool call a model makes.

A model may answer with a call to a tool it was not offered, or with several
calls at once (models make parallel calls). Each call gets a ``ToolResult``
saying what was wrong, the model is asked again, and after ``retries + 1``
attempts ``SampleValidationError`` is raised: nothing a model sends makes them
raise ``InvalidMessages`` (docs/effects.md).
"""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from runtime import (
    Context,
    Message,
    Op,
    SampleValidationError,
    ToolResult,
    ToolSpec,
    ToolUse,
    tool,
)
from runtime.lowlevel import Sample, SampleReply
from runtime.messages import validate_messages
from runtime.testing import ScriptedPeer, run_scripted, structured, text, tool_calls
from runtime.testing.strategies import sample_replies


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


@tool
def pick(ctx: Context) -> Op[str]:
    move = yield from ctx.sample_schema("pick a cell", schema=Move, retries=2)
    return f"{move.parsed.cell}@{move.attempts}"


@tool
def choose(ctx: Context) -> Op[str]:
    result = yield from ctx.sample_tools("choose", tools=[LOOKUP], retries=2)
    return f"{result.tool_calls[0].arguments['q']}@{result.attempts}"


def _answers(sample: Sample[Any]) -> dict[str, ToolResult]:
    """The tool results the last message of ``sample``'s conversation holds."""
    last = sample.messages[-1]
    assert last.role == "user"
    assert all(isinstance(b, ToolResult) for b in last.content), last
    return {b.tool_use_id: b for b in last.content if isinstance(b, ToolResult)}


def _text(result: ToolResult) -> str:
    return "".join(getattr(b, "text", "") for b in result.content)


def _uses(reply: SampleReply) -> list[ToolUse]:
    return [b for b in reply.content if isinstance(b, ToolUse)]


# --- sample_schema ------------------------------------------------------------------


def test_a_call_to_a_tool_not_offered_is_answered_and_retried() -> None:
    foreign = tool_calls(("play_offensive", {"reasoning": "win"}))
    peer = ScriptedPeer(samples=[foreign, structured({"cell": 4})])
    assert run_scripted(pick, {}, peer) == "4@2"
    answers = _answers(peer.samples[1])
    (use,) = _uses(foreign)
    assert list(answers) == [use.id]
    assert answers[use.id].is_error
    assert "no tool named 'play_offensive'" in _text(answers[use.id])
    assert "__schema__" in _text(answers[use.id])


def test_parallel_calls_to_tools_not_offered_are_each_answered() -> None:
    both = tool_calls(
        ("play_offensive", {"reasoning": "win"}),
        ("play_defensive", {"threat": "column"}),
    )
    peer = ScriptedPeer(samples=[both, structured({"cell": 2})])
    assert run_scripted(pick, {}, peer) == "2@2"
    answers = _answers(peer.samples[1])
    assert list(answers) == [u.id for u in _uses(both)]
    assert all(a.is_error for a in answers.values())


def test_an_invalid_schema_call_beside_a_foreign_one_gets_two_answers() -> None:
    mixed = tool_calls(("__schema__", {"cell": 9}), ("lookup", {"q": "rules"}))
    peer = ScriptedPeer(samples=[mixed, structured({"cell": 1})])
    assert run_scripted(pick, {}, peer) == "1@2"
    schema_use, lookup_use = _uses(mixed)
    answers = _answers(peer.samples[1])
    assert list(answers) == [schema_use.id, lookup_use.id]
    assert "cell" in _text(answers[schema_use.id])
    assert "no tool named 'lookup'" in _text(answers[lookup_use.id])


def test_the_first_valid_of_parallel_schema_calls_is_the_answer() -> None:
    twice = tool_calls(("__schema__", {"cell": 9}), ("__schema__", {"cell": 3}))
    peer = ScriptedPeer(samples=[twice])
    assert run_scripted(pick, {}, peer) == "3@1"


def test_a_valid_schema_call_beside_a_foreign_one_is_the_answer() -> None:
    mixed = tool_calls(("lookup", {"q": "rules"}), ("__schema__", {"cell": 6}))
    peer = ScriptedPeer(samples=[mixed])
    assert run_scripted(pick, {}, peer) == "6@1"


def test_foreign_calls_every_time_end_in_sample_validation_error() -> None:
    foreign = [tool_calls(("lookup", {"q": "x"}), ("lookup", {"q": "y"}))] * 3
    with pytest.raises(SampleValidationError) as info:
        run_scripted(pick, {}, ScriptedPeer(samples=foreign))
    assert (info.value.method, info.value.attempts) == ("sample_schema", 3)
    assert "lookup" in info.value.reason


# --- sample_tools -------------------------------------------------------------------


def test_sample_tools_answers_a_call_to_a_tool_not_offered_with_a_result() -> None:
    unknown = tool_calls(("search", {"q": "x"}))
    peer = ScriptedPeer(samples=[unknown, tool_calls(("lookup", {"q": "y"}))])
    assert run_scripted(choose, {}, peer) == "y@2"
    (use,) = _uses(unknown)
    answers = _answers(peer.samples[1])
    assert list(answers) == [use.id]
    assert answers[use.id].is_error
    assert "no tool named 'search'" in _text(answers[use.id])


def test_sample_tools_answers_each_of_parallel_calls_when_one_is_foreign() -> None:
    mixed = tool_calls(("lookup", {"q": "a"}), ("search", {"q": "b"}))
    peer = ScriptedPeer(samples=[mixed, tool_calls(("lookup", {"q": "c"}))])
    assert run_scripted(choose, {}, peer) == "c@2"
    good, bad = _uses(mixed)
    answers = _answers(peer.samples[1])
    assert list(answers) == [good.id, bad.id]
    assert "Not run" in _text(answers[good.id])
    assert "no tool named 'search'" in _text(answers[bad.id])


# --- any reply: a result, or SampleValidationError ----------------------------------


def _answered_by(data: st.DataObject) -> ScriptedPeer:
    def answer(sample: Sample[Any]) -> SampleReply:
        validate_messages(sample.messages)  # every retry is a valid conversation
        return data.draw(sample_replies(sample))

    return ScriptedPeer(samples=answer)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_any_replies_to_sample_schema_end_in_a_result_or_its_error(
    data: st.DataObject,
) -> None:
    with contextlib.suppress(SampleValidationError):
        run_scripted(pick, {}, _answered_by(data))


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_any_replies_to_sample_tools_end_in_a_result_or_its_error(
    data: st.DataObject,
) -> None:
    with contextlib.suppress(SampleValidationError):
        run_scripted(choose, {}, _answered_by(data))


def test_the_strategy_draws_foreign_and_parallel_calls_for_a_schema_sample() -> None:
    history = (
        Message.user("strategy?"),
        Message("assistant", (ToolUse("s1", "play_offensive", {}),)),
        Message("user", (ToolResult("s1", "ok"),)),
    )
    sample = Context().sample(messages=history, schema=Move)
    seen: set[str] = set()

    @settings(max_examples=300, deadline=None)
    @given(sample_replies(sample))
    def collect(reply: SampleReply) -> None:
        names = [u.name for u in _uses(reply)]
        if any(n != "__schema__" for n in names):
            seen.add("foreign")
        if "play_offensive" in names:
            seen.add("from the conversation")
        if len(names) > 1:
            seen.add("parallel")

    collect()
    assert seen == {"foreign", "from the conversation", "parallel"}


def test_text_replies_still_get_a_hint_not_a_tool_result() -> None:
    peer = ScriptedPeer(samples=[text("the middle"), structured({"cell": 4})])
    assert run_scripted(pick, {}, peer) == "4@2"
    hint = peer.samples[1].messages[-1]
    assert hint.role == "user"
    assert "not valid" in hint.text

"""Conversation rules: MCP's tool-use balance, checked when a sample is built."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from runtime import Message, Text, ToolCall, ToolResult, ToolSpec, ToolUse
from runtime.lowlevel import InvalidEffect, InvalidMessages
from runtime.messages import validate_messages

USE = ToolUse("t1", "lookup", {"q": "x"})
RESULT = ToolResult("t1", "found")


def test_a_balanced_tool_exchange_is_accepted() -> None:
    validate_messages(
        [
            Message.user("hi"),
            Message.assistant("let me look", USE),
            Message("user", (RESULT,)),
            Message.assistant("done"),
        ],
    )


def test_an_empty_conversation_is_rejected() -> None:
    with pytest.raises(InvalidMessages, match="at least one"):
        validate_messages([])


def test_an_unanswered_trailing_tool_use_is_rejected() -> None:
    with pytest.raises(InvalidMessages, match="no tool_result answers"):
        validate_messages([Message.user("hi"), Message.assistant(USE)])


def test_tool_results_must_follow_the_tool_use_immediately() -> None:
    with pytest.raises(InvalidMessages, match="only ToolResult"):
        validate_messages(
            [
                Message.assistant(USE),
                Message.user("interjection"),
                Message("user", (RESULT,)),
            ]
        )


def test_a_tool_result_message_may_not_mix_in_text() -> None:
    with pytest.raises(InvalidMessages, match="only ToolResult"):
        validate_messages([Message.assistant(USE), Message.user(RESULT, "and text")])


def test_every_tool_use_needs_exactly_one_result() -> None:
    second = ToolUse("t2", "lookup", {})
    with pytest.raises(InvalidMessages, match="each tool_use needs exactly one"):
        validate_messages([Message.assistant(USE, second), Message("user", (RESULT,))])


def test_a_result_without_a_preceding_use_is_rejected() -> None:
    with pytest.raises(InvalidMessages, match="does not follow"):
        validate_messages([Message.user(RESULT)])


def test_tool_use_ids_must_be_unique() -> None:
    again = ToolUse("t1", "lookup", {})
    with pytest.raises(InvalidMessages, match="repeats"):
        validate_messages(
            [
                Message.assistant(USE),
                Message("user", (RESULT,)),
                Message.assistant(again),
                Message("user", (ToolResult("t1", "x"),)),
            ]
        )


def test_only_the_assistant_uses_tools() -> None:
    with pytest.raises(InvalidMessages, match="only the assistant"):
        validate_messages([Message.user(USE), Message("user", (RESULT,))])


def test_earlier_tool_uses_need_only_be_answered() -> None:
    # Whatever tools the next request offers: see test_tool_swapping.py.
    validate_messages([Message.assistant(USE), Message("user", (RESULT,))])


def test_message_content_accepts_str_block_or_blocks() -> None:
    assert Message("user", "hi").content == (Text("hi"),)
    assert Message("user", Text("hi")).content == (Text("hi"),)
    assert Message.user("a", Text("b")).text == "ab"


def test_message_content_rejects_non_blocks() -> None:
    with pytest.raises(InvalidMessages, match="content blocks"):
        Message("user", [{"type": "text", "text": "hi"}])  # type: ignore[list-item]


def test_tool_specs_check_names_and_object_schemas() -> None:
    with pytest.raises(InvalidEffect, match="1-128 characters"):
        ToolSpec(name="has space")
    with pytest.raises(InvalidEffect, match="type 'object'"):
        ToolSpec(name="ok", input_schema={"type": "string"})


def test_tool_spec_from_model_uses_its_schema_and_docstring() -> None:
    class Args(BaseModel):
        """Look something up."""

        q: str

    spec = ToolSpec.from_model("lookup", Args)
    assert spec.description == "Look something up."
    assert spec.input_schema == Args.model_json_schema()


def test_tool_calls_parse_into_models() -> None:
    class Args(BaseModel):
        q: str

    assert ToolCall("1", "lookup", {"q": "x"}).parse(Args) == Args(q="x")

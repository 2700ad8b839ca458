"""A conversation swaps tools as it goes (issue 26, item 7).

The design's decision trees offer level-1 tools, then, in the same
conversation, different level-2 tools; a ``__schema__`` exchange or an
elicitation exchange is history a later sample with tools may carry. Only the
model's reply to a request must name a tool offered in it; earlier tool uses
need only be paired with their results.
"""

from __future__ import annotations

from pydantic import BaseModel

from runtime import Context, ElicitKey, Message, Op, ToolResult, ToolSpec, tool
from runtime.testing import ScriptedPeer, accept, run_scripted, structured, tool_calls


class Reason(BaseModel):
    reasoning: str


class Cell(BaseModel):
    cell: int


class Ok(BaseModel):
    ok: bool


L1 = (
    ToolSpec.from_model("play_offensive", Reason),
    ToolSpec.from_model("play_defensive", Reason),
)
L2 = (
    ToolSpec.from_model("take_corner", Cell),
    ToolSpec.from_model("take_center", Cell),
)
CONFIRM = ElicitKey("confirm", Ok)


@tool
def decision_tree(ctx: Context) -> Op[str]:
    level1 = yield from ctx.sample_tools("Choose a strategy.", tools=L1)
    call = level1.tool_calls[0]
    answer = ToolResult(call.id, f"Playing {call.name}. Now pick a move.")
    history = [*level1.exchange.history, Message("user", (answer,))]
    level2 = yield from ctx.sample_tools(messages=history, tools=L2)
    return f"{call.name} -> {level2.tool_calls[0].name}"


def test_level_one_tools_then_level_two_tools_in_one_conversation() -> None:
    peer = ScriptedPeer(
        samples=[
            tool_calls(("play_offensive", {"reasoning": "open board"})),
            tool_calls(("take_center", {"cell": 4})),
        ]
    )
    assert run_scripted(decision_tree, {}, peer) == "play_offensive -> take_center"
    second = peer.asked[1].question
    assert [t.name for t in second.tools] == ["take_corner", "take_center"]  # type: ignore[attr-defined]


@tool
def schema_then_tools(ctx: Context) -> Op[str]:
    move = yield from ctx.sample_schema("Pick a cell.", schema=Cell)
    history = [*move.exchange.history, Message.user("Now pick a strategy.")]
    strategy = yield from ctx.sample_tools(messages=history, tools=L1)
    return f"{move.parsed.cell} then {strategy.tool_calls[0].name}"


def test_a_schema_exchange_is_history_for_a_sample_with_tools() -> None:
    peer = ScriptedPeer(
        samples=[
            structured({"cell": 4}),
            tool_calls(("play_defensive", {"reasoning": "block"})),
        ]
    )
    assert run_scripted(schema_then_tools, {}, peer) == "4 then play_defensive"


@tool(elicits=[CONFIRM])
def elicit_then_tools(ctx: Context) -> Op[str]:
    answer = yield from ctx.elicit(CONFIRM, "Play on?")
    history = [*answer.exchange.history, Message.user("Choose a strategy.")]
    strategy = yield from ctx.sample_tools(messages=history, tools=L1)
    return strategy.tool_calls[0].name


def test_an_elicitation_exchange_is_history_for_a_sample_with_tools() -> None:
    peer = ScriptedPeer(
        elicits={"confirm": [accept(ok=True)]},
        samples=[tool_calls(("play_offensive", {"reasoning": "go"}))],
    )
    assert run_scripted(elicit_then_tools, {}, peer) == "play_offensive"


def test_the_reply_must_still_call_a_tool_offered_now() -> None:
    # The level-1 tool is history, not an offer: calling it again is retried.
    peer = ScriptedPeer(
        samples=[
            tool_calls(("play_offensive", {"reasoning": "open board"})),
            tool_calls(("play_offensive", {"reasoning": "again"})),
            tool_calls(("take_corner", {"cell": 0})),
        ]
    )
    assert run_scripted(decision_tree, {}, peer) == "play_offensive -> take_corner"
    assert len(peer.asked) == 3

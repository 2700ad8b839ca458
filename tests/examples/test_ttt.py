"""play_ttt against the scripted peer: every ending, retries, and replay."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runtime import SampleValidationError, ToolError, ToolResult
from runtime.lowlevel import Journal, Log, Progress, Sample
from runtime.testing import (
    ScriptedPeer,
    accept,
    cancel,
    decline,
    run_scripted,
    structured,
    tool_calls,
)
from runtime.testing.strategies import elicit_replies, sample_replies
from tests.helpers import fewer_examples, load_example

ttt = load_example("ttt")
MODEL_IS_X = 1  # seeds for assign_sides
MODEL_IS_O = 0


def model_moves(*cells: int) -> list[object]:
    replies: list[object] = []
    for cell in cells:
        replies.append(tool_calls(("play_offensive", {"reasoning": "take the line"})))
        replies.append(structured({"cell": cell}))
    return replies


def user_moves(*cells: int) -> list[object]:
    return [accept(cell=c) for c in cells]


def test_the_model_wins_a_row() -> None:
    peer = ScriptedPeer(
        samples=model_moves(0, 1, 2), elicits={"pick_move": user_moves(3, 4)}
    )
    result = run_scripted(ttt.play_ttt, {"seed": MODEL_IS_X}, peer)
    assert (result.outcome, result.you_played, result.moves) == ("model won", "O", 5)
    assert result.board.splitlines()[0] == "X | X | X"


def test_the_user_wins_a_column() -> None:
    peer = ScriptedPeer(
        samples=model_moves(1, 2), elicits={"pick_move": user_moves(0, 3, 6)}
    )
    result = run_scripted(ttt.play_ttt, {"seed": MODEL_IS_O}, peer)
    assert (result.outcome, result.you_played) == ("you won", "X")


def test_a_full_board_without_a_line_is_a_draw() -> None:
    peer = ScriptedPeer(
        samples=model_moves(0, 2, 3, 7, 8),
        elicits={"pick_move": user_moves(1, 4, 5, 6)},
    )
    result = run_scripted(ttt.play_ttt, {"seed": MODEL_IS_X}, peer)
    assert (result.outcome, result.moves) == ("draw", 9)


def test_cancelling_the_form_ends_the_game() -> None:
    peer = ScriptedPeer(samples=model_moves(4), elicits={"pick_move": [cancel()]})
    result = run_scripted(ttt.play_ttt, {"seed": MODEL_IS_X}, peer)
    assert (result.outcome, result.moves) == ("cancelled", 1)


def test_declining_the_form_ends_the_game_as_declined_not_cancelled() -> None:
    peer = ScriptedPeer(samples=model_moves(4), elicits={"pick_move": [decline()]})
    result = run_scripted(ttt.play_ttt, {"seed": MODEL_IS_X}, peer)
    assert (result.outcome, result.moves) == ("declined", 1)


def test_an_occupied_cell_from_the_model_is_refused_and_asked_again() -> None:
    samples = [*model_moves(4), *model_moves(4), structured({"cell": 8})]
    peer = ScriptedPeer(
        samples=samples, elicits={"pick_move": [accept(cell=0), cancel()]}
    )
    run_scripted(ttt.play_ttt, {"seed": MODEL_IS_X}, peer)
    retry = peer.samples[-1].messages[-1].content[0]
    assert isinstance(retry, ToolResult)
    assert retry.is_error
    assert "Cell 4 is taken" in retry.content[0].text  # type: ignore[union-attr]
    logs = [n.data for _k, n in peer.notices if isinstance(n, Log)]
    assert "X chose cell 4, which is taken" in logs  # shown to the user


def test_an_occupied_cell_from_the_user_is_asked_again() -> None:
    peer = ScriptedPeer(
        samples=model_moves(4), elicits={"pick_move": [accept(cell=4), cancel()]}
    )
    run_scripted(ttt.play_ttt, {"seed": MODEL_IS_X}, peer)
    first, second = (
        a.question for a in peer.asked if a.key != "x" and hasattr(a.question, "key")
    )
    assert "taken" in second.message  # type: ignore[attr-defined]
    assert first.context["empty"] == [0, 1, 2, 3, 5, 6, 7, 8]  # type: ignore[attr-defined]


def test_a_model_that_never_picks_a_strategy_fails_the_call() -> None:
    from runtime.testing import text

    peer = ScriptedPeer(samples=[text("hmm")] * 4)
    with pytest.raises(SampleValidationError, match="sample_tools"):
        run_scripted(ttt.play_ttt, {"seed": MODEL_IS_X}, peer)


def test_moves_are_logged_and_progress_increases() -> None:
    peer = ScriptedPeer(
        samples=model_moves(0, 1, 2), elicits={"pick_move": user_moves(3, 4)}
    )
    run_scripted(ttt.play_ttt, {"seed": MODEL_IS_X}, peer)
    logs = [n for _k, n in peer.notices if isinstance(n, Log)]
    progress = [n.progress for _k, n in peer.notices if isinstance(n, Progress)]
    assert len(logs) == 5
    assert "X took cell 0" in logs[0].data
    assert progress == [1, 2, 3, 4, 5]


def highest_empty_cell(sample: object) -> object:
    if sample.tools:  # type: ignore[attr-defined]
        return tool_calls(("play_defensive", {"threat": "none"}))
    prompt = sample.messages[0].text  # type: ignore[attr-defined]
    empty = json.loads(prompt.split("Empty cells: ")[1].split(".")[0])
    return structured({"cell": max(empty)})


def lowest_empty_cell(question: object) -> object:
    return accept(cell=min(question.context["empty"]))  # type: ignore[attr-defined]


def test_sides_are_journaled_so_a_replay_keeps_them() -> None:
    journal = Journal()
    peer = ScriptedPeer(
        samples=highest_empty_cell, elicits={"pick_move": lowest_empty_cell}
    )
    first = run_scripted(ttt.play_ttt, {}, peer, journal=journal)
    replayed = run_scripted(ttt.play_ttt, {}, ScriptedPeer(), journal=journal)
    assert replayed == first


# --- any answers: the game ends, or fails the call with a documented error ----------


# A whole game is many answers: its smallest input is large by nature. Each
# example is a whole game (a second of CPU): 15 in the ci profile, scaled up
# with the rest by a deeper one.
@settings(
    fewer_examples(0.15),
    deadline=None,
    suppress_health_check=[HealthCheck.large_base_example, HealthCheck.too_slow],
)
@given(st.data())
def test_any_model_and_user_answers_end_the_game_or_fail_cleanly(
    data: st.DataObject,
) -> None:
    # Models make parallel calls: a reply may call both strategy tools at once.
    def answer(question: Any) -> Any:
        if isinstance(question, Sample):
            return data.draw(sample_replies(question))
        return data.draw(elicit_replies(question, valid=True))

    peer = ScriptedPeer(samples=answer, elicits={"pick_move": answer})
    seed = data.draw(st.sampled_from([MODEL_IS_X, MODEL_IS_O]))
    try:
        result = run_scripted(ttt.play_ttt, {"seed": seed}, peer)
    except (SampleValidationError, ToolError):
        return  # the model never gave a usable answer: the documented failures
    assert result.outcome in ("you won", "model won", "draw", "declined", "cancelled")


def test_a_reply_calling_both_strategies_is_answered_in_full() -> None:
    both = tool_calls(
        ("play_offensive", {"reasoning": "take the line"}),
        ("play_defensive", {"threat": "their column"}),
    )
    peer = ScriptedPeer(
        samples=[both, structured({"cell": 0}), *model_moves(1, 2)],
        elicits={"pick_move": user_moves(3, 4)},
    )
    result = run_scripted(ttt.play_ttt, {"seed": MODEL_IS_X}, peer)
    assert result.outcome == "model won"
    move_question = peer.asked[1].question
    answers = move_question.messages[-1].content  # type: ignore[attr-defined]
    assert [a.tool_use_id for a in answers] == [u.id for u in both.tool_uses]
    assert "Playing play_offensive" in answers[0].content[0].text


def test_a_move_request_answered_with_the_strategy_tools_is_asked_again() -> None:
    # Issue 41: a model asked for its cell called both strategy tools instead;
    # each call is answered with what was wrong, and the model is asked again.
    both = tool_calls(
        ("play_offensive", {"reasoning": "again"}),
        ("play_defensive", {"threat": "none"}),
    )
    peer = ScriptedPeer(
        samples=[
            *model_moves(0)[:1],
            both,
            structured({"cell": 0}),
            *model_moves(1, 2),
        ],
        elicits={"pick_move": user_moves(3, 4)},
    )
    result = run_scripted(ttt.play_ttt, {"seed": MODEL_IS_X}, peer)
    assert result.outcome == "model won"
    retry = peer.samples[2].messages[-1].content
    assert [r.tool_use_id for r in retry] == [u.id for u in both.tool_uses]  # type: ignore[union-attr]
    assert all(r.is_error for r in retry)  # type: ignore[union-attr]

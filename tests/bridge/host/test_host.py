"""In-process hosting: examples played to the end with no JSON-RPC and no network."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pytest
import trio
from pydantic import BaseModel

from bridge.elicit import KeyedHandlers, ScriptedAnswers, TerminalForm, line_reader
from bridge.host import HostExecutor, run_in_process
from bridge.providers import OfflineModel
from runtime import Context, ElicitKey, Limits, Op, tool
from runtime.errors import CapabilityError, LocalProtocolError
from runtime.lowlevel import (
    BranchTimeout,
    ElicitationRequest,
    ElicitReply,
    Log,
    PeerQuestion,
    Progress,
    Root,
    run,
)
from tests.helpers import load_example

ttt = load_example("ttt")
book_flight = load_example("book_flight")

MODEL_IS_X = 1  # play_ttt's seed for assign_sides
PROVIDER_SEED = 51  # a game that ends in a draw after the model retried moves


def lowest_empty_cell() -> KeyedHandlers:
    return KeyedHandlers().on(
        ttt.PICK_MOVE, lambda request, ctx: ttt.UserMove(cell=min(ctx["empty"]))
    )


async def play(wire: Any = None) -> tuple[Any, HostExecutor, list[Log]]:
    logs: list[Log] = []
    executor = HostExecutor(
        OfflineModel(PROVIDER_SEED), lowest_empty_cell(), on_log=logs.append, wire=wire
    )
    with trio.fail_after(10):
        result = await run(ttt.play_ttt, {"seed": MODEL_IS_X}, executor)
    return result, executor, logs


async def test_ttt_is_played_to_a_legal_end_with_the_offline_model() -> None:
    result, _, logs = await play()
    board = [
        cell.strip() for row in result.board.splitlines() for cell in row.split("|")
    ]
    assert (result.outcome, result.moves, result.you_played) == ("draw", 9, "O")
    assert (board.count("X"), board.count("O")) == (5, 4)
    assert ttt.winner(board) is None
    moves = [re.search(r"took cell (\d)", str(log.data)) for log in logs]
    cells = [int(move.group(1)) for move in moves if move is not None]
    assert sorted(cells) == list(range(9))  # every move took an empty cell


async def test_the_offline_model_takes_the_ttt_retry_path() -> None:
    _, executor, logs = await play()
    model_moves = 5  # X moves first on a nine-move board
    # Without retries each model move is two samples: a strategy, then a cell.
    retries = executor.statistics().samples - 2 * model_moves
    assert retries > 0
    taken = [log for log in logs if "which is taken" in str(log.data)]
    assert len(taken) == retries  # each one shown to the user
    assert executor.statistics().elicitations == 4


async def test_the_same_seeds_replay_the_same_game() -> None:
    first, one, _ = await play()
    second, two, _ = await play()
    assert first == second
    assert one.statistics() == two.statistics()


@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
async def test_the_wire_round_trip_plays_the_same_game(era: str) -> None:
    direct, _, _ = await play()
    wired, _, _ = await play(wire=era)
    assert wired == direct


# --- book_flight ----------------------------------------------------------------------


async def book(elicitation: Any) -> Any:
    with trio.fail_after(5):
        return await run_in_process(
            book_flight.book_flight,
            {"destination": "Rome"},
            provider=OfflineModel(),
            elicitation=elicitation,
        )


async def test_book_flight_with_scripted_answers_and_defaults() -> None:
    script = ScriptedAnswers(
        {"dates": {"depart": "2026-05-01"}, "seat": {"seat": "aisle"}}
    )
    booking = await book(script)
    assert (booking.status, booking.nights, booking.seat) == ("booked", 3, "aisle")
    assert str(booking.depart) == "2026-05-01"
    assert "offline model" in booking.tip.lower()
    assert "Rome" in booking.tip


async def test_book_flight_declined_by_script_is_cancelled() -> None:
    booking = await book(
        ScriptedAnswers({"dates": {"depart": "2026-05-01"}, "seat": "decline"})
    )
    assert booking.status == "cancelled"


async def test_book_flight_through_the_terminal_form() -> None:
    lines = ["2026-05-01", "5", "window", "no"]
    form = TerminalForm(read_line=line_reader(lines), write=lambda line: None)
    booking = await book(form)
    assert (booking.status, booking.nights, booking.seat) == ("booked", 5, "window")


# --- the executor's other duties ------------------------------------------------------


class Ok(BaseModel):
    ok: bool


OK = ElicitKey("ok", Ok)


@tool(elicits=[OK])
def chatty(ctx: Context) -> Op[Any]:
    roots = yield from ctx.list_roots()
    yield ctx.log("info", "hello")
    yield ctx.progress(1, 2, "half")
    yield ctx.release_stream()
    return [r.uri for r in roots]


async def test_roots_and_notices_reach_the_host() -> None:
    logs: list[Log] = []
    progress: list[Progress] = []

    async def on_progress(notice: Progress) -> None:
        await trio.lowlevel.checkpoint()
        progress.append(notice)

    with trio.fail_after(5):
        result = await run_in_process(
            chatty,
            {},
            roots=["file:///work", Root("file:///tmp", "tmp")],
            on_log=logs.append,
            on_progress=on_progress,
        )
    assert result == ["file:///work", "file:///tmp"]
    assert [log.data for log in logs] == ["hello"]
    assert [(p.progress, p.total, p.message) for p in progress] == [(1, 2, "half")]


@tool(elicits=[OK])
def needs_everything(ctx: Context) -> Op[str]:
    answer = yield from ctx.elicit(OK, "Go?")
    reply = yield from ctx.sample("hi")
    return f"{answer.action} {reply.model}"


async def test_a_missing_provider_or_handler_is_a_capability_error() -> None:
    with trio.fail_after(5), pytest.raises(CapabilityError) as no_handler:
        await run_in_process(needs_everything, {}, provider=OfflineModel())
    assert no_handler.value.required == {"elicitation": {"form": {}}}
    accept = ScriptedAnswers({"ok": {"ok": True}})
    with trio.fail_after(5), pytest.raises(CapabilityError) as no_provider:
        await run_in_process(needs_everything, {}, elicitation=accept)
    assert no_provider.value.required == {"sampling": {}}


async def test_statistics_count_answers_and_tokens() -> None:
    executor = HostExecutor(OfflineModel(), ScriptedAnswers({"ok": {"ok": True}}))
    with trio.fail_after(5):
        assert await run(needs_everything, {}, executor) == "accept offline"
    stats = executor.statistics()
    assert (stats.samples, stats.elicitations) == (1, 1)
    assert stats.input_tokens > 0
    assert stats.output_tokens > 0


class _Unknown(PeerQuestion[None]):
    pass


async def test_an_unknown_question_is_a_local_protocol_error() -> None:
    executor = HostExecutor(OfflineModel())
    with pytest.raises(LocalProtocolError):
        await executor.perform("0", _Unknown())


@tool(elicits=[OK])
def impatient(ctx: Context) -> Op[Any]:
    def ask(ctx: Context) -> Op[Any]:
        answer = yield from ctx.elicit(OK, "Quick!")
        return answer.action

    return (yield from ctx.branch(ask, limits=Limits(timeout=1)))


async def test_a_withdrawn_question_cancels_the_waiting_handler(
    autojump_clock: trio.testing.MockClock,
) -> None:
    cancelled: list[str] = []

    async def slow(request: ElicitationRequest, ctx: Mapping[str, Any]) -> ElicitReply:
        try:
            await trio.sleep_forever()
        finally:
            cancelled.append(request.message)

    handlers = KeyedHandlers().on(OK, slow)
    with trio.fail_after(5), pytest.raises(BranchTimeout):
        await run_in_process(impatient, {}, elicitation=handlers)
    assert cancelled == ["Quick!"]

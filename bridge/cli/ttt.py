"""Tic-tac-toe against the client's model: the ``play_ttt`` tool from the design.

One tool plays a whole game. ``before`` assigns X and O at random (the draw is
journaled, so a replayed call keeps the same sides). On the model's turn it
first asks for a *strategy* with ``sample_tools`` (offensive or defensive, each
with its own arguments), then for a *move* with ``sample_schema``; an occupied
cell is sent back as an error tool result and asked again. On the user's turn it
elicits a move from the form ``pick_move``. The game ends in a win, a loss, a
draw, or when the user declines or cancels; ``after`` formats the outcome.

It lives in the package so that ``yieldmcp demo`` works from any install,
``pip install .`` included; ``examples/ttt.py`` re-exports it. Serve it with
``yieldmcp serve bridge.cli.ttt`` (or ``examples/ttt.py``).
"""

from __future__ import annotations

import random
from typing import Literal

from pydantic import BaseModel, Field

from runtime import (
    Context,
    ElicitKey,
    Message,
    Op,
    ToolError,
    ToolResult,
    ToolSpec,
    ToolUse,
    handoff,
)

Mark = Literal["X", "O"]
LINES = (
    (0, 1, 2), (3, 4, 5), (6, 7, 8),
    (0, 3, 6), (1, 4, 7), (2, 5, 8),
    (0, 4, 8), (2, 4, 6),
)  # fmt: skip
# A model that ignores the hint could name every taken cell once before the
# last free one: up to 9 tries keep even a blind player in the game.
MOVE_ATTEMPTS = 9


class PlayParams(BaseModel):
    """Start a game of tic-tac-toe against the model."""

    seed: int | None = Field(
        default=None, description="Seed for choosing sides (random when absent)."
    )


class Sides(BaseModel):
    model: Mark
    user: Mark


class Move(BaseModel):
    """A cell on the board, numbered 0-8 left to right, top to bottom."""

    cell: int = Field(ge=0, le=8, description="Cell number 0-8")


class UserMove(BaseModel):
    cell: int = Field(ge=0, le=8, title="Cell", description="Your cell, 0-8")


class Offensive(BaseModel):
    """Play to win: build or complete a line."""

    reasoning: str = Field(description="Why attacking is right now")


class Defensive(BaseModel):
    """Play to block: stop the opponent's line."""

    threat: str = Field(description="The line the opponent threatens")


class Game(BaseModel):
    board: list[str]
    winner: Mark | None
    ended: Literal["win", "draw", "declined", "cancelled"]
    moves: int


class TTTResult(BaseModel):
    outcome: Literal["you won", "model won", "draw", "declined", "cancelled"]
    you_played: Mark
    board: str
    moves: int


PICK_MOVE = ElicitKey("pick_move", UserMove)
STRATEGIES = (
    ToolSpec.from_model("play_offensive", Offensive),
    ToolSpec.from_model("play_defensive", Defensive),
)


def render(board: list[str]) -> str:
    """The board as three rows, empty cells shown by their number."""
    cells = [mark if mark != " " else str(i) for i, mark in enumerate(board)]
    return "\n".join(" | ".join(cells[r : r + 3]) for r in (0, 3, 6))


def winner(board: list[str]) -> Mark | None:
    for a, b, c in LINES:
        if board[a] != " " and board[a] == board[b] == board[c]:
            return "X" if board[a] == "X" else "O"
    return None


def empty_cells(board: list[str]) -> list[int]:
    return [i for i, mark in enumerate(board) if mark == " "]


def assign_sides(params: PlayParams) -> Sides:
    """Runs once per game; the result is journaled, so replays agree."""
    model: Mark = random.Random(params.seed).choice(["X", "O"])
    return Sides(model=model, user="O" if model == "X" else "X")


def model_turn(ctx: Context, board: list[str], mark: Mark) -> Op[int]:
    prompt = (
        f"We are playing tic-tac-toe; you are {mark}.\n{render(board)}\n"
        f"Empty cells: {empty_cells(board)}. Choose your strategy."
    )
    strategy = yield from ctx.sample_tools(prompt, tools=STRATEGIES, retries=3)
    # A model may call both strategies at once: play the first, and answer
    # every call, as the conversation must.
    call = strategy.tool_calls[0]
    answers = [ToolResult(call.id, f"Playing {call.name}. Now pick your cell.")]
    answers += [
        ToolResult(other.id, f"Not played: this turn plays {call.name}.")
        for other in strategy.tool_calls[1:]
    ]
    conversation = [*strategy.exchange.history, Message("user", tuple(answers))]
    for _attempt in range(MOVE_ATTEMPTS):
        move = yield from ctx.sample_schema(messages=conversation, schema=Move)
        if board[move.parsed.cell] == " ":
            return move.parsed.cell
        yield ctx.log("info", f"{mark} chose cell {move.parsed.cell}, which is taken")
        use_id = _schema_call_id(move.exchange.messages[1])
        taken = ToolResult(
            use_id,
            f"Cell {move.parsed.cell} is taken. Empty cells: {empty_cells(board)}.",
            is_error=True,
        )
        conversation = [*move.exchange.history[:-1], Message("user", (taken,))]
    raise ToolError(f"the model chose occupied cells {MOVE_ATTEMPTS} times")


def _schema_call_id(response: Message) -> str:
    return next(b.id for b in response.content if isinstance(b, ToolUse))


Stopped = Literal["declined", "cancelled"]


def user_turn(ctx: Context, board: list[str], mark: Mark) -> Op[int | Stopped]:
    message = f"Your move ({mark}). Pick an empty cell."
    while True:
        reply = yield from ctx.elicit(
            PICK_MOVE, message, board=render(board), empty=empty_cells(board)
        )
        if reply.content is None:
            return "declined" if reply.action == "decline" else "cancelled"
        if board[reply.content.cell] == " ":
            return reply.content.cell
        message = f"Cell {reply.content.cell} is taken. Pick an empty cell."


def play(sides: Sides, ctx: Context) -> Op[Game]:
    """Play one game of tic-tac-toe against the model, taking turns."""
    board = [" "] * 9
    turn: Mark = "X"
    for moves in range(1, 10):
        if turn == sides.model:
            cell = yield from model_turn(ctx, board, turn)
        else:
            picked = yield from user_turn(ctx, board, turn)
            if isinstance(picked, str):  # the user declined or cancelled
                return Game(board=board, winner=None, ended=picked, moves=moves - 1)
            cell = picked
        board[cell] = turn
        yield ctx.log("info", f"{turn} took cell {cell}\n{render(board)}")
        yield ctx.progress(moves, 9, f"move {moves}")
        if winner(board) is not None:
            return Game(board=board, winner=turn, ended="win", moves=moves)
        turn = "O" if turn == "X" else "X"
    return Game(board=board, winner=None, ended="draw", moves=9)


def report(sides: Sides, game: Game) -> TTTResult:
    outcome: Literal["you won", "model won", "draw", "declined", "cancelled"]
    if game.ended == "win":
        outcome = "you won" if game.winner == sides.user else "model won"
    else:
        outcome = game.ended
    return TTTResult(
        outcome=outcome, you_played=sides.user, board=render(game.board),
        moves=game.moves,
    )  # fmt: skip


play_ttt = handoff(
    name="play_ttt",
    description="Play a game of tic-tac-toe against the model; you pick cells.",
    before=assign_sides,
    client=play,
    after=report,
    elicits=[PICK_MOVE],
)

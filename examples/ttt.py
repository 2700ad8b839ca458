"""Tic-tac-toe against the client's model: the ``play_ttt`` tool from the design.

The tool lives in :mod:`bridge.cli.ttt`, inside the package, so that
``yieldmcp demo`` works from any installation (``pip install .`` included);
this file re-exports it, so ``yieldmcp serve examples/ttt.py`` serves it and
the tests import it from here.
"""

from bridge.cli.ttt import (
    LINES,
    MOVE_ATTEMPTS,
    PICK_MOVE,
    STRATEGIES,
    Defensive,
    Game,
    Mark,
    Move,
    Offensive,
    PlayParams,
    Sides,
    TTTResult,
    UserMove,
    assign_sides,
    empty_cells,
    model_turn,
    play,
    play_ttt,
    render,
    report,
    user_turn,
    winner,
)

__all__ = [
    "LINES",
    "MOVE_ATTEMPTS",
    "PICK_MOVE",
    "STRATEGIES",
    "Defensive",
    "Game",
    "Mark",
    "Move",
    "Offensive",
    "PlayParams",
    "Sides",
    "TTTResult",
    "UserMove",
    "assign_sides",
    "empty_cells",
    "model_turn",
    "play",
    "play_ttt",
    "render",
    "report",
    "user_turn",
    "winner",
]

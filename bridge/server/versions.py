"""Whether a call recorded under one version of a tool may go on under this code.

Owns :func:`check_version`, the one check every path that takes a recorded
call on asks before it replays it: a 2026-07-28 round with a sealed
``requestState`` (:mod:`bridge.server.calls.rounds`), a task's round
(:mod:`bridge.server.tasks.runner`), and a 2025-11-25 durable call taken on
by another process or after a restart (:mod:`bridge.server.calls.live`).
A call goes on under code of the version it was recorded under, or of a tool
that lists that version in ``continues`` (``@tool(version="2",
continues=("1",))``: :meth:`runtime.Tool.continues_from`); any other is
refused with one line (-32602), since its journal may not fit the code.

It does not record versions (each path keeps the version with its call: the
sealed state, the task document, the call document) nor replay anything.
"""

from __future__ import annotations

from typing import Any

from bridge.jsonrpc.messages import INVALID_PARAMS
from runtime import Tool
from runtime.errors import RequestError

__all__ = ["check_version"]


def check_version(
    program: Tool[Any, Any], recorded: str | None, *, made: str, again: str
) -> None:
    """Refuse (-32602) to go on under ``program`` with ``made`` (what the
    client holds: ``"requestState"``, ``"task"``...), recorded under version
    ``recorded``, unless ``program`` continues it; ``again`` says what the
    client does instead."""
    if program.continues_from(recorded):
        return
    raise RequestError(
        INVALID_PARAMS,
        f"{made} was made by another version of {program.name!r} "
        f"(the server's code changed during the call); {again}",
    )

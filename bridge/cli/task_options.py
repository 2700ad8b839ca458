"""``yieldmcp call --task``: run the call as a task (2026-07-28 tasks extension).

With ``--task`` the client declares ``io.modelcontextprotocol/tasks`` for the
call; a server that makes a task answers at once, and the client polls it
(:mod:`bridge.client.tasks`), printing each new status as ``[task working]``
(with the server's status message, if any), answering its questions at the
terminal or from ``--answers``. As soon as the server has stored the task,
``[task ID] created`` is printed on stderr: ``yieldmcp tasks get|wait|cancel
SERVER ID`` come back to it (:mod:`.tasks_cmd`). A server that cannot be
reached (it restarts) is asked again, backing off, for as long as the task may
live (its TTL) and within ``--timeout``; each outage is said once on stderr.
Ctrl-C cancels the task (``tasks/cancel``) and exits 130; a task cancelled
by someone else is exit 1. A server that does not make a task (an older era,
a tool without task support) just answers the call.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Final, TextIO

if TYPE_CHECKING:  # imported by every verb's parser: nothing heavy at import
    from runtime.errors import BrokenSessionError

__all__ = [
    "add_task_option",
    "created_printer",
    "shown_task_id",
    "status_printer",
    "task_status_text",
    "unreachable_printer",
]


def add_task_option(call: argparse.ArgumentParser) -> None:
    call.add_argument(
        "--task",
        action="store_true",
        help=(
            "run the call as a task when the server supports the tasks "
            "extension (2026-07-28): its id is printed on stderr ([task ID] "
            "created: `yieldmcp tasks get|wait|cancel SERVER ID` come back to "
            "it), its status is shown while it runs, and it is followed "
            "through server restarts; Ctrl-C cancels the task"
        ),
    )


def task_status_text(status: str, message: str | None) -> str:
    """A task's status as one line: ``[task working] message``. The server's
    line breaks are spaces: a status message could otherwise print a
    ``[task completed]`` line the task never reached."""
    from bridge.elicit import MAX_LINE_SHOWN, printable_line

    line = f"[task {status}] {message or ''}"
    return printable_line(line, most=MAX_LINE_SHOWN).rstrip()


def status_printer(line: Callable[[str], None]) -> Callable[[str, str | None], None]:
    """An ``on_status`` that prints each status with ``line``."""

    def show(status: str, message: str | None) -> None:
        line(task_status_text(status, message))

    return show


SHOWN_ID_CHARACTERS: Final = 200
"""The most of a server's task id printed: one longer cannot be typed back."""


def shown_task_id(task_id: str) -> str:
    """A server's task id as printed: itself when it can be typed back
    (``tasks get SERVER ID``), else JSON-quoted so its controls show as
    escapes (never as another, plausible id), and cut after
    :data:`SHOWN_ID_CHARACTERS` characters, saying how long it is."""
    from bridge.elicit import printable

    plain = task_id.isprintable() and printable(task_id) == task_id
    if plain and len(task_id) <= SHOWN_ID_CHARACTERS:
        return task_id
    quoted = json.dumps(task_id[:SHOWN_ID_CHARACTERS])
    if len(task_id) <= SHOWN_ID_CHARACTERS:
        return quoted
    return f"{quoted}... ({len(task_id)} characters)"


def created_printer(err: TextIO) -> Callable[[str], None]:
    """An ``on_task_created`` that prints ``[task ID] created`` on ``err``."""

    def show(task_id: str) -> None:
        print(f"[task {shown_task_id(task_id)}] created", file=err, flush=True)

    return show


def unreachable_printer(err: TextIO) -> Callable[[str, BrokenSessionError], None]:
    """An ``on_unreachable`` that says on ``err`` the server is being asked again."""

    from bridge.elicit import printable

    def show(task_id: str, error: BrokenSessionError) -> None:
        shown = shown_task_id(task_id)
        text = f"[task {shown}] the server cannot be reached ({error}); trying again"
        print(printable(text), file=err, flush=True)

    return show

"""``yieldmcp call --task``: run the call as a task (2026-07-28 tasks extension).

With ``--task`` the client declares ``io.modelcontextprotocol/tasks`` for the
call; a server that makes a task answers at once, and the client polls it
(:mod:`bridge.client.tasks`), printing each new status as ``[task working]``
(with the server's status message, if any), answering its questions at the
terminal or from ``--answers``. Ctrl-C cancels the task (``tasks/cancel``) and
exits 130; a task cancelled by someone else is exit 1. A server that does not
make a task (an older era, a tool without task support) just answers the call.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

__all__ = ["add_task_option", "status_printer", "task_status_text"]


def add_task_option(call: argparse.ArgumentParser) -> None:
    call.add_argument(
        "--task",
        action="store_true",
        help=(
            "run the call as a task when the server supports the tasks "
            "extension (2026-07-28): its status is shown while it runs; "
            "Ctrl-C cancels the task"
        ),
    )


def task_status_text(status: str, message: str | None) -> str:
    """A task's status as a line: ``[task working] message``."""
    return f"[task {status}] {message or ''}".rstrip()


def status_printer(line: Callable[[str], None]) -> Callable[[str, str | None], None]:
    """An ``on_status`` that prints each status with ``line``."""

    def show(status: str, message: str | None) -> None:
        line(task_status_text(status, message))

    return show

"""``yieldmcp tasks get|wait|cancel SERVER ID``: come back to a task by its id.

A task (2026-07-28 tasks extension) outlives the ``call --task`` that made it,
which prints its id on stderr (``[task ID] created``); these come back to it
from any process, on any server that shares the task's store:

* ``get`` prints its status (``[task working]``), and its result once
  completed, or its error once failed (``--json``: the ``tasks/get`` result as
  the server sent it). Exit 0 whenever the task was read, whatever its status.
* ``wait`` follows it to its end, answering its questions as ``call`` does
  (``--answer``, ``--answers``, ``--model``, the terminal), through server
  restarts (asking again for as long as the task may live), then prints the
  result as ``call`` does, with ``call``'s exit codes. Ctrl-C stops waiting
  (exit 130) and leaves the task running; ``--timeout`` likewise (exit 1).
* ``cancel`` cancels it and prints its status then (``[task cancelled]``, or
  how it had ended already).

An unknown id (never made, or swept after its TTL), a server that cannot be
reached, or one that does not speak 2026-07-28: one line, exit 1. A flag only
``wait`` takes, given to ``get`` or ``cancel``: a usage mistake, exit 2.

It owns these verbs' flags and what they print; following and cancelling are
:class:`bridge.client.Client`'s (:mod:`bridge.client.tasks`), and the terminal
host's parts (forms, model, display, one-line failures) :mod:`.console`'s.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any, Final, TextIO

from .host_options import (
    INTERNAL_PATIENCE,
    MAX_ANSWER,
    MODEL_TIMEOUT,
    add_host_options,
)

if TYPE_CHECKING:  # the parser imports this module: the host only to run
    from .console import CallOptions, Display

__all__ = ["ACTIONS", "add_tasks_verb", "check_tasks_flags", "run_tasks"]

ACTIONS: Final = ("get", "wait", "cancel")
ERA: Final = "2026-07-28"
"""Tasks exist in this era only: no probe."""

_WAIT_ONLY: Final[dict[str, tuple[str, object]]] = {
    "model": ("--model", "offline"),
    "model_timeout": ("--model-timeout", MODEL_TIMEOUT),
    "model_max_answer": ("--model-max-answer", MAX_ANSWER),
    "answers": ("--answers", None),
    "answer": ("--answer", list[object]()),
    "timeout": ("--timeout", None),
    "internal_patience": ("--internal-patience", INTERNAL_PATIENCE),
}
"""The flags only ``wait`` uses (dest: flag, default)."""


def add_tasks_verb(verbs: Any) -> argparse.ArgumentParser:
    """Add ``tasks`` to the verbs; its parser (the caller sets ``run``)."""
    from . import auth_options

    tasks = verbs.add_parser(
        "tasks",
        help="get, wait for or cancel a task by its id (2026-07-28 tasks)",
        description=(
            "Come back to a task (2026-07-28 tasks extension) by the id "
            "`call --task` printed ([task ID] created). get: print its status, "
            "and its result once done (exit 0 whenever it was read). wait: "
            "follow it to its end, answering its questions as call does, "
            "through server restarts, and print the result as call does (its "
            "exit codes); Ctrl-C or --timeout stops waiting and leaves the "
            "task running. cancel: cancel it and print its status. An unknown "
            "ID: one line, exit 1."
        ),
    )
    tasks.add_argument("action", choices=ACTIONS, help="what to do with the task")
    tasks.add_argument("server", metavar="SERVER", help="a server URL (or command)")
    tasks.add_argument("task_id", metavar="ID", help="the task's id")
    add_host_options(tasks, era=False)
    auth_options.add_call_options(tasks)
    return tasks


def check_tasks_flags(args: argparse.Namespace) -> str | None:
    """A usage mistake in ``args`` (a flag only ``wait`` takes), else None."""
    if args.action == "wait":
        return None
    given = [
        flag
        for dest, (flag, default) in _WAIT_ONLY.items()
        if getattr(args, dest) != default
    ]
    if given:
        return f"{', '.join(given)}: only for tasks wait, not tasks {args.action}"
    return None


async def run_tasks(options: CallOptions, action: str, task_id: str) -> int:
    """Run ``tasks ACTION``; the exit code. ``options.tool`` is unused.

    Raises:
        HostError: a failure, as one line (:mod:`.console`).
    """
    import trio

    from .console import HostError
    from .task_options import shown_task_id

    _check_task_id(task_id)
    out = sys.stdout
    if action == "wait" and options.timeout is not None:
        with trio.move_on_after(options.timeout):
            return await _run(options, action, task_id, out)
        shown = shown_task_id(task_id)
        raise HostError(
            f"no result within {options.timeout:g} s (--timeout); task {shown} "
            f"goes on: yieldmcp tasks wait SERVER {shown}"
        )
    return await _run(options, action, task_id, out)


MAX_TASK_ID_BYTES = 4096
"""The longest task id (UTF-8 bytes) the verbs send. It travels in a
request header too (``Mcp-Name``), which a server bounds (ours: 16 KiB,
``--max-header-bytes``): a longer one was refused with HTTP 431, which read
as the server's failure; task ids are short (ours: 32 characters)."""


def _check_task_id(task_id: str) -> None:
    """Refuse, as the user's mistake, an id no server can have been asked
    for: not UTF-8 (bytes the shell passed as they were), or too long.

    Raises:
        HostError: one line saying which.
    """
    from .console import HostError
    from .task_options import shown_task_id

    try:
        size = len(task_id.encode())
    except UnicodeEncodeError:
        raise HostError(
            f"the task id {shown_task_id(task_id)} is not UTF-8 text: no "
            "server has such a task (check what was given)"
        ) from None
    if size > MAX_TASK_ID_BYTES:
        raise HostError(
            f"the task id given is {len(task_id):,} characters ({size:,} bytes): "
            f"a task id is at most {MAX_TASK_ID_BYTES:,} bytes here (check what "
            "was given)"
        )


async def _run(options: CallOptions, action: str, task_id: str, out: TextIO) -> int:
    from bridge.client.client import connect
    from bridge.jsonrpc.messages import INVALID_PARAMS
    from runtime.errors import PeerError, YieldMCPError

    from .console import HostError, failure_text, host_parts, report_unused
    from .task_options import shown_task_id, status_printer, unreachable_printer

    handler, sampler, show = host_parts(options, out)
    remote = isinstance(options.target, str) and "://" in options.target
    try:
        async with connect(
            options.target,
            era=ERA,
            sampler=sampler,
            elicitation=handler,
            on_log=show.log,
            auth=options.auth if remote else None,
            connect_timeout=options.connect_timeout,
            max_message=options.max_message,
            max_listing=options.max_listing,
            max_questions=options.max_questions,
            internal_patience=options.internal_patience,
        ) as client:
            if action == "get":
                return _shown(await client.get_task(task_id), options, show)
            if action == "cancel":
                return _shown(await client.cancel_task(task_id), options, show)
            result = await client.follow_task(
                task_id,
                on_status=status_printer(show.line),
                on_unreachable=unreachable_printer(sys.stderr),
            )
    except PeerError as exc:
        if exc.code == INVALID_PARAMS and exc.message.startswith("Unknown task"):
            raise HostError(
                f"the server has no task {shown_task_id(task_id)} (never made "
                f"there, or forgotten after its TTL)"
            ) from None
        raise HostError(failure_text(exc, ERA)) from None
    except (OSError, YieldMCPError) as exc:
        raise HostError(failure_text(exc, ERA)) from None
    report_unused(options.answers)
    return show.result(
        result, json_output=options.json_output, save_media=options.save_media
    )


def _shown(task: Any, options: CallOptions, show: Display) -> int:
    """Print what ``get`` and ``cancel`` found: the status, then the result or
    the error (``--json``: the task as the server sent it). Exit 0."""
    from bridge.elicit import MAX_LINE_SHOWN, printable_line

    from .console import json_text
    from .task_options import task_status_text

    if options.json_output:
        print(json_text(dict(task.wire)))
        return 0
    print(task_status_text(task.status, task.status_message))
    if task.questions:
        print(printable_line(f"waiting on: {', '.join(task.questions)}"))
    if task.error is not None:
        error = f"error: {task.error.message} ({task.error.code})"
        print(printable_line(error, most=MAX_LINE_SHOWN))
    if task.result is not None:
        show.result(task.result, json_output=False, save_media=options.save_media)
    return 0

"""Ctrl-C for every verb: an orderly stop and exit status 130, never a traceback.

``run_trio`` runs a verb's trio main with SIGINT turned into a cancellation:
the first Ctrl-C cancels everything, so context managers close what they
opened (a spawned server is asked to stop, then terminated), and the verb
then exits with :data:`EXIT_INTERRUPTED`. Whatever the cancelled work raised
on its way out (the server went away, say) is beside the point and is not
shown. A second Ctrl-C while stopping leaves at once.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import trio

__all__ = ["EXIT_INTERRUPTED", "Interrupted", "run_trio"]

EXIT_INTERRUPTED = 130
"""The shell's status for a command stopped by SIGINT (128 + 2)."""

T = TypeVar("T")


class Interrupted(Exception):
    """The user pressed Ctrl-C; the work was stopped in order."""


def run_trio(main: Callable[..., Awaitable[T]], *args: Any) -> T:
    """``trio.run(main, *args)``, stopped cleanly by Ctrl-C (``Interrupted``)."""
    interrupted = False

    async def watch(
        scope: trio.CancelScope, *, task_status: trio.TaskStatus[None]
    ) -> None:
        nonlocal interrupted
        with trio.open_signal_receiver(signal.SIGINT) as signals:
            task_status.started()
            async for _ in signals:
                if interrupted:
                    os._exit(EXIT_INTERRUPTED)  # asked twice: stop waiting
                interrupted = True
                scope.cancel()

    async def guarded() -> Any:
        result: Any = None
        failure: Exception | None = None
        async with trio.open_nursery() as nursery:
            await nursery.start(watch, nursery.cancel_scope)
            try:
                result = await main(*args)
            except Exception as exc:
                failure = exc  # raised as itself, not in the nursery's group
            nursery.cancel_scope.cancel()
        if failure is not None:
            raise failure
        return result

    try:
        result: T = trio.run(guarded)
    except BaseException:
        if interrupted:
            raise Interrupted from None
        raise
    if interrupted:
        raise Interrupted
    return result

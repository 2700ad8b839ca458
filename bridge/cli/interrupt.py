"""Ctrl-C for every verb: an orderly stop and exit status 130, never a traceback.

``run_trio`` runs a verb's trio main with SIGINT turned into a cancellation:
the first Ctrl-C cancels everything, so context managers close what they
opened (a spawned server is asked to stop, then terminated), and the verb
then exits with :data:`EXIT_INTERRUPTED`. Whatever the cancelled work raised
on its way out (the server went away, say) is beside the point and is not
shown. A second Ctrl-C while stopping leaves at once.

:func:`receiving` is the one way the CLI hears signals: trio's receiver,
whose handlers a process forked from ours (the served code's ``os.fork``,
``multiprocessing``'s ``fork`` start) does not keep. Kept, they only wake an
event loop the child does not run, so SIGTERM and Ctrl-C would do nothing to
it, and ``Pool.terminate`` (a ``with Pool(...)`` block's end) would wait on it
for ever, blocking the server.
"""

from __future__ import annotations

import collections
import contextlib
import os
import signal
from collections.abc import AsyncIterator, Awaitable, Callable, Generator
from typing import Any, Final, TypeVar

import trio

__all__ = ["EXIT_INTERRUPTED", "Interrupted", "receiving", "run_trio"]

EXIT_INTERRUPTED = 130
"""The shell's status for a command stopped by SIGINT (128 + 2)."""

T = TypeVar("T")


_RECEIVED: Final[collections.Counter[int]] = collections.Counter()


def _defaults_in_child() -> None:
    # Runs first thing in a forked child; the forking thread is its main one.
    if not +_RECEIVED:
        return
    with contextlib.suppress(ValueError, OSError):
        signal.set_wakeup_fd(-1)  # the parent's loop's, which it would wake
    for signum in +_RECEIVED:
        default = signal.default_int_handler if signum == signal.SIGINT else None
        with contextlib.suppress(ValueError, OSError):
            signal.signal(signum, default or signal.SIG_DFL)
    _RECEIVED.clear()


os.register_at_fork(after_in_child=_defaults_in_child)


@contextlib.contextmanager
def receiving(*signums: int) -> Generator[AsyncIterator[int]]:
    """``trio.open_signal_receiver(*signums)``; a process forked meanwhile
    gets Python's default handlers for them instead (see the module doc)."""
    _RECEIVED.update(signums)
    try:
        with trio.open_signal_receiver(*signums) as signals:
            yield signals
    finally:
        _RECEIVED.subtract(signums)


class Interrupted(Exception):
    """The user pressed Ctrl-C; the work was stopped in order."""


def run_trio(main: Callable[..., Awaitable[T]], *args: Any) -> T:
    """``trio.run(main, *args)``, stopped cleanly by Ctrl-C (``Interrupted``)."""
    interrupted = False

    async def watch(
        scope: trio.CancelScope, *, task_status: trio.TaskStatus[None]
    ) -> None:
        nonlocal interrupted
        with receiving(signal.SIGINT) as signals:
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

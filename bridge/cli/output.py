"""Standard output that fails as one line.

A command's output may not be writable: the disk is full (``> /dev/full``),
standard output was closed (``>&-``), or its reader went away (``| head
-c0``). Python raises ``OSError`` from whichever ``print`` meets it, deep in
the command, which the command then took for a failure of its own ("cannot
start the server") or did not catch at all (a traceback, and an install
that had written its file exiting 1).

:func:`guarded` stands in for ``sys.stdout`` while a command runs: a write
or flush that fails raises :class:`OutputFailed`, one line for the command
line to print (exit 1). A reader that went away is told nothing
(:class:`ReaderGone`, exit 1, as ``| head`` cuts any command short), and
what Python would flush at exit goes nowhere instead of into a second
error.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import sys
from collections.abc import Generator
from typing import Any, TextIO

__all__ = ["OutputFailed", "ReaderGone", "guarded"]


class OutputFailed(Exception):
    """Standard output could not be written: one line for the user."""


class ReaderGone(OutputFailed):
    """Standard output's reader went away (a closed pipe): nothing to say."""


class _Guarded(io.TextIOBase):
    """``sys.stdout`` whose failures are :class:`OutputFailed`."""

    def __init__(self, inner: TextIO | None) -> None:
        self._inner = inner

    def _failed(self, exc: OSError) -> OutputFailed:
        if exc.errno == errno.EPIPE:
            _silence()
            return ReaderGone()
        return OutputFailed(f"cannot write to standard output: {exc.strerror or exc}")

    def write(self, text: str) -> int:
        if self._inner is None:  # started with descriptor 1 closed
            raise OutputFailed("cannot write to standard output: it is closed")
        try:
            return self._inner.write(text)
        except OSError as exc:
            raise self._failed(exc) from None

    def flush(self) -> None:
        if self._inner is None:
            return
        try:
            self._inner.flush()
        except OSError as exc:
            raise self._failed(exc) from None

    def isatty(self) -> bool:
        return self._inner is not None and self._inner.isatty()

    def fileno(self) -> int:
        if self._inner is None:
            raise io.UnsupportedOperation("standard output is closed")
        return self._inner.fileno()

    def __getattr__(self, name: str) -> Any:  # encoding, buffer, ...
        return getattr(self._inner, name)


def _silence() -> None:
    """Point descriptor 1 at ``/dev/null``: what is left in Python's buffer
    is flushed there at exit, not into a BrokenPipeError of its own."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        sink = os.open(os.devnull, os.O_WRONLY)
        os.dup2(sink, sys.__stdout__.fileno())  # type: ignore[union-attr]
        os.close(sink)


@contextlib.contextmanager
def guarded() -> Generator[None]:
    """``sys.stdout`` guarded while the block runs (module doc), flushed at
    its end so that a failure shows here, and put back after."""
    inner = sys.stdout
    sys.stdout = _Guarded(inner)
    try:
        yield
        sys.stdout.flush()
    finally:
        sys.stdout = inner

"""Lines typed at the terminal, read so that a withdrawn question leaves no trace.

A question can be withdrawn while the person types (the call ended, the server
died, Ctrl-C). ``input()`` in a worker thread cannot be interrupted: the thread
stays blocked inside the buffered ``sys.stdin`` and, at interpreter shutdown,
aborts the process ("Fatal Python error: _enter_buffered_busy"). So this module
never touches ``sys.stdin``: it waits in trio until file descriptor 0 is
readable, which a cancellation simply stops, and then ``os.read``\\ s what is
there. Bytes read past the end of a line (a pasted block, a pipe) are kept for
the next question.
"""

from __future__ import annotations

import os
from typing import TextIO

import trio

__all__ = ["read_stdin_line"]

_STDIN = 0
_pending = bytearray()  # read, not yet handed out: the rest of a pasted block


async def read_stdin_line(prompt: str, out: TextIO, *, fd: int = _STDIN) -> str | None:
    """Show ``prompt`` on ``out`` and read one line; None at end of input.

    ``fd`` is standard input unless a test gives another (a pipe's end).
    """
    out.write(prompt)
    out.flush()
    while True:
        end = _pending.find(b"\n")
        if end >= 0:
            line = bytes(_pending[:end])
            del _pending[: end + 1]
            return line.decode("utf-8", "replace").removesuffix("\r")
        try:
            chunk = await _read_chunk(fd)
        except trio.Cancelled:
            # Withdrawn (the server went away, Ctrl-C): whatever is shown
            # next starts on a line of its own, not after the prompt.
            if _is_terminal(fd):
                out.write("\n")
                out.flush()
            raise
        if not chunk:
            break
        _pending.extend(chunk)
    if _pending:  # a last line without its newline
        line = bytes(_pending)
        _pending.clear()
        return line.decode("utf-8", "replace")
    if _is_terminal(fd):
        # Ctrl-D echoes nothing: end the prompt's line, so what is shown next
        # does not run on after it.
        out.write("\n")
        out.flush()
    return None


async def _read_chunk(fd: int) -> bytes:
    try:
        await trio.lowlevel.wait_readable(fd)
    except PermissionError:
        pass  # a regular file or /dev/null: no waiting needed, reads never block
    except OSError:
        return b""  # no stdin at all
    try:
        return os.read(fd, 4096)
    except OSError:
        return b""


def _is_terminal(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False

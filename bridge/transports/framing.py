"""Newline-delimited framing, sans-IO: bytes in, whole lines out.

A line longer than ``max_line`` is dropped (the reader keeps discarding until
the next newline) and reported as :data:`OVERSIZED`, so a hostile peer cannot
make us buffer without bound. Blank lines are skipped.
"""

from __future__ import annotations

from typing import Final, final

__all__ = ["MAX_MESSAGE", "OVERSIZED", "LineBuffer"]

MAX_MESSAGE: Final = 16 * 1024 * 1024
"""The largest message read by default, by either side and over either
transport: a stdio line, an HTTP answer's JSON body, one SSE event."""

OVERSIZED: Final = b""
"""Returned in place of a line that exceeded ``max_line``."""


@final
class LineBuffer:
    """Accumulates bytes and yields complete lines (without the newline)."""

    __slots__ = ("_buffer", "_discarding", "max_line")

    def __init__(self, max_line: int = MAX_MESSAGE) -> None:
        self.max_line = max_line
        self._buffer = bytearray()
        self._discarding = False

    def feed(self, data: bytes) -> list[bytes]:
        """Add ``data``; return the lines it completed (OVERSIZED for dropped ones)."""
        lines: list[bytes] = []
        start = 0
        while True:
            end = data.find(b"\n", start)
            if end < 0:
                self._keep(data[start:], lines)
                return lines
            self._keep(data[start:end], lines)
            if self._discarding:
                self._discarding = False
            else:
                line = bytes(self._buffer).rstrip(b"\r")
                if line.strip():
                    lines.append(line)
            self._buffer.clear()
            start = end + 1

    def _keep(self, chunk: bytes, lines: list[bytes]) -> None:
        if self._discarding:
            return
        self._buffer += chunk
        if len(self._buffer) > self.max_line:
            self._buffer.clear()
            self._discarding = True
            lines.append(OVERSIZED)

    @property
    def pending(self) -> int:
        """Bytes of an incomplete line held so far."""
        return len(self._buffer)

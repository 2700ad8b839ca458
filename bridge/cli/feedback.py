"""Feedback at a terminal while a call runs: who is thinking, how far along.

Only when stderr is a terminal (never into a pipe or a file):

* while the model answers a sampling request, a spinner line
  ``⠋ waiting for openai:gpt-4o-mini…`` on stderr, erased when it answers;
* progress notifications as a bar, ``[progress ███░░░░░░ 3/9] move 3``.

Piped, progress stays the plain ``[progress 3/9] move 3`` and nothing else is
added. The message is the server's: one line (its line breaks are spaces,
so it cannot print a line of its own), cut where the caller says. No
terminal library: one line that rewrites itself needs only ``\\r`` and the
erase-line escape, which every terminal since the VT100 has.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TextIO, final

import trio

from bridge.elicit import printable_line

__all__ = ["ERASE_LINE", "WaitingSampler", "progress_text"]

_FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
ERASE_LINE = _ERASE = "\r\x1b[K"
_BAR = 12


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


@final
class WaitingSampler:
    """A sampler that shows a spinner on a terminal while ``inner`` answers."""

    def __init__(
        self,
        inner: Any,
        label: str,
        *,
        out: TextIO | None = None,
        on_first: Callable[[], None] | None = None,
    ) -> None:
        self.inner = inner
        self.label = label
        self.out = out or sys.stderr
        # Called when the first request comes: a call that never samples has
        # no model to name, and one answered by the server's model neither.
        self.on_first = on_first
        # The client reads this to decide whether to declare sampling.tools.
        self.supports_tools = getattr(inner, "supports_tools", False)

    async def complete(self, request: Any) -> Any:
        if self.on_first is not None:
            announce, self.on_first = self.on_first, None
            announce()
        if not _is_terminal(self.out):
            return await self.inner.complete(request)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._spin)
            try:
                return await self.inner.complete(request)
            finally:
                nursery.cancel_scope.cancel()
                self.out.write(_ERASE)
                self.out.flush()

    async def _spin(self) -> None:
        frame = 0
        while True:
            self.out.write(f"{_ERASE}{_FRAMES[frame]} waiting for {self.label}…")
            self.out.flush()
            frame = (frame + 1) % len(_FRAMES)
            await trio.sleep(0.1)


def progress_text(
    value: float,
    total: float | None,
    message: str | None,
    *,
    bar: bool,
    most: int | None = None,
) -> str:
    """A progress notification as a line; with ``bar``, drawn as a bar. The
    message on one line, its first ``most`` characters (None: all of it)."""
    amount = f"{value:g}/{total:g}" if total is not None else f"{value:g}"
    if bar and total:
        filled = round(_BAR * max(0.0, min(1.0, value / total)))
        amount = f"{'█' * filled}{'░' * (_BAR - filled)} {amount}"
    said = printable_line(message or "", most=most)
    return f"[progress {amount}] {said}".rstrip()

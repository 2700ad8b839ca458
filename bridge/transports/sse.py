"""Server-Sent Events framing, sans-IO: events to bytes, and bytes back to events.

:func:`encode` writes one event (``id:``, ``event:``, ``retry:``, ``data:``
lines and the blank line that ends it); :class:`SseParser` is its inverse, fed
arbitrary chunks, following the WHATWG ``text/event-stream`` rules we need
(``\\n``, ``\\r\\n`` and ``\\r`` line ends; comments; a leading space after the
colon is stripped; multi-line data is joined with ``\\n``). The parser exists
for tests and for clients; the server only encodes.

It knows nothing about JSON-RPC or MCP, and it never waits.
"""

from __future__ import annotations

import codecs
import re
from typing import final

import attrs

__all__ = ["SseEvent", "SseEventTooLarge", "SseParser", "encode"]


@final
@attrs.frozen
class SseEvent:
    """One dispatched event. ``data`` is ``""`` for an event with empty data;
    ``id`` is the event's own ``id:`` field (``None`` if it had none)."""

    data: str = ""
    event: str | None = None
    id: str | None = None
    retry: int | None = None


def _field_safe(value: str, name: str) -> str:
    # A line break would end the field early and let the rest be read as
    # another field (SSE injection); ids and event names never need one.
    if "\n" in value or "\r" in value or "\0" in value:
        raise ValueError(f"an SSE {name} cannot contain a line break or NUL")
    return value


def encode(
    data: str | bytes = "",
    *,
    event: str | None = None,
    id: str | None = None,
    retry: int | None = None,
) -> bytes:
    """The bytes of one SSE event; multi-line ``data`` becomes several lines.

    Raises:
        ValueError: ``event`` or ``id`` holds a line break, or ``retry`` is
            negative.
    """
    text = data.decode() if isinstance(data, bytes) else data
    lines: list[str] = []
    if id is not None:
        lines.append(f"id: {_field_safe(id, 'id')}")
    if event is not None:
        lines.append(f"event: {_field_safe(event, 'event name')}")
    if retry is not None:
        if retry < 0:
            raise ValueError("an SSE retry must be a non-negative number of ms")
        lines.append(f"retry: {retry}")
    normalised = text.replace("\r\n", "\n").replace("\r", "\n")
    lines.extend(f"data: {line}" for line in normalised.split("\n"))
    return ("\n".join(lines) + "\n\n").encode()


# The three line ends SSE allows; "\r\n" first, so that it counts as one.
_LINE_END = re.compile("\r\n|\r|\n")


class SseEventTooLarge(ValueError):
    """An event (or an unfinished line) longer than the parser reads."""


@final
class SseParser:
    """Incremental ``text/event-stream`` parser: ``feed`` bytes, get events."""

    def __init__(self, max_event: int | None = None) -> None:
        # A chunk may end inside a multi-byte UTF-8 character.
        self._decoder = codecs.getincrementaldecoder("utf-8")()
        # Characters of one event (its lines so far), at most: a peer that
        # sends one endless event or line must not fill the memory.
        self._max_event = max_event
        self._size = 0
        self._pending = ""
        self._cr = False
        self._data: list[str] = []
        self._event: str | None = None
        self._id: str | None = None
        self._retry: int | None = None
        self._has_fields = False

    def feed(self, chunk: bytes | str) -> list[SseEvent]:
        """Add ``chunk``; return the events it completed, in order."""
        text = self._decoder.decode(chunk) if isinstance(chunk, bytes) else chunk
        if not text:
            return []
        if self._cr and text[0] == "\n":  # the \n of a \r\n pair cut in two
            text = text[1:]
        self._cr = text.endswith("\r")
        # Only the new text is searched: what is pending holds no line end.
        parts = _LINE_END.split(text)
        parts[0] = self._pending + parts[0]
        # Every part but the last ended at a line end; the last is unfinished.
        *lines, self._pending = parts
        events: list[SseEvent] = []
        for line in lines:
            self._line(line, events)
        if (
            self._max_event is not None
            and self._size + len(self._pending) > self._max_event
        ):
            raise SseEventTooLarge(f"an SSE event over {self._max_event:,} characters")
        return events

    def _line(self, line: str, events: list[SseEvent]) -> None:
        if not line:
            self._dispatch(events)
            return
        if line.startswith(":"):
            return  # a comment (keep-alive)
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        self._has_fields = True
        self._size += len(line)  # checked, with what is pending, by feed
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self._id = value
        elif name == "retry" and value.isdigit() and value.isascii():
            # int() refuses past 4300 digits; no reader waits 10**12 ms.
            self._retry = int(value) if len(value) <= 12 else 10**12

    def _dispatch(self, events: list[SseEvent]) -> None:
        if self._has_fields:
            events.append(
                SseEvent(
                    data="\n".join(self._data),
                    event=self._event,
                    id=self._id,
                    retry=self._retry,
                )
            )
        # Unlike a browser's lastEventId, ``id`` is per event: tests want to
        # see exactly which events carried one.
        self._data, self._event, self._id, self._retry = [], None, None, None
        self._has_fields = False
        self._size = 0

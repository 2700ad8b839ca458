"""``TerminalForm``: elicitation answered by a person at a terminal.

Owns the conversation with the person: the request's message and context
(``x-model-context``, e.g. a board) above the form, one prompt per field,
re-prompting until an answer fits, and the URL-mode consent question. It reads
and writes only through the ``read_line`` and ``write`` callables it is given
(by default ``input()`` in a worker thread, so the trio loop keeps running,
and ``print``); tests and scripts pass their own.

Typed at any prompt:

* Enter: the field's default (shown in brackets); an optional field without
  one is left empty.
* ``:skip``: leave an optional field empty.
* ``:decline``: decline the whole request (an explicit "no").
* ``:cancel``, or end of input (Ctrl-D): cancel (dismissed without choosing).

Choices are picked by number, value or title; several, separated by commas.
URL mode shows the full URL and its site and asks for consent; it never opens
anything (the person does, if they agree).

Understanding answers is :mod:`._fields`'s job; this module only asks.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, TypeAlias, final
from urllib.parse import urlsplit

import attrs
import trio

from runtime.replies import ElicitReply
from runtime.requests import ElicitationRequest

from ._fields import Field, Invalid, form_fields

__all__ = [
    "CANCEL",
    "DECLINE",
    "SKIP",
    "ReadLine",
    "TerminalForm",
    "Write",
    "line_reader",
    "render_context",
    "stdin_line",
]

ReadLine: TypeAlias = Callable[[str], Awaitable[str | None]]
"""Show a prompt and read one line (without its newline); None at end of input."""

Write: TypeAlias = Callable[[str], None]
"""Show one line of text (without its newline)."""

DECLINE = ":decline"
CANCEL = ":cancel"
SKIP = ":skip"

_HELP = (
    f"Enter accepts the [default]; {SKIP} leaves an optional field empty;",
    f"{DECLINE} declines; {CANCEL} or Ctrl-D cancels.",
)
_YES = frozenset({"y", "yes"})
_NO = frozenset({"n", "no", DECLINE})


class _Skipped:
    """An optional field left empty."""


_SKIPPED = _Skipped()


@final
class TerminalForm:
    """An :class:`~bridge.elicit.ElicitationHandler` that asks at a terminal.

    Args:
        read_line: shows a prompt and reads a line; None means end of input.
            Defaults to ``input()`` run in a worker thread.
        write: shows one line. Defaults to ``print`` on stdout.
    """

    def __init__(
        self, *, read_line: ReadLine | None = None, write: Write | None = None
    ) -> None:
        self._read_line = read_line or stdin_line
        self._write = write or _print

    async def handle(self, request: ElicitationRequest) -> ElicitReply:
        """Ask the person; their answer, or decline/cancel if they say so."""
        if request.mode == "url":
            return await self._consent(request)
        return await self._form(request)

    async def _form(self, request: ElicitationRequest) -> ElicitReply:
        self._header(request, "Form" if request.key is None else f"Form: {request.key}")
        for line in _HELP:
            self._write(line)
        content: dict[str, Any] = {}
        fields = form_fields(request.requested_schema)
        for index, field in enumerate(fields, 1):
            self._write("")
            first, *rest = field.describe()
            self._write(f"[{index}/{len(fields)}] {first}")
            for line in rest:
                self._write(line)
            answer = await self._answer(field)
            if isinstance(answer, ElicitReply):
                return answer
            if not isinstance(answer, _Skipped):
                content[field.name] = answer
        return ElicitReply(action="accept", content=content)

    async def _answer(self, field: Field) -> Any:
        """The field's value, ``_SKIPPED``, or a decline/cancel reply."""
        while True:
            line = await self._read_line(field.prompt())
            if line is None:
                return ElicitReply(action="cancel")
            outcome = _interpret(field, line.strip())
            if not isinstance(outcome, _Retry):
                return outcome
            self._write(f"  ! {outcome.reason}")

    async def _consent(self, request: ElicitationRequest) -> ElicitReply:
        self._header(request, "Open a link")
        url = request.url or ""
        self._write(f"  URL:  {url}")
        self._write(f"  site: {urlsplit(url).netloc or '(none)'}")
        self._write("Nothing is opened for you; open the URL yourself if you agree.")
        while True:
            line = await self._read_line(f"Consent? yes / no ({CANCEL} to cancel): ")
            if line is None:
                return ElicitReply(action="cancel")
            word = line.strip().lower()
            if word in _YES:
                return ElicitReply(action="accept")
            if word in _NO:
                return ElicitReply(action="decline")
            if word == CANCEL:
                return ElicitReply(action="cancel")
            self._write("  ! type yes or no")

    def _header(self, request: ElicitationRequest, title: str) -> None:
        self._write(f"── {title} " + "─" * max(3, 60 - len(title)))
        self._write(request.message)
        for line in render_context(request.context):
            self._write(line)


@attrs.frozen
class _Retry:
    """An answer that does not fit; ``reason`` says why."""

    reason: str


def _interpret(field: Field, text: str) -> Any:
    """What ``text`` means for ``field``: a value, ``_SKIPPED``, a reply, a retry."""
    command = _command(text)
    if command is not None:
        return command
    if text.lower() == SKIP:
        return _Retry(f"{field.title} is required") if field.required else _SKIPPED
    if not text:
        if field.has_default:
            return field.default
        if not field.required:
            return _SKIPPED
        if field.kind != "multiselect":  # an empty multi-select may be valid
            return _Retry(f"{field.title} is required; type a value")
    try:
        return field.parse(text)
    except Invalid as exc:
        return _Retry(str(exc))


def _command(text: str) -> ElicitReply | None:
    word = text.lower()
    if word == DECLINE:
        return ElicitReply(action="decline")
    if word == CANCEL:
        return ElicitReply(action="cancel")
    return None


def render_context(context: Mapping[str, Any]) -> list[str]:
    """The tool's context as indented lines; multi-line text stays multi-line."""
    lines: list[str] = []
    for name, value in context.items():
        if isinstance(value, str) and "\n" in value:
            lines.append(f"  {name}:")
            lines.extend(f"    {row}" for row in value.splitlines())
        elif isinstance(value, str):
            lines.append(f"  {name}: {value}")
        else:
            lines.append(f"  {name}: {json.dumps(value, ensure_ascii=False)}")
    return lines


# --- input and output ---------------------------------------------------------------


async def stdin_line(prompt: str) -> str | None:
    """``input(prompt)`` in a worker thread; None at end of input.

    If the question is withdrawn while waiting, the thread is abandoned (a
    blocked ``input()`` cannot be interrupted); the line typed next is lost.
    """
    return await trio.to_thread.run_sync(_input, prompt, abandon_on_cancel=True)


def _input(prompt: str) -> str | None:
    try:
        return input(prompt)
    except EOFError:
        return None


def _print(text: str) -> None:
    print(text, file=sys.stdout, flush=True)


def line_reader(lines: Iterable[str], *, echo: Write | None = None) -> ReadLine:
    """A ``read_line`` that answers from ``lines``, then reports end of input.

    ``echo`` receives each prompt with the line typed after it (``^D`` at the
    end), which makes a readable transcript.
    """
    pending = iter(lines)

    async def read_line(prompt: str) -> str | None:
        await trio.lowlevel.checkpoint()
        line = next(pending, None)
        if echo is not None:
            echo(prompt + ("^D" if line is None else line))
        return line

    return read_line

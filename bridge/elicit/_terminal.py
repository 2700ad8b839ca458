"""``TerminalForm``: elicitation answered by a person at a terminal.

Owns the conversation with the person: the request's message and context
(``x-model-context``, e.g. a board) above the form, one prompt per field,
re-prompting until an answer fits, and the URL-mode consent question. It reads
and writes only through the ``read_line`` and ``write`` callables it is given
(by default the terminal, read by :mod:`._stdin` so that a withdrawn
question can be abandoned cleanly, and ``print``; both on stdout unless
``out`` says otherwise); tests and scripts pass their own. One form is asked
at a time: concurrent questions wait their turn, whole.

Typed at any prompt:

* Enter: the field's default (shown in brackets); an optional field without
  one is left empty.
* ``:skip``: leave an optional field empty.
* ``:decline``: decline the whole request (an explicit "no").
* ``:cancel``, ``:quit``, ``:exit``, or end of input (Ctrl-D): cancel
  (dismissed without choosing).
* ``:help``: show these commands again (they are shown with the first form).
* Any other ``:word`` is not taken as an answer; start a value that begins
  with a colon with two (``::x`` is ``:x``).

Choices are picked by number, value or title; several, separated by commas.
URL mode shows the full URL and its site and asks for consent; it never opens
anything (the person does, if they agree).

Everything shown (the message, titles, descriptions, choices, the URL, the
prompts) goes through :func:`~bridge.elicit.printable` first: the server
chose those words, and a terminal would obey control sequences in them.
Each line written is one line (:func:`~bridge.elicit.printable_line`): a
title, a key, the URL or a context value holding a line break cannot print
a line of its own. The message and a multi-line context value keep their
lines, each after the first indented, so none can pass for the form's own
(a field's ``[1/2]``, a choice, a ``yieldmcp: error:``).

Understanding answers is :mod:`._fields`'s job; this module only asks.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, TextIO, TypeAlias, final
from urllib.parse import urlsplit

import attrs
import trio

from bridge.printable import MAX_LINE_SHOWN, printable, printable_line
from runtime.replies import ElicitReply
from runtime.requests import ElicitationRequest

from ._fields import Field, Invalid, form_fields
from ._stdin import read_stdin_line

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
HELP = ":help"
_QUIT = frozenset({CANCEL, ":quit", ":exit", ":q"})

_HELP = (
    f"Enter accepts the [default]; {SKIP} leaves an optional field empty;",
    f"{DECLINE} declines; {CANCEL} (or :quit, Ctrl-D) cancels; {HELP} shows this.",
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
            Defaults to the terminal (prompts on ``out``).
        write: shows one line. Defaults to ``print`` on ``out``.
        out: where the default ``read_line`` and ``write`` show text: stdout
            unless given (``yieldmcp call --json`` keeps forms on stderr).
    """

    def __init__(
        self,
        *,
        read_line: ReadLine | None = None,
        write: Write | None = None,
        out: TextIO | None = None,
    ) -> None:
        self._reader = read_line or _terminal_reader(out)
        self._writer = write or _printer(out)
        self._turn = trio.Lock()  # one whole form at a time
        self._helped = False

    # Everything shown passes through these two: a form's words are the
    # server's, and a terminal would obey the control sequences in them. One
    # line each: a line break the server put in a word is a space.
    def _write(self, text: str) -> None:
        self._writer(printable_line(text))

    async def _read_line(self, prompt: str) -> str | None:
        return await self._reader(printable_line(prompt))

    async def handle(self, request: ElicitationRequest) -> ElicitReply:
        """Ask the person; their answer, or decline/cancel if they say so."""
        async with self._turn:
            if request.mode == "url":
                return await self._consent(request)
            return await self._form(request)

    def _help(self) -> None:
        for line in _HELP:
            self._write(line)

    async def _form(self, request: ElicitationRequest) -> ElicitReply:
        self._header(request, "Form" if request.key is None else f"Form: {request.key}")
        if not self._helped:  # once: a game asks the same form again and again
            self._helped = True
            self._help()
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
            if isinstance(outcome, _Help):
                self._help()
            elif not isinstance(outcome, _Retry):
                return outcome
            else:  # the reason may quote the schema: the server's words
                self._write(
                    f"  ! {printable_line(outcome.reason, most=MAX_LINE_SHOWN)}"
                )

    async def _consent(self, request: ElicitationRequest) -> ElicitReply:
        self._header(request, "Open a link")
        url = request.url or ""
        self._write(f"  URL:  {printable_line(url, most=MAX_LINE_SHOWN)}")
        self._write(f"  site: {_site(url)}")
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
            if word in _QUIT:
                return ElicitReply(action="cancel")
            self._write("  ! type yes or no")

    def _header(self, request: ElicitationRequest, title: str) -> None:
        title = printable_line(title, most=MAX_LINE_SHOWN)  # a key is the server's
        self._write(f"── {title} " + "─" * max(3, 60 - len(title)))
        first, *rest = printable(request.message).splitlines() or [""]
        self._write(first)
        for line in rest:
            self._write(f"  {line}")
        for line in render_context(request.context):
            self._write(line)


@attrs.frozen
class _Retry:
    """An answer that does not fit; ``reason`` says why."""

    reason: str


@attrs.frozen
class _Help:
    """``:help`` was typed: show the commands, ask again."""


def _interpret(field: Field, text: str) -> Any:
    """What ``text`` means: a value, ``_SKIPPED``, a reply, help or a retry."""
    if text.startswith("::"):
        text = text[1:]  # an escaped colon: a value, not a command
    elif text.startswith(":"):
        return _command(field, text.lower())
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


def _command(field: Field, word: str) -> Any:
    if word == DECLINE:
        return ElicitReply(action="decline")
    if word in _QUIT:
        return ElicitReply(action="cancel")
    if word == HELP:
        return _Help()
    if word == SKIP:
        return _Retry(f"{field.title} is required") if field.required else _SKIPPED
    return _Retry(
        f"unknown command {word} ({HELP} lists them; ::text for a value "
        "starting with a colon)"
    )


def render_context(context: Mapping[str, Any]) -> list[str]:
    """The tool's context as indented lines; multi-line text stays multi-line,
    under its name; a name, and any other value, is one line, cut."""
    lines: list[str] = []
    for key, value in context.items():
        name = printable_line(str(key), most=MAX_LINE_SHOWN)
        rows = printable(value).splitlines() if isinstance(value, str) else []
        if len(rows) > 1:
            lines.append(f"  {name}:")
            lines.extend(f"    {row}" for row in rows)
        elif isinstance(value, str):
            lines.append(f"  {name}: {printable_line(value, most=MAX_LINE_SHOWN)}")
        else:
            text = json.dumps(value, ensure_ascii=False)
            lines.append(f"  {name}: {printable_line(text, most=MAX_LINE_SHOWN)}")
    return lines


# --- input and output ---------------------------------------------------------------


async def stdin_line(prompt: str) -> str | None:
    """Show ``prompt`` on stdout and read a line typed at the terminal.

    None at end of input. If the question is withdrawn while waiting, nothing
    is left blocked (see :mod:`._stdin`).
    """
    return await read_stdin_line(prompt, sys.stdout)


def _terminal_reader(out: TextIO | None) -> ReadLine:
    async def read_line(prompt: str) -> str | None:
        return await read_stdin_line(prompt, out or sys.stdout)

    return read_line


def _printer(out: TextIO | None) -> Write:
    def write(text: str) -> None:
        print(text, file=out or sys.stdout, flush=True)

    return write


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


def _site(url: str) -> str:
    """The host a consent URL takes the person to, as they must read it: not
    what stands before an ``@`` (``https://accounts.google.com@evil.example``
    goes to evil.example), and a name in letters other than ASCII in the
    ASCII form a browser's address bar may show (``\\u0430pple.com``, its first
    letter Cyrillic, is ``xn--pple-43d.com``)."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname or "", parts.port
    except ValueError:  # an unclosed IPv6 bracket, a port that is no number
        return "(none: the URL cannot be read)"
    if not host:
        return "(none)"
    shown = host
    if not host.isascii():
        try:
            ascii_name = host.encode("idna").decode("ascii")
        except UnicodeError:
            ascii_name = "(no ASCII form)"
        shown = f"{ascii_name} (written {host!r}: not only ASCII letters)"
    if port is not None:
        shown = f"{shown}, port {port}"
    if "@" in parts.netloc:
        before = parts.netloc.rpartition("@")[0]
        shown += f" (not {before!r}: that is written before its @)"
    return printable_line(shown, most=MAX_LINE_SHOWN)

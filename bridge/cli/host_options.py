"""The options ``call`` and ``demo`` share: who answers, in which era, how long.

Owns the flags of the terminal host (``--model``, ``--model-timeout``,
``--answers``/``--answer``,
``--era``, ``--timeout``, ``--connect-timeout``, ``--internal-patience``,
``--json``) and reading the
scripted answers they name. Does not run anything (:mod:`.console` does).
"""

from __future__ import annotations

import argparse
import codecs
import json
import math
from pathlib import Path
from typing import Any, Final, cast

from bridge.printable import has_unseen
from bridge.transports.framing import MAX_MESSAGE as MAX_MESSAGE

__all__ = [
    "MAX_ANSWER",
    "MODEL_TIMEOUT",
    "add_host_options",
    "is_port",
    "key_value",
    "port",
    "positive_int",
    "scripted_answers",
    "finite",
    "no_constant",
    "strict_json",
    "seconds",
    "shown",
]

MODEL_TIMEOUT = 600.0
"""``--model-timeout``'s default: ``bridge.providers.DEFAULT_DEADLINE``,
written here so that building the parser imports no provider code."""

MAX_ANSWER = 32 * 1024 * 1024
"""``--model-max-answer``'s default: ``bridge.providers.MAX_ANSWER``, written
here for the same reason (a test keeps them equal)."""


MAX_QUESTIONS = 64
"""``--max-questions``'s default: ``connect(max_questions=)``'s, written here
so that building the parser imports no client code (a test keeps them equal)."""

MAX_LISTING = 32 * 1024 * 1024
"""``--max-listing``'s default: ``bridge.client.pages.MAX_LISTING``, written
here for the same reason (kept equal by the same test)."""

INTERNAL_PATIENCE = 60.0
"""``--internal-patience``'s default: ``bridge.client.tasks.INTERNAL_PATIENCE``,
written here for the same reason."""


SHOWN_CHARACTERS: Final = 200
"""The most of a value the user gave that a one-line message quotes back."""


def _escaped(text: str) -> str:
    """``text`` with each character no one sees (which ``repr`` keeps: a
    Hangul filler, a combining grapheme joiner) as its escape."""
    return "".join(f"\\u{ord(c):04x}" if has_unseen(c) else c for c in text)


def shown(
    value: str | Path, *, cut: int | None = SHOWN_CHARACTERS, quote: bool = False
) -> str:
    """A value the user gave (a flag's, a path), as a message quotes it:
    itself when every character of it prints as itself (``quote``: always
    quoted, as argparse quotes values), else ``repr``-quoted, so that a
    newline shows as ``\\n`` and a terminal's escape sequences as
    ``\\x1b[...``, never obeyed nor printing a line of its own; cut after
    ``cut`` characters (None: whole), saying how long it is."""
    text = str(value)
    kept = text if cut is None else text[:cut]
    seen = kept.isprintable() and not has_unseen(kept)
    quoted = kept if seen and not quote else _escaped(repr(kept))
    if len(kept) == len(text):
        return quoted
    return f"{quoted}... ({len(text):,} characters)"


def seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not seconds > 0:
        raise argparse.ArgumentTypeError(f"expected seconds > 0, got {value!r}")
    return seconds


def positive_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number > 0, got {value!r}")
    return number


def is_port(value: str) -> bool:
    """Whether ``value`` spells a TCP port, 0 to 65535. The socket layer would
    take 99999 as 34463 (modulo 65536) without a word."""
    return value.isascii() and value.isdigit() and int(value) <= 65535


def port(value: str) -> int:
    """A TCP port flag's value (0: any free one)."""
    if not is_port(value):
        raise argparse.ArgumentTypeError(f"expected a port 0-65535, got {value!r}")
    return int(value)


class NotAJsonNumber(ValueError):
    """Python's JSON parser reads it as a number; JSON has no such number."""


def no_constant(name: str) -> Any:
    """``json.loads``'s ``parse_constant``: ``NaN`` and ``Infinity`` refused."""
    raise NotAJsonNumber(f"{name} is not a JSON number")


def finite(text: str) -> float:
    """``json.loads``'s ``parse_float``: a number past a float (``1e400``,
    read as infinity) refused."""
    number = float(text)
    if math.isinf(number):
        raise NotAJsonNumber(f"{text} is too large a number")
    return number


def strict_json(text: str) -> Any:
    """``json.loads``, refusing what Python reads but JSON has not: ``NaN``,
    ``Infinity`` and numbers past a float (``1e400``), which would go on the
    wire as text no peer can parse.

    Raises:
        json.JSONDecodeError: ``text`` is not JSON.
    """
    try:
        return json.loads(text, parse_constant=no_constant, parse_float=finite)
    except NotAJsonNumber as exc:
        raise json.JSONDecodeError(str(exc), text, 0) from None


def key_value(value: str) -> tuple[str, Any]:
    key, sep, raw = value.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {value!r}")
    try:
        return key, strict_json(raw)
    except json.JSONDecodeError:
        return key, raw  # a bare word is a string
    except RecursionError:
        raise argparse.ArgumentTypeError(
            f"{key}'s value is JSON nested too deep"
        ) from None


def add_host_options(command: argparse.ArgumentParser, *, era: bool = True) -> None:
    """The host's flags on ``command``; ``era``: ``--era`` too (``tasks``
    has none: tasks exist in 2026-07-28 only)."""
    command.add_argument(
        "--model",
        default="offline",
        metavar="SPEC",
        help=(
            "who answers sampling: offline[:SEED] (built-in, no API key; the "
            "default), openai:NAME, openai-responses:NAME, anthropic:NAME, "
            "ollama:NAME or gemini:NAME (keys and base URLs from OPENAI_API_KEY, "
            "OPENAI_BASE_URL, ANTHROPIC_API_KEY, OLLAMA_HOST, GEMINI_API_KEY)"
        ),
    )
    command.add_argument(
        "--model-timeout",
        type=seconds,
        default=MODEL_TIMEOUT,
        metavar="SECONDS",
        help=(
            "how long --model may take over one answer, retries included "
            "(default 600); each network step also gets 60"
        ),
    )
    command.add_argument(
        "--model-max-answer",
        type=positive_int,
        default=MAX_ANSWER,
        metavar="BYTES",
        help=(
            "the largest answer read from --model, whole or streamed "
            f"(default {MAX_ANSWER}, {MAX_ANSWER // 2**20} MiB)"
        ),
    )
    command.add_argument(
        "--answers",
        metavar="FILE",
        help=(
            'answer forms from a JSON file instead of the terminal: {"KEY": '
            'ANSWER or [ANSWERS...]}, each answer the form content, or "decline" '
            'or "cancel"; a form with no answer left is cancelled'
        ),
    )
    command.add_argument(
        "--answer",
        action="append",
        default=[],
        type=key_value,
        metavar="KEY=JSON",
        help=(
            "one scripted form answer (repeatable; used in order for that key). "
            "KEY is the form's key: a yieldmcp tool's ElicitKey name (checked "
            "before the call), or the key another server chose for its form "
            "(shown when it asks); * answers any form with no key of its own"
        ),
    )
    if era:
        command.add_argument(
            "--era",
            choices=("auto", "legacy", "2026-07-28"),
            default="auto",
            help="protocol era: probe (auto), the 2025-11-25 handshake, or 2026-07-28",
        )
    command.add_argument(
        "--timeout",
        type=seconds,
        metavar="SECONDS",
        help="give up when the result has not come within SECONDS (default: wait)",
    )
    command.add_argument(
        "--connect-timeout",
        type=seconds,
        default=10.0,
        metavar="SECONDS",
        help=(
            "how long each handshake request may wait for the server (default "
            "10); with --era auto, server/discover is waited for this long, "
            "and initialize follows only if the server says it does not know "
            "server/discover"
        ),
    )
    command.add_argument(
        "--internal-patience",
        type=seconds,
        default=INTERNAL_PATIENCE,
        metavar="SECONDS",
        help=(
            "how long a followed task's server may answer -32603 (an internal "
            "error: its store away a while) and be asked again, in seconds in "
            "a row, before the error is reported (default 60)"
        ),
    )
    command.add_argument(
        "--max-message",
        type=positive_int,
        default=MAX_MESSAGE,
        metavar="BYTES",
        help=(
            "the largest message read from the server: an HTTP answer's body, "
            "an SSE event or a stdio line (default 16777216, 16 MiB)"
        ),
    )
    command.add_argument(
        "--max-listing",
        type=positive_int,
        default=MAX_LISTING,
        metavar="CHARS",
        help=(
            "the most characters of JSON one list the server sends in pages "
            "may take in all (tools/list, ...); pages past it are left out, "
            "with a warning (default 33554432, 32 Mi)"
        ),
    )
    command.add_argument(
        "--max-questions",
        type=positive_int,
        default=MAX_QUESTIONS,
        metavar="N",
        help=(
            "the most questions one 2026-07-28 round may ask, each a model call "
            "or a form (a round asking more gets none answered), and the most "
            "2025-11-25 questions open at once (default 64)"
        ),
    )
    command.add_argument(
        "--json",
        action="store_true",
        help="print the whole result as JSON, nothing else",
    )
    command.add_argument(
        "--save-media",
        type=Path,
        metavar="DIR",
        help=(
            "write the result's images and audio to files in DIR (made if "
            "missing; a symbolic link or FIFO found under a file's name is "
            "not written through: the file is not saved and the exit code is 1)"
        ),
    )


def scripted_answers(args: argparse.Namespace) -> Any:
    """The scripted answers ``--answers``/``--answer`` give; None: ask at the terminal.

    Raises:
        ValueError: the file cannot be read, or holds no valid answers.
    """
    from bridge.elicit import ScriptedAnswers

    if args.answers is None and not args.answer:
        return None
    script: dict[str, Any] = {}
    if args.answers is not None:
        script = _answers_file(args.answers)
    for key, value in args.answer:
        listed = script.get(key, [])
        script[key] = [*(listed if isinstance(listed, list) else [listed]), value]
    try:
        return ScriptedAnswers(script)
    except ValueError as exc:
        raise ValueError(f"bad scripted answers: {exc}") from None


def _answers_file(name: str) -> dict[str, Any]:
    """What ``--answers FILE`` holds: a JSON object, strictly (no ``NaN``).

    Raises:
        ValueError: one line naming ``--answers`` and the file, saying why.
    """
    where = f"--answers {shown(name)}"
    try:
        data = Path(name).read_bytes()
    except OSError as exc:
        raise ValueError(f"cannot read {where}: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8-sig")  # a byte order mark, as Notepad writes
    except UnicodeDecodeError as exc:
        utf16 = data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE))
        why = "it is UTF-16" if utf16 else f"byte 0x{exc.object[exc.start]:02x}"
        raise ValueError(f"cannot read {where}: not UTF-8 JSON ({why})") from None
    try:
        script: Any = strict_json(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"cannot read {where}: not valid JSON: {exc}") from None
    except RecursionError:
        raise ValueError(f"cannot read {where}: JSON nested too deep") from None
    if isinstance(script, dict):
        return cast("dict[str, Any]", script)
    raise ValueError(f"{where} must hold a JSON object of KEY: answers")

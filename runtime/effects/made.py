"""Where the effects of a running call were made, to report those never yielded.

``ctx.sample("say hi")`` without ``yield from`` builds a question and drops
it: nothing is asked, and the call goes on as if all were well. Python has
the same trap for coroutines and reports a coroutine that was never awaited;
this module is the same report for effects, and for the *ops* a context
method returns as a generator (``ctx.step(save, row)``, ``ctx.random()``):
one never started never ran.

While a call's stepper runs the tool's code, :data:`MADE` holds a list; each
effect the :class:`~runtime.context.Context` builds is noted in it with the
code and offset that built it (:func:`note`: one context-variable read when
no call runs, a frame lookup when one does; the line is worked out only for a
report). The stepper strikes out each effect
that is yielded; what is left when the call ends is reported by
:func:`report`, as an :class:`~runtime.errors.EffectNeverYielded` warning at
the line that made it. An op is never yielded itself (its effects are), so it
is not struck: it counts as used once it has started, and :func:`settle`
drops the started ops at the end of the notes, so a call of many steps keeps
no note of each.

It knows nothing of calls or frames of a tool: the stepper decides when the
notes start and end (:mod:`runtime.call.stepper`).
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterable
from contextvars import ContextVar
from types import CodeType, GeneratorType
from typing import Any, Final, TypeAlias, TypeVar, cast

from ..errors import EffectNeverYielded
from .base import spelling

__all__ = ["MADE", "Made", "note", "report", "settle", "strike"]

Made: TypeAlias = tuple[Any, CodeType, int]
"""An effect or an op, and where it was made: the code and the offset of the
call in it (a line is worked out from them only for a report)."""

MADE: Final[ContextVar[list[Made] | None]] = ContextVar("yieldmcp_made", default=None)
"""The notes of the call whose tool code runs now; None outside a call (an
effect a test builds to look at is nobody's business)."""

# The warnings registries of the report, one per file as Python keeps one per
# module: under the default filters each line is reported once per process.
_REGISTRIES: Final[dict[str, dict[Any, Any]]] = {}

E = TypeVar("E")


def note(effect: E) -> E:
    """``effect`` (or op), noted as made by the caller's caller (the tool's
    line that called a :class:`~runtime.context.Context` method) if a call is
    running."""
    made = MADE.get()
    if made is not None:
        frame = sys._getframe(2)  # pyright: ignore[reportPrivateUsage]
        made.append((effect, frame.f_code, frame.f_lasti))
    return effect


def strike(notes: list[Made], effect: object) -> bool:
    """Strike the latest note of ``effect`` (it was yielded); False if none."""
    for index in range(len(notes) - 1, -1, -1):
        if notes[index][0] is effect:
            del notes[index]
            return True
    return False


def settle(notes: list[Made]) -> None:
    """Drop the ops at the end of ``notes`` that have started (they are used:
    what they make is noted and struck for itself)."""
    # _started_op, inlined: this runs on every step a call yields.
    while notes:
        op: Any = notes[-1][0]
        if type(op) is not GeneratorType:
            return
        if not (op.gi_suspended or op.gi_running or op.gi_frame is None):
            return
        notes.pop()


def report(notes: Iterable[Made]) -> None:
    """Warn of each effect in ``notes``, and each op never started: made,
    never yielded.

    Raises:
        EffectNeverYielded: when warnings of its kind are errors (``-W error``).
    """
    for effect, code, offset in notes:
        if _started_op(effect):
            continue
        made = spelling(effect)
        filename, lineno = code.co_filename, _line(code, offset)
        warnings.warn_explicit(
            f"{made} made an effect that was never yielded, so it never "
            f"happened: write `yield from {made}`",
            EffectNeverYielded,
            filename,
            lineno,
            registry=_REGISTRIES.setdefault(filename, {}),
        )


def _started_op(made: object) -> bool:
    """Whether ``made`` is an op that has started: a generator not in
    ``inspect.GEN_CREATED`` (a frame neither running nor suspended). One
    closed before it started has no frame, and counts as started: whoever
    closed it meant to."""
    if type(made) is not GeneratorType:
        return False
    op = cast("GeneratorType[Any, Any, Any]", made)
    return op.gi_suspended or op.gi_running or op.gi_frame is None


def _line(code: CodeType, offset: int) -> int:
    """The line of the instruction at ``offset`` in ``code``."""
    for start, end, line in code.co_lines():
        if start <= offset < end and line is not None:
            return line
    return code.co_firstlineno

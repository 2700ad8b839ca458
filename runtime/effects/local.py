"""Local questions: effects the runtime answers itself, journaled for replay.

Owns :class:`Clock` (the wall clock) and :class:`RandomBits` (random
integers). Each is answered by :meth:`~runtime.effects.LocalQuestion.compute`
and recorded like a peer's answer or a step's result (a handoff's ``before``
is a step: :mod:`runtime.steps.tools`), so a replayed tool sees the same time
and the same random numbers.

It does not read a clock or a random source itself (the driver hands them to
``compute``), and does not decide when a recorded answer is used (the stepper
does).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, final

import attrs

from ..errors import InvalidAnswer
from .base import JSON, LocalQuestion

__all__ = ["Clock", "RandomBits"]


@final
@attrs.frozen
class Clock(LocalQuestion[float]):
    """Read the wall clock (seconds since the epoch), recorded for replay."""

    def fingerprint(self) -> JSON:
        return {"effect": "clock"}

    def resolve(self, reply: Any, key: str) -> float:
        # A replayed reading comes from a journal that may be hand-edited or
        # foreign: a non-number (or one no float holds) is a named refusal,
        # not a TypeError or OverflowError out of float().
        if isinstance(reply, int | float) and not isinstance(reply, bool):
            try:
                seconds = float(reply)
            except OverflowError:
                seconds = math.inf
            if math.isfinite(seconds):
                return seconds
        raise InvalidAnswer(
            f"a clock reading at {key!r} is a finite number of seconds, "
            f"not {_shown(reply)}"
        )

    def compute(self, clock: Callable[[], float], bits: Callable[[int], int]) -> Any:
        return clock()


@final
@attrs.frozen
class RandomBits(LocalQuestion[int]):
    """Draw a random non-negative integer of ``bits`` bits, recorded for replay."""

    bits: int = attrs.field(default=64, validator=attrs.validators.in_(range(1, 257)))

    def fingerprint(self) -> JSON:
        return {"effect": "random", "bits": self.bits}

    def resolve(self, reply: Any, key: str) -> int:
        if type(reply) is int and 0 <= reply < 1 << self.bits:
            return reply
        raise InvalidAnswer(
            f"a random draw of {self.bits} bits at {key!r} is an integer from 0 "
            f"to 2**{self.bits}-1, not {_shown(reply)}"
        )

    def compute(self, clock: Callable[[], float], bits: Callable[[int], int]) -> Any:
        return bits(self.bits)


def _shown(reply: Any) -> str:
    """A recorded reply in an error: its repr, cut short (a journal is text
    anyone may have edited)."""
    text = repr(reply)
    return text if len(text) <= 60 else f"{text[:60]}..."

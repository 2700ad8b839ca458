"""The numeric bounds a JSON Schema sets: the range to draw a number from.

Reads ``minimum``/``maximum`` and ``exclusiveMinimum``/``exclusiveMaximum`` in
both spellings (2020-12 numbers, draft-4 booleans) and gives the tightest range,
or a span of ``DEFAULT_SPAN`` beside the one bound given (around 0 when none
is). Pure; used by :mod:`bridge.providers._jsongen`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, cast

__all__ = ["DEFAULT_SPAN", "float_bounds", "int_bounds"]

DEFAULT_SPAN = 100


def _number(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value
    return None


def _limits(schema: Mapping[str, Any]) -> tuple[Any, bool, Any, bool]:
    """The tightest lower and upper bounds, each with whether it is exclusive.

    Reads 2020-12 (``exclusiveMinimum: 3``) and draft-4 (``minimum: 3,
    exclusiveMinimum: true``) spellings; at a tie the exclusive bound wins.
    """
    lows = _candidates(schema, "minimum", "exclusiveMinimum")
    highs = _candidates(schema, "maximum", "exclusiveMaximum")
    low, open_low = max(lows) if lows else (None, False)
    high, open_high = (
        min(highs, key=lambda c: (c[0], not c[1])) if highs else (None, False)
    )
    return low, open_low, high, open_high


def _candidates(
    schema: Mapping[str, Any], inclusive: str, exclusive: str
) -> list[tuple[float, bool]]:
    plain = _number(schema.get(inclusive))
    strict: Any = schema.get(exclusive)
    found: list[tuple[float, bool]] = []
    if plain is not None:
        found.append((plain, strict is True))
    strict_value = _number(strict)
    if strict_value is not None:
        found.append((strict_value, True))
    return found


def int_bounds(schema: Mapping[str, Any]) -> tuple[int, int]:
    low, open_low, high, open_high = _limits(schema)
    lo = None if low is None else math.floor(low) + 1 if open_low else math.ceil(low)
    hi = (
        None if high is None else math.ceil(high) - 1 if open_high else math.floor(high)
    )
    if lo is None and hi is None:
        return 0, DEFAULT_SPAN
    if lo is None:
        return cast(int, hi) - DEFAULT_SPAN, cast(int, hi)
    if hi is None:
        return lo, lo + DEFAULT_SPAN
    return lo, hi


def float_bounds(schema: Mapping[str, Any]) -> tuple[float, float, bool, bool]:
    low, open_low, high, open_high = _limits(schema)
    if low is None and high is None:
        return -float(DEFAULT_SPAN), float(DEFAULT_SPAN), False, False
    if low is None:
        return high - DEFAULT_SPAN, high, False, open_high
    if high is None:
        return low, low + DEFAULT_SPAN, open_low, False
    return low, high, open_low, open_high

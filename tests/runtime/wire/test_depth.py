"""``runtime.wire.depth``: how deep a value nests, measured as JSON nests."""

from __future__ import annotations

from typing import Any

from runtime.lowlevel import MAX_MESSAGE_DEPTH, nesting


def test_levels_are_counted_as_json_nests() -> None:
    assert nesting(1) == 0
    assert nesting({}) == 1
    assert nesting({"a": [1]}) == 2
    assert nesting(({"a": 1}, [[[]]])) == 4


def test_a_value_past_pythons_recursion_limit_is_measured_up_to_the_stop() -> None:
    value: Any = 1
    for _ in range(100_000):
        value = [value]
    assert nesting(value) == MAX_MESSAGE_DEPTH + 1
    assert nesting(value, stop=100_001) == 100_000

"""What no JSON message can carry: non-finite defaults left out, the rest found
(through ``@tool``, which refuses what is found)."""

from __future__ import annotations

import math

import pytest

from runtime import Context, tool
from runtime.lowlevel import InvalidTool, sendable_schema


def test_only_defaults_holding_a_non_finite_number_are_left_out() -> None:
    schema = {
        "type": "object",
        "properties": {
            # A parameter named "default" is a name, not the keyword.
            "default": {"type": "number", "default": math.inf},
            "limits": {"type": "array", "default": [1.0, -math.inf]},
            "steps": {"type": "integer", "default": 3},
        },
        "$defs": {"Sub": {"properties": {"x": {"default": math.nan}}}},
        "examples": [{"default": math.inf}],  # data, as it is
    }
    assert sendable_schema(schema) == {
        "type": "object",
        "properties": {
            "default": {"type": "number"},
            "limits": {"type": "array"},
            "steps": {"type": "integer", "default": 3},
        },
        "$defs": {"Sub": {"properties": {"x": {}}}},
        "examples": [{"default": math.inf}],
    }


@pytest.mark.parametrize(
    ("properties", "found"),
    [
        ({"n": {"examples": [{"default": -math.inf}]}}, "examples[0].default is -inf"),
        ({"x\ud800": {}}, "properties.x\\ud800 is not valid Unicode: '\\ud800'"),
        ({"s": {"enum": ["ok", "\udce9"]}}, "enum[1] is not valid Unicode"),
    ],
)
def test_what_json_cannot_carry_is_found_where_it_is(
    properties: dict[str, object], found: str
) -> None:
    with pytest.raises(InvalidTool, match=r"^tool 'raw', ") as refused:

        @tool(input_schema={"type": "object", "properties": properties})
        def raw(ctx: Context) -> str:
            return ""

    assert found in str(refused.value)

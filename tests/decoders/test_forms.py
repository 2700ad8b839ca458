"""decoders._forms: the quick check never accepts what jsonschema refuses."""

from __future__ import annotations

import math
from typing import Any

import jsonschema
from hypothesis import given
from hypothesis import strategies as st

from decoders._forms import surely_valid

_numbers = (
    st.integers(-5, 5)
    | st.floats(-5, 5)
    | st.sampled_from([math.inf, -math.inf, math.nan])
)
_field = st.one_of(
    st.fixed_dictionaries(
        {"type": st.just("string")},
        optional={
            "minLength": st.integers(0, 3),
            "maxLength": st.integers(0, 3),
            "enum": st.lists(st.text(max_size=2), max_size=3),
            "format": st.sampled_from(["email", "date"]),
            "title": st.text(max_size=3),
        },
    ),
    st.fixed_dictionaries(
        {"type": st.sampled_from(["number", "integer"])},
        optional={"minimum": _numbers, "maximum": _numbers, "default": _numbers},
    ),
    st.fixed_dictionaries(
        {"type": st.just("boolean")}, optional={"enum": st.lists(st.booleans())}
    ),
    st.fixed_dictionaries(
        {"type": st.sampled_from(["string", "array", "null"])},
        optional={"items": st.just({"type": "string"}), "pattern": st.just("^a")},
    ),
)
_names = st.sampled_from(["a", "b", "c"])
_values = (
    st.none() | st.booleans() | st.integers(-6, 6) | st.floats(allow_nan=True)
    | st.text(max_size=4) | st.lists(st.text(max_size=2), max_size=2)
)  # fmt: skip


@st.composite
def _schemas(draw: st.DrawFn) -> dict[str, Any]:
    properties = draw(st.dictionaries(_names, _field, max_size=3))
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if draw(st.booleans()):
        schema["required"] = draw(st.lists(_names, unique=True, max_size=3))
    if draw(st.booleans()):
        schema[draw(st.sampled_from(["title", "additionalProperties", "$schema"]))] = (
            False
        )
    return schema


@given(_schemas(), st.dictionaries(_names | st.text(max_size=2), _values, max_size=4))
def test_an_answer_surely_valid_is_valid(
    schema: dict[str, Any], content: dict[str, Any]
) -> None:
    if surely_valid(schema, content):
        errors = list(jsonschema.Draft202012Validator(schema).iter_errors(content))
        assert errors == []


def test_the_common_answer_is_confirmed_quickly() -> None:
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "title": "Name", "minLength": 1},
            "age": {"type": "integer", "minimum": 0},
            "size": {"type": "string", "enum": ["s", "m"]},
            "ok": {"type": "boolean", "default": False},
        },
        "required": ["name"],
    }
    assert surely_valid(schema, {"name": "Ada", "age": 36.0, "size": "m", "ok": True})
    assert surely_valid(schema, {"name": "", "age": 1}) is None  # minLength: ask
    assert surely_valid(schema, {"age": 1}) is None  # missing name: ask

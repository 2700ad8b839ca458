"""``plain_form_properties``: forms recognised as valid MCP without the models.

A server's first form used to build an era's ~150 ``mcp-types`` models (a
fifth of a process's start-up) to check the form's fields. The fast path
accepts only fields of exactly MCP's shapes; whatever it accepts must pass
both eras' models and both official ``schema.json`` files, and whatever it
is unsure of is left to the models, as before.
"""

from __future__ import annotations

import math
from enum import StrEnum
from typing import Any, Literal

import jsonschema
import mcp_types._v2025_11_25 as v2025
import mcp_types._v2026_07_28 as v2026
import pytest
from hypothesis import event, given
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from runtime.lowlevel import (
    Elicit,
    check_form_properties,
    plain_form_properties,
    plain_requested_schema,
)
from tests.mcp_schema import ERAS, validate

# Values of every JSON type, and the ones only Python has, for any key.
_ANY: st.SearchStrategy[Any] = st.one_of(
    st.text(max_size=4),
    st.integers(-3, 3),
    st.booleans(),
    st.none(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.lists(st.text(max_size=3), max_size=3),
    st.lists(st.one_of(st.text(max_size=3), st.integers()), max_size=3),
    st.dictionaries(st.text(max_size=3), st.text(max_size=3), max_size=2),
)
_OPTION = st.fixed_dictionaries({"const": _ANY, "title": _ANY}) | st.fixed_dictionaries(
    {"const": st.text(max_size=4), "title": st.text(max_size=4)},
    optional={"x": _ANY},
)
# Each key MCP's field shapes define, with values mostly of its own type.
_KEYS: dict[str, st.SearchStrategy[Any]] = {
    "type": st.sampled_from(
        ["string", "number", "integer", "boolean", "array", "object"]
    )
    | _ANY,
    "title": st.text(max_size=4) | _ANY,
    "description": st.text(max_size=4) | _ANY,
    "default": _ANY,
    "minLength": st.integers(0, 5) | _ANY,
    "maxLength": st.integers(0, 5) | _ANY,
    "format": st.sampled_from(["email", "uri", "date", "date-time", "time"]) | _ANY,
    "minimum": st.floats(allow_nan=False) | _ANY,
    "maximum": st.integers() | _ANY,
    "enum": st.lists(st.text(max_size=4), max_size=3) | _ANY,
    "enumNames": st.lists(st.text(max_size=4), max_size=3) | _ANY,
    "oneOf": st.lists(_OPTION, max_size=3) | _ANY,
    "minItems": st.integers(0, 3) | _ANY,
    "maxItems": st.integers(0, 3) | _ANY,
    "items": st.fixed_dictionaries(
        {"type": st.just("string") | _ANY, "enum": st.lists(st.text(max_size=3)) | _ANY}
    )
    | st.fixed_dictionaries({"anyOf": st.lists(_OPTION, max_size=3) | _ANY})
    | _ANY,
    "pattern": st.text(max_size=3),
    "$ref": st.just("#/$defs/X"),
}


_TEXT = st.text(max_size=4)
_STRINGS = st.lists(_TEXT, max_size=3)
_OPTIONS = st.lists(st.fixed_dictionaries({"const": _TEXT, "title": _TEXT}), max_size=3)
_NUMBER = st.integers() | st.floats(allow_nan=False, allow_infinity=False)
_COMMON = {"title": _TEXT, "description": _TEXT}
_FORMAT = st.sampled_from(["email", "uri", "date", "date-time"])
# Each of MCP's field shapes, spelled right: (fixed keys, optional keys).
_SHAPES: list[tuple[dict[str, Any], dict[str, Any]]] = [
    (
        {"type": st.just("string")},
        {**_COMMON, "default": _TEXT, "minLength": st.integers(-1),
         "maxLength": st.integers(0), "format": _FORMAT},
    ),
    (
        {"type": st.sampled_from(["number", "integer"])},
        {**_COMMON, "default": _NUMBER, "minimum": _NUMBER, "maximum": _NUMBER},
    ),
    ({"type": st.just("boolean")}, {**_COMMON, "default": st.booleans()}),
    ({"type": st.just("string"), "enum": _STRINGS}, {**_COMMON, "default": _TEXT}),
    (
        {"type": st.just("string"), "enum": _STRINGS, "enumNames": _STRINGS},
        {**_COMMON, "default": _TEXT},
    ),
    ({"type": st.just("string"), "oneOf": _OPTIONS}, {**_COMMON, "default": _TEXT}),
    (
        {"type": st.just("array"), "items": st.fixed_dictionaries(
            {"type": st.just("string"), "enum": _STRINGS}
        ) | st.fixed_dictionaries({"anyOf": _OPTIONS})},
        {**_COMMON, "default": _STRINGS, "minItems": st.integers(0),
         "maxItems": st.integers(-1)},
    ),
]  # fmt: skip


@st.composite
def form_fields(draw: st.DrawFn) -> Any:
    """One of MCP's field shapes, spelled right or with one thing wrong."""
    fixed, optional = draw(st.sampled_from(_SHAPES))
    field = draw(st.fixed_dictionaries(fixed, optional=optional))
    wrong = draw(
        st.sampled_from(["none", "none", "none", "value", "key", "not a dict"])
    )
    if wrong == "value" and field:
        field[draw(st.sampled_from(sorted(field)))] = draw(_ANY)
    elif wrong == "key":
        key = draw(st.sampled_from(sorted(_KEYS)))
        field[key] = draw(_KEYS[key])
    elif wrong == "not a dict":
        return draw(_ANY)
    return field


_PROPERTIES = st.dictionaries(st.text(max_size=5), form_fields(), max_size=3) | _ANY
# One field a time too: with three, one is almost always spelled wrong.
_PROPERTIES |= st.dictionaries(st.text(max_size=5), form_fields(), max_size=1)


@given(_PROPERTIES)
def test_what_the_fast_path_accepts_every_era_and_schema_accepts(
    properties: Any,
) -> None:
    plain = plain_form_properties(properties)
    event(f"plain: {plain}")
    if not plain:
        return
    for models in (v2025, v2026):
        check_form_properties(models, properties)
    for era in ERAS:
        for field in properties.values():
            validate(era, "PrimitiveSchemaDefinition", field)


class Seat(StrEnum):
    window = "window"
    aisle = "aisle"


class EveryShape(BaseModel):
    name: str = Field(title="Name", description="yours", min_length=1, max_length=9)
    email: str = Field(json_schema_extra={"format": "email"})
    nights: int = Field(ge=1, le=30, default=2)
    budget: float | None = None
    meal: bool = True
    seat: Seat = Seat.aisle
    size: Literal["s", "m", "l"] = "m"
    extras: list[Literal["bag", "lounge"]] = []
    titled: str = Field(
        default="a",
        json_schema_extra={
            "oneOf": [{"const": "a", "title": "A"}, {"const": "b", "title": "B"}]
        },
    )


def test_the_forms_tools_make_take_the_fast_path() -> None:
    # What runtime.elicitation.schema makes from a model, every shape of it.
    form = Elicit(key="every", message="Fill it in", model=EveryShape)
    properties = form.requested_schema["properties"]
    assert plain_form_properties(properties), properties
    for era in ERAS:
        for field in properties.values():
            validate(era, "PrimitiveSchemaDefinition", field)


@pytest.mark.parametrize(
    "field",
    [
        {"type": "string", "default": None},  # valid, but left to the models
        {"type": "integer", "default": True},  # a bool is no number here
        {"type": "number", "minimum": math.inf},
        {"type": "string", "format": ["email"]},  # unhashable: no crash
        {"type": "string", "pattern": "x"},  # a key MCP does not define
        {"type": "object", "properties": {}},
        {"type": "array", "items": {"type": "string"}},
    ],
)
def test_anything_else_is_left_to_the_models(field: dict[str, Any]) -> None:
    assert not plain_form_properties({"f": field})


@given(
    properties=st.dictionaries(st.text(max_size=3), form_fields(), max_size=2),
    required=st.none() | st.lists(st.sampled_from(["a", "b", ""]), max_size=3),
    extra=st.sampled_from([{}, {"$schema": "x"}, {"type": "array"}]),
)
def test_a_requested_schema_the_fast_path_accepts_is_valid_json_schema(
    properties: dict[str, Any], required: list[str] | None, extra: dict[str, Any]
) -> None:
    # A client reading a plain form skips the metaschema too.
    schema: dict[str, Any] = {"type": "object", "properties": properties, **extra}
    if required is not None:
        schema["required"] = required
    plain = plain_requested_schema(schema)
    event(f"plain: {plain}")
    if not plain:
        return
    jsonschema.Draft202012Validator.check_schema(schema)
    for era in ERAS:
        validate(era, "ElicitRequestFormParams", {
            "mode": "form", "message": "m", "requestedSchema": schema,
        })  # fmt: skip

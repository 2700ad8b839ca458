"""value_from_schema: every value it draws is valid against its schema.

Checked with ``jsonschema`` (formats included) over Hypothesis-drawn seeds and
Hypothesis-drawn schemas of the supported subset, and over the schemas pydantic
writes for real models (nested, optional, recursive, enums, dates).
"""

from __future__ import annotations

import datetime as dt
import enum
import random
from typing import Any, Literal
from urllib.parse import urlsplit

from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator, FormatChecker
from pydantic import BaseModel, Field

from bridge.providers import value_from_schema
from tests.helpers import load_example

seeds = st.integers(min_value=0, max_value=2**64)

FORMATS = FormatChecker()
FORMATS.checkers = dict(Draft202012Validator.FORMAT_CHECKER.checkers)


@FORMATS.checks("date-time", raises=ValueError)
def _date_time(value: object) -> bool:
    if not isinstance(value, str):
        return True
    parsed = dt.datetime.fromisoformat(value)
    return "T" in value and parsed.tzinfo is not None


@FORMATS.checks("uri")
def _uri(value: object) -> bool:
    return not isinstance(value, str) or bool(urlsplit(value).scheme)


def assert_valid(schema: Any, value: Any) -> None:
    errors = list(
        Draft202012Validator(schema, format_checker=FORMATS).iter_errors(value)  # pyright: ignore[reportUnknownMemberType]
    )
    assert errors == [], (schema, value, [e.message for e in errors])


# --- a strategy for the supported subset, satisfiable by construction ---------------


@st.composite
def strings(draw: st.DrawFn) -> dict[str, Any]:
    fmt = draw(
        st.sampled_from(
            [None, "date", "date-time", "email", "uri", "uuid", "ipv4", "time"]
        )
    )
    if fmt is not None:
        return {"type": "string", "format": fmt}
    out: dict[str, Any] = {"type": "string"}
    low = draw(st.none() | st.integers(0, 30))
    high = draw(st.none() | st.integers(low or 0, 40))
    if low is not None:
        out["minLength"] = low
    if high is not None:
        out["maxLength"] = high
    return out


@st.composite
def integers(draw: st.DrawFn) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "integer"}
    low = draw(st.none() | st.integers(-(10**12), 10**12))
    span = draw(st.integers(2, 10**6))
    high = None if draw(st.booleans()) else (low or 0) + span
    if low is not None:
        key = draw(st.sampled_from(["minimum", "exclusiveMinimum"]))
        out[key] = low
    if high is not None:
        key = draw(st.sampled_from(["maximum", "exclusiveMaximum"]))
        out[key] = high
    if draw(st.booleans()) and span >= 10:
        out["multipleOf"] = draw(st.integers(1, 4))
    return out


@st.composite
def numbers(draw: st.DrawFn) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "number"}
    low = draw(st.none() | st.floats(-1e9, 1e9))
    gap = draw(st.floats(1e-3, 1e6))
    if low is not None:
        out[draw(st.sampled_from(["minimum", "exclusiveMinimum"]))] = low
    if draw(st.booleans()):
        out[draw(st.sampled_from(["maximum", "exclusiveMaximum"]))] = (low or 0) + gap
    return out


scalar_values = st.one_of(st.text(max_size=8), st.integers(-5, 5), st.booleans())

leaves = st.one_of(
    strings(),
    integers(),
    numbers(),
    st.just({"type": "boolean"}),
    st.just({"type": "null"}),
    st.lists(scalar_values, min_size=1, max_size=5, unique=True).map(
        lambda values: {"enum": values}
    ),
    scalar_values.map(lambda value: {"const": value}),
    st.just({}),
)


def composites(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(arrays(children), objects(children), any_ofs(children), one_ofs())


@st.composite
def arrays(draw: st.DrawFn, children: st.SearchStrategy[Any]) -> dict[str, Any]:
    low = draw(st.integers(0, 3))
    out: dict[str, Any] = {"type": "array", "items": draw(children), "minItems": low}
    if draw(st.booleans()):
        out["maxItems"] = low + draw(st.integers(0, 3))
    if draw(st.booleans()):
        pool = draw(st.lists(st.text(max_size=6), min_size=6, max_size=8, unique=True))
        out["items"] = {"type": "string", "enum": pool}
        out["uniqueItems"] = True
    return out


@st.composite
def objects(draw: st.DrawFn, children: st.SearchStrategy[Any]) -> dict[str, Any]:
    names = draw(st.lists(st.sampled_from("abcdefgh"), max_size=5, unique=True))
    properties = {name: draw(children) for name in names}
    required = [n for n in names if draw(st.booleans())]
    out: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        out["required"] = required
    if draw(st.booleans()):
        out["additionalProperties"] = False
    return out


@st.composite
def any_ofs(draw: st.DrawFn, children: st.SearchStrategy[Any]) -> dict[str, Any]:
    return {"anyOf": draw(st.lists(children, min_size=1, max_size=3))}


@st.composite
def one_ofs(draw: st.DrawFn) -> dict[str, Any]:
    # oneOf options of distinct types, so a value matches exactly one of them.
    kinds = draw(
        st.lists(
            st.sampled_from(["string", "integer", "boolean", "null"]),
            min_size=1,
            max_size=4,
            unique=True,
        )
    )
    return {"oneOf": [{"type": kind} for kind in kinds]}


schemas = st.recursive(leaves, composites, max_leaves=12)


@st.composite
def with_refs(draw: st.DrawFn) -> dict[str, Any]:
    """A schema whose parts live in ``$defs`` and are reached by ``$ref``."""
    defs = draw(st.dictionaries(st.sampled_from("PQRS"), schemas, min_size=1))
    names = sorted(defs)
    properties = {name.lower(): {"$ref": f"#/$defs/{name}"} for name in names}
    return {
        "type": "object",
        "$defs": defs,
        "properties": properties,
        "required": [name.lower() for name in names],
    }


# --- properties -----------------------------------------------------------------------


@given(schema=schemas, seed=seeds)
def test_every_drawn_value_is_valid_against_its_drawn_schema(
    schema: Any, seed: int
) -> None:
    assert_valid(schema, value_from_schema(schema, random.Random(seed)))


@given(schema=with_refs(), seed=seeds)
def test_refs_into_defs_are_followed(schema: Any, seed: int) -> None:
    assert_valid(schema, value_from_schema(schema, random.Random(seed)))


@given(schema=schemas, seed=seeds)
def test_equal_seeds_give_equal_values(schema: Any, seed: int) -> None:
    first = value_from_schema(schema, random.Random(seed))
    assert value_from_schema(schema, random.Random(seed)) == first


# --- pydantic schemas -----------------------------------------------------------------


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Address(BaseModel):
    street: str = Field(min_length=3, max_length=12)
    postcode: str | None = None


class Person(BaseModel):
    name: str
    email: str = Field(json_schema_extra={"format": "email"})
    born: dt.date
    seen: dt.datetime
    age: int = Field(ge=0, lt=130)
    score: float = Field(gt=0, le=1)
    colour: Colour
    mood: Literal["calm", "busy"] = "calm"
    tags: list[str] = Field(min_length=1, max_length=3)
    home: Address
    old_homes: list[Address] = []
    nickname: str | None = None
    weight: int | float = 70


class Tree(BaseModel):
    label: str
    children: list[Tree] = Field(min_length=0)
    parent: Tree | None = None


ttt = load_example("ttt")
book_flight = load_example("book_flight")
MODELS: list[type[BaseModel]] = [
    Person,
    Tree,
    ttt.Move,
    ttt.Offensive,
    ttt.Defensive,
    ttt.TTTResult,
    ttt.Game,
    book_flight.Dates,
    book_flight.Seat,
    book_flight.Booking,
]


@given(model=st.sampled_from(MODELS), seed=seeds)
def test_values_for_pydantic_schemas_are_valid_and_parse(
    model: type[BaseModel], seed: int
) -> None:
    schema = model.model_json_schema()
    value = value_from_schema(schema, random.Random(seed))
    assert_valid(schema, value)
    model.model_validate(value)


def test_recursive_schemas_end_within_the_depth_budget() -> None:
    schema = Tree.model_json_schema()
    for seed in range(50):
        value = value_from_schema(schema, random.Random(seed), max_depth=3)
        assert_valid(schema, value)


def test_all_of_parts_are_merged() -> None:
    schema = {
        "allOf": [
            {"type": "object", "properties": {"a": {"type": "integer"}}},
            {"properties": {"b": {"const": "x"}}, "required": ["a", "b"]},
        ]
    }
    value = value_from_schema(schema, random.Random(1))
    assert_valid(schema, value)
    assert set(value) == {"a", "b"}


def test_draft_4_boolean_exclusive_bounds_are_read() -> None:
    schema = {
        "type": "integer",
        "minimum": 0,
        "exclusiveMinimum": True,
        "maximum": 2,
        "exclusiveMaximum": True,
    }
    assert {value_from_schema(schema, random.Random(s)) for s in range(20)} == {1}


def test_prefix_items_come_first() -> None:
    schema = {
        "type": "array",
        "prefixItems": [{"const": 1}, {"const": "two"}],
        "items": False,
        "minItems": 2,
    }
    assert value_from_schema(schema, random.Random(0)) == [1, "two"]


def test_an_unknown_keyword_does_not_stop_the_generator() -> None:
    value = value_from_schema({"type": "string", "pattern": "^x+$"}, random.Random(0))
    assert isinstance(value, str)

"""value_from_schema against what a hostile server may send: a value within the
bounds, or one ``ProviderError`` line, and soon.

The schemas come from a peer (a sampling request's tools and output schema).
Each drawn schema gets either a value (valid against it, where the schema is
well formed) or ``ProviderError(code="unsatisfiable_schema")`` with a one-line
message, within a deadline and the documented bounds: never another exception,
a hang, or memory without limit. The cases the review found come first, each a
minute-long loop or a traceback before.
"""

from __future__ import annotations

import json
import math
import random
import sys
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bridge.providers import value_from_schema
from runtime.errors import ProviderError
from tests.bridge.providers.hostile import (
    MAX_CHARS,
    MAX_NESTING,
    MAX_VALUES,
    UNSATISFIABLE,
    hostile_roots,
    recursive_roots,
    within,
)
from tests.bridge.providers.test_jsongen import assert_valid

seeds = st.integers(min_value=0, max_value=2**64)

# Generous for a loaded machine: the work bound is about a second of CPU.
DEADLINE = 15.0


def refused(schema: Any, seed: int = 0) -> ProviderError:
    """The one error ``schema`` gets, checked for its shape."""
    with within(DEADLINE), pytest.raises(ProviderError) as caught:
        value_from_schema(schema, random.Random(seed))
    error = caught.value
    assert (error.provider, error.code) == ("offline", UNSATISFIABLE)
    assert_one_line(str(error))
    return error


def assert_one_line(text: str) -> None:
    assert text.isprintable(), text
    assert len(text) < 400, text


def nesting(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max(map(nesting, value.values()), default=0)  # pyright: ignore[reportUnknownArgumentType]
    if isinstance(value, list):
        return 1 + max(map(nesting, value), default=0)  # pyright: ignore[reportUnknownArgumentType]
    return 0


def assert_within_bounds(value: Any) -> None:
    text = json.dumps(value, allow_nan=False)  # no NaN or infinity either
    assert len(text) <= MAX_CHARS * 2, len(text)
    assert nesting(value) <= MAX_NESTING + 1


def answer(schema: Any, seed: int) -> Any:
    """A value for ``schema`` within the bounds, or None after the one error."""
    failure: ProviderError | None = None
    try:
        with within(DEADLINE):
            value = value_from_schema(schema, random.Random(seed))
    except ProviderError as error:
        failure, value = error, None
    if failure is not None:
        assert (failure.provider, failure.code) == ("offline", UNSATISFIABLE)
        assert_one_line(str(failure))
    else:
        assert_within_bounds(value)
    return value


# --- the review's cases: each looped for minutes, or crashed ------------------------


def string_of(**bounds: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["a"],
        "properties": {"a": {"type": "string", **bounds}},
    }


def array_of(**bounds: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["a"],
        "properties": {"a": {"type": "array", **bounds}},
    }


@pytest.mark.parametrize(
    ("schema", "words"),
    [
        (string_of(minLength=300_000_000), "minLength 300000000 is more than"),
        (string_of(minLength=3e8), "minLength 300000000 is more than"),
        (array_of(minItems=300_000_000, items={"type": "integer"}), "minItems"),
        (array_of(minItems=1e300), "minItems 1e+300 is more than"),
        (array_of(minItems=1e300, uniqueItems=True), "minItems 1e+300"),
        (array_of(minItems=10**30, maxItems=10**31), "minItems"),
    ],
)
def test_a_minimum_past_the_bounds_is_refused_at_once(
    schema: dict[str, Any], words: str
) -> None:
    tracemalloc.start()
    started = time.monotonic()
    try:
        error = refused(schema)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.monotonic() - started < 1.0
    assert peak < 1_000_000
    assert words in str(error)
    assert "at /a" in str(error)


def recursive(node: dict[str, Any]) -> dict[str, Any]:
    """``node`` as ``$defs/n``, which ``$ref: #/$defs/n`` names inside it."""
    return {"$defs": {"n": node}, "$ref": "#/$defs/n"}


N = {"$ref": "#/$defs/n"}
REQUIRED_A = {"type": "object", "required": ["a"]}
FALSE_A = {**REQUIRED_A, "properties": {"a": False}}
INF_A = {**REQUIRED_A, "properties": {"a": {"type": "integer", "minimum": math.inf}}}
LOOP_40 = {**recursive({"type": "array", "minItems": 40, "items": N}), **REQUIRED_A}
LOOP_40["properties"] = {"a": N}
BIG_STEP = {"type": "integer", "multipleOf": 10**30, "minimum": 1, "maximum": 2}
TWO_BOOLEANS = {"type": "array", "minItems": 3, "uniqueItems": True}
TWO_BOOLEANS["items"] = {"type": "boolean"}
BIG_CONSTS = {"type": "array", "items": {"const": "x" * 60_000}, "minItems": 2}


@pytest.mark.parametrize(
    ("schema", "words"),
    [
        (array_of(minItems=1, items=5), "#/properties/a/items is 5, not a schema"),
        ({**REQUIRED_A, "properties": {"a": "x"}}, '#/properties/a is "x", not a'),
        (INF_A, "minimum is Infinity: no number fits"),
        ({"type": "number", "maximum": -math.inf}, "maximum is -Infinity: no"),
        ({"type": "integer", "minimum": math.nan}, "#/minimum is nan, not a number"),
        (LOOP_40, "more than"),
        (recursive({"type": "array", "minItems": 1, "items": N}), "more than 32 deep"),
        (recursive({"anyOf": [N]}), "more than 128 deep"),
        (recursive({"allOf": [N]}), "more than 128 deep"),
        (recursive(N), "more than 128 deep"),
        (BIG_STEP, "no multiple of a 31-digit number lies within"),
        ({"type": "object", "required": {"a": 1}}, "#/required is an object"),
        ({"anyOf": [5]}, "#/anyOf/0 is 5, not a schema"),
        ({"type": "thing"}, '#/type is "thing", not a JSON Schema type name'),
        ({"$ref": "#/$defs/none"}, "does not resolve"),
        ({"$ref": "#/" + "9" * 5000}, "does not resolve"),
        ({"type": "string", "minLength": 5, "maxLength": 3}, "5 is more than max"),
        (TWO_BOOLEANS, "uniqueItems: found 2 distinct items of the 3"),
        ({"enum": []}, "enum is empty"),
        ({"type": "string", "enum": [1, 2]}, "no enum value is of type"),
        (FALSE_A, "is required, and its schema is false"),
        (BIG_CONSTS, "100,000 characters"),
        ({"const": json.loads("[" * 40 + "]" * 40)}, "more than 32 deep"),
    ],
)
def test_a_schema_it_cannot_answer_is_one_provider_error(
    schema: dict[str, Any], words: str
) -> None:
    error = refused(schema)
    assert str(error).startswith(
        "offline: the offline model cannot answer from the schema: "
    )
    assert words in str(error)


def rng(seed: int) -> random.Random:
    return random.Random(seed)


def test_an_infinite_bound_on_the_open_side_is_no_bound() -> None:
    schema = {"type": "integer", "minimum": -math.inf, "maximum": math.inf}
    with within(DEADLINE):
        assert isinstance(value_from_schema(schema, rng(0)), int)
        assert value_from_schema({"type": "number", "minimum": 10**400}, rng(0))


def test_what_can_be_met_is_met_when_another_choice_cannot() -> None:
    huge = {"type": "string", "minLength": 10**9}
    optional = {"type": "object", "properties": {"a": huge, "b": {"const": 1}}}
    nullable = {"anyOf": [huge, {"type": "null"}]}
    with within(DEADLINE):
        for seed in range(20):
            assert "a" not in value_from_schema(optional, rng(seed))
            assert value_from_schema(nullable, rng(seed)) is None
            either = huge | {"type": ["string", "null"]}
            assert value_from_schema(either, rng(seed)) is None


def test_the_whole_schema_is_checked_whatever_the_seed() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "array", "items": 5}}}
    for seed in range(10):  # "a" is optional: the old generator failed sometimes
        refused(schema, seed)


def deep_call(depth: int, then: Callable[[], Any]) -> Any:
    return then() if depth == 0 else deep_call(depth - 1, then)


def test_a_recursive_schema_on_a_deep_stack_is_still_one_error() -> None:
    loop = {"$defs": {"n": {"anyOf": [{"$ref": "#/$defs/n"}]}}, "$ref": "#/$defs/n"}
    room = sys.getrecursionlimit() - len(_frames()) - 150
    with within(DEADLINE), pytest.raises(ProviderError) as caught:
        deep_call(room, lambda: value_from_schema(loop, rng(0)))
    assert caught.value.code == UNSATISFIABLE


def _frames() -> list[Any]:
    frame, out = sys._getframe(), []  # pyright: ignore[reportPrivateUsage]
    while frame is not None:
        out.append(frame)
        frame = frame.f_back  # pyright: ignore[reportAssignmentType]
    return out


def either(*names: str) -> dict[str, Any]:
    """Options each requiring its own property, whose schema is the loop again."""
    return {
        "anyOf": [
            {"type": "object", "required": [name], "properties": {name: N}}
            for name in names
        ]
    }


HOPELESS = [{"type": "string", "minLength": 200_000}] * 2000 + [{"type": "null"}]
WIDE = {
    f"p{i}": {"type": "object", "properties": {"x": {"type": "string"}}}
    for i in range(100_000)
}
STRINGS = {"type": "array", "minItems": 9_000, "items": {"type": "string"}}
STRINGS["items"]["minLength"] = 11


@pytest.mark.parametrize(
    "schema",
    [
        pytest.param(recursive(either("a", "b")), id="options-failing-deep-down"),
        pytest.param(
            {"type": "array", "minItems": 5000, "items": {"anyOf": HOPELESS}},
            id="many-options-that-cannot-be-met",
        ),
        pytest.param(
            {"type": "object", "properties": WIDE}, id="a-schema-too-large-to-read"
        ),
        pytest.param(STRINGS, id="values-over-the-characters"),
    ],
)
def test_work_is_bounded_whatever_the_schema_asks(schema: dict[str, Any]) -> None:
    started = time.monotonic()
    refused(schema)
    assert time.monotonic() - started < DEADLINE


# --- properties ---------------------------------------------------------------------


@given(schema=hostile_roots(), seed=seeds)
def test_any_hostile_schema_gets_a_bounded_value_or_one_error_line(
    schema: Any, seed: int
) -> None:
    answer(schema, seed)


@given(schema=recursive_roots(), seed=seeds)
def test_a_well_formed_schema_gets_a_valid_value_or_one_error_line(
    schema: Any, seed: int
) -> None:
    value = answer(schema, seed)
    if value is not None:
        assert_valid(schema, value)


@given(schema=recursive_roots(), seed=seeds)
def test_equal_seeds_give_equal_answers_or_equal_errors(schema: Any, seed: int) -> None:
    first = answer(schema, seed)
    assert answer(schema, seed) == first


def test_the_bounds_hold_a_value_at_the_edge() -> None:
    values = {"type": "array", "minItems": MAX_VALUES - 2, "items": {"const": 0}}
    chars = {"type": "string", "minLength": MAX_CHARS - 2}
    with within(DEADLINE):
        assert len(value_from_schema(values, rng(0))) >= MAX_VALUES - 2
        assert len(value_from_schema(chars, rng(0))) == MAX_CHARS - 2

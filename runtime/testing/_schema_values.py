"""Hypothesis strategies from JSON Schema: values a schema accepts, and ones it refuses.

Owns :func:`from_schema` (values valid against a common subset of JSON Schema:
``$ref`` into ``$defs``, ``const``, ``enum``, ``anyOf``/``oneOf``, type lists,
strings with a few formats, bounded numbers, arrays and objects; every value is
checked with ``jsonschema``), :func:`invalid_for` (JSON values a schema
rejects) and :func:`invalid_arguments` (argument objects broken in one way).

It knows nothing of effects or replies: the reply strategies built on it are in
:mod:`runtime.testing.strategies`. This module needs ``hypothesis``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, cast

from hypothesis import strategies as st

from ..wire.schemas import offline_validator

__all__ = ["from_schema", "invalid_arguments", "invalid_for", "texts"]

texts = st.text(max_size=40)
"""Short text: the strings of arbitrary JSON, and of prose replies."""


def from_schema(schema: Mapping[str, Any]) -> st.SearchStrategy[Any]:
    """Values valid against ``schema`` (a common subset; results are checked)."""
    is_valid = _checker(schema)
    defs: Mapping[str, Any] = schema.get("$defs", {})
    return _values(schema, defs).filter(is_valid)


def _checker(schema: Mapping[str, Any]) -> Callable[[Any], bool]:
    validator = offline_validator(schema)

    def is_valid(value: Any) -> bool:
        return bool(validator.is_valid(value))  # pyright: ignore[reportUnknownMemberType]

    return is_valid


def _values(
    schema: Mapping[str, Any], defs: Mapping[str, Any]
) -> st.SearchStrategy[Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str):
        return _values(defs[ref.rsplit("/", 1)[-1]], defs)
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(list(schema["enum"]))
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = cast(list[Mapping[str, Any]], schema[key])
            return st.one_of([_values(o, defs) for o in options])
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = cast(list[str], kind)
        return st.one_of([_values({**schema, "type": k}, defs) for k in kinds])
    maker = _MAKERS.get(str(kind))
    return maker(schema, defs) if maker else _any_json()


def _string(
    schema: Mapping[str, Any], defs: Mapping[str, Any]
) -> st.SearchStrategy[Any]:
    fmt = schema.get("format")
    if fmt == "date":
        return st.dates().map(lambda d: d.isoformat())
    if fmt == "date-time":
        return st.datetimes().map(lambda d: d.isoformat() + "Z")
    if fmt == "email":
        return st.from_regex(r"\A[a-z]{1,8}@[a-z]{1,8}\.com\Z")
    if fmt == "uri":
        return st.from_regex(r"\Ahttps://[a-z]{1,8}\.example/[a-z]{0,8}\Z")
    return st.text(
        min_size=schema.get("minLength", 0),
        max_size=schema.get("maxLength", max(20, schema.get("minLength", 0))),
    )


def _number(
    schema: Mapping[str, Any], defs: Mapping[str, Any]
) -> st.SearchStrategy[Any]:
    low = schema.get("minimum", schema.get("exclusiveMinimum"))
    high = schema.get("maximum", schema.get("exclusiveMaximum"))
    if schema.get("type") == "integer":
        return st.integers(
            min_value=None if low is None else math.ceil(low),
            max_value=None if high is None else math.floor(high),
        )
    return st.floats(
        min_value=low, max_value=high, allow_nan=False, allow_infinity=False
    )


def _array(
    schema: Mapping[str, Any], defs: Mapping[str, Any]
) -> st.SearchStrategy[Any]:
    items = _values(schema.get("items", {}), defs)
    return st.lists(
        items,
        min_size=schema.get("minItems", 0),
        max_size=schema.get("maxItems", 4),
        unique=bool(schema.get("uniqueItems")),
    )


def _object(
    schema: Mapping[str, Any], defs: Mapping[str, Any]
) -> st.SearchStrategy[Any]:
    properties = cast(Mapping[str, Mapping[str, Any]], schema.get("properties", {}))
    required = set(cast(list[str], schema.get("required", [])))
    return st.fixed_dictionaries(
        {k: _values(v, defs) for k, v in properties.items() if k in required},
        optional={
            k: _values(v, defs) for k, v in properties.items() if k not in required
        },
    )


def _any_json() -> st.SearchStrategy[Any]:
    scalars = st.none() | st.booleans() | st.integers() | texts
    return st.recursive(
        scalars,
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3)
        ),
        max_leaves=6,
    )


_MAKERS: dict[
    str, Callable[[Mapping[str, Any], Mapping[str, Any]], st.SearchStrategy[Any]]
] = {
    "string": _string,
    "integer": _number,
    "number": _number,
    "boolean": lambda schema, defs: st.booleans(),
    "null": lambda schema, defs: st.none(),
    "array": _array,
    "object": _object,
}


def invalid_for(schema: Mapping[str, Any]) -> st.SearchStrategy[Any]:
    is_valid = _checker(schema)
    return _any_json().filter(lambda v: not is_valid(v))


# Values of every JSON type, and out-of-range ones: whatever a property's schema
# is, those it rejects are wrong types or out of range for it.
_PROBES: tuple[Any, ...] = (
    None,
    True,
    -1,
    0,
    10**9,
    1.5,
    "",
    "x",
    "x" * 1000,
    [],
    [None],
    {},
    {"": None},
)


def invalid_arguments(
    schema: Mapping[str, Any],
) -> st.SearchStrategy[dict[str, Any]] | None:
    """Argument objects that break ``schema``, or None if it accepts every object.

    Each starts from valid arguments and breaks one thing: a required property
    is left out, a property gets a value its schema rejects (a wrong type, out
    of range), or an unknown property is added where none are allowed. Every
    value is checked against ``schema`` (jsonschema) to be really invalid.
    """
    is_valid = _checker(schema)
    defs: Mapping[str, Any] = schema.get("$defs", {})
    properties = cast(Mapping[str, Mapping[str, Any]], schema.get("properties", {}))
    required = cast(list[str], schema.get("required", []))
    valid = from_schema(schema).filter(lambda v: isinstance(v, dict))
    breaks: list[st.SearchStrategy[dict[str, Any]]] = []

    def without(name: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
        return lambda args: {k: v for k, v in args.items() if k != name}

    def with_value(name: str) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
        return lambda args, value: {**args, name: value}

    breaks.extend(valid.map(without(name)) for name in required)
    for name, sub in properties.items():
        accepts = _checker({**sub, "$defs": defs})
        wrong = [p for p in _PROBES if not accepts(p)]
        if wrong:
            breaks.append(st.builds(with_value(name), valid, st.sampled_from(wrong)))
    if schema.get("additionalProperties") is False:
        unknown = st.from_regex(r"\A[a-z]{1,8}\Z").filter(lambda n: n not in properties)

        def with_unknown(args: dict[str, Any], name: str) -> dict[str, Any]:
            return {**args, name: 1}

        breaks.append(st.builds(with_unknown, valid, unknown))
    if not breaks:
        return None
    return st.one_of(breaks).filter(lambda args: not is_valid(args))

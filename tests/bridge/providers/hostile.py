"""What a hostile MCP server may put in a sampling request's schemas, for the
offline model's tests: Hypothesis strategies, and a deadline for a block that
may never end on a generator without bounds (a synchronous loop that
``trio.fail_after`` cannot interrupt)."""

from __future__ import annotations

import math
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

from hypothesis import strategies as st

# The bounds bridge/providers/_jsongen.py documents (tests import no private
# module).
MAX_CHARS = 100_000
MAX_VALUES = 10_000
MAX_NESTING = 32
UNSATISFIABLE = "unsatisfiable_schema"


@contextmanager
def within(seconds: float) -> Iterator[None]:
    """Fail with ``TimeoutError`` if the block runs longer than ``seconds``.

    A SIGALRM interrupts Python code however busy (the old generator looped
    in Python for minutes); the main thread only, as pytest runs tests.
    """

    def expire(signum: int, frame: FrameType | None) -> None:
        raise TimeoutError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# --- values a hostile schema puts where the generator reads ---------------------------

huge_numbers = st.sampled_from(
    [10**400, 1e300, 3e8, 300_000_000, 2**63, math.inf, -math.inf, math.nan, -1, -1e300]
)
small_numbers = st.integers(-3, 50) | st.sampled_from([0.5, 2.0, 1e-300, 1.5])
numbers = small_numbers | huge_numbers
garbage = st.one_of(
    st.none(),
    st.booleans(),
    st.text(max_size=5),
    numbers,
    st.lists(st.integers(0, 3), max_size=2),
    st.just({"x": 1}),
)
scalars = st.one_of(st.none(), st.booleans(), small_numbers, st.text(max_size=3))
type_names = st.sampled_from(
    ["null", "boolean", "string", "integer", "number", "array", "object"]
)
refs = st.sampled_from(
    ["#", "#/$defs/a", "#/$defs/b", "#/$defs/missing", "#/properties", "#anchor",
     "#/$defs/a/items", "https://example.com/s.json", "#/" + "9" * 5000]
)  # fmt: skip
formats = st.sampled_from(["date", "date-time", "email", "uuid", "ipv4", "uri", "x"])

KEYWORDS: dict[str, st.SearchStrategy[Any]] = {
    "type": type_names
    | st.lists(type_names, max_size=3)
    | st.sampled_from(["any", "float"]),
    "enum": st.lists(scalars, max_size=4),
    "const": st.one_of(st.text(max_size=4), small_numbers, st.just([[[[[]]]]])),
    "required": st.lists(st.sampled_from("abcz"), max_size=3),
    "minLength": numbers,
    "maxLength": numbers,
    "minItems": numbers,
    "maxItems": numbers,
    "minimum": numbers,
    "maximum": numbers,
    "exclusiveMinimum": numbers | st.booleans(),
    "exclusiveMaximum": numbers | st.booleans(),
    "multipleOf": numbers,
    "uniqueItems": st.booleans(),
    "format": formats,
    "$ref": refs,
    "additionalProperties": st.booleans(),
}  # fmt: skip
"""Each keyword the generator reads, with values from sane to hostile (the
schemas below add the keywords that hold schemas)."""


def hostile_nodes(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """One schema object: a few keywords, each mostly well formed (one in five
    is garbage), and maybe ``children`` under the keywords that hold schemas."""
    holders: dict[str, st.SearchStrategy[Any]] = {
        "properties": st.dictionaries(st.sampled_from("abc"), children, max_size=3),
        "items": children | st.lists(children, max_size=2),
        "prefixItems": st.lists(children, max_size=2),
        "additionalItems": children,
        "anyOf": st.lists(children, max_size=3),
        "oneOf": st.lists(children, max_size=2),
        "allOf": st.lists(children, max_size=2),
    }
    chosen = {**KEYWORDS, **holders}

    @st.composite
    def nodes(draw: st.DrawFn) -> dict[str, Any]:
        keys = draw(st.lists(st.sampled_from(sorted(chosen)), max_size=5, unique=True))
        return {
            key: draw(garbage) if draw(st.integers(0, 4)) == 0 else draw(chosen[key])
            for key in keys
        }

    return nodes()


hostile_schemas = st.recursive(
    st.booleans() | hostile_nodes(st.just({})),
    hostile_nodes,
    max_leaves=10,
)


@st.composite
def hostile_roots(draw: st.DrawFn) -> Any:
    """A tool's input schema: a hostile root whose ``$defs`` ``a`` and ``b`` the
    ``$ref`` values can reach, so references recurse and loop."""
    root = draw(hostile_nodes(hostile_schemas))
    root["$defs"] = {"a": draw(hostile_schemas), "b": draw(hostile_schemas)}
    return root


# --- well formed, hostile only in their numbers and recursion ------------------------

counts = st.integers(0, 4) | st.sampled_from([40, 3e8, 1e300, 10**20])


@st.composite
def bounded_leaves(draw: st.DrawFn) -> dict[str, Any]:
    """A string, integer or number schema with bounds from sane to hostile
    (contradictory, infinite, past what an answer may take)."""
    kind = draw(st.sampled_from(["string", "integer", "number", "boolean", "enum"]))
    if kind == "string":
        out: dict[str, Any] = {"type": "string"}
        for key in ("minLength", "maxLength"):
            if draw(st.booleans()):
                out[key] = draw(counts)
        if draw(st.booleans()):
            out["format"] = draw(formats)
        return out
    if kind == "enum":
        values = draw(
            st.lists(
                st.one_of(st.booleans(), st.integers(0, 3), st.text(max_size=2)),
                max_size=3,
            )
        )
        out = {"enum": values}
        if draw(st.booleans()):
            out["type"] = draw(type_names)
        return out
    out = {"type": kind}
    if kind == "boolean":
        return out
    for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        if draw(st.booleans()):
            out[key] = draw(st.integers(-5, 5) | st.sampled_from(
                [10**400, 1e308, -1e308, math.inf, -math.inf, 0.5, 2**70]
            ))  # fmt: skip
    if draw(st.booleans()):
        out["multipleOf"] = draw(st.integers(1, 4) | st.just(10**30))
    return out  # fmt: skip


LOOP = {"$ref": "#/$defs/n"}


def bounded_composites(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Arrays, objects and ``anyOf`` of ``children``; an item or a property may
    be ``$defs/n`` again (a loop through a value, which a validator can follow;
    an ``anyOf`` option that is the loop itself would send it round for ever)."""
    nested = children | st.just(LOOP)

    @st.composite
    def arrays(draw: st.DrawFn) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "array", "items": draw(nested)}
        for key in ("minItems", "maxItems"):
            if draw(st.booleans()):
                out[key] = draw(counts)
        if draw(st.booleans()):
            out["uniqueItems"] = True
        return out

    @st.composite
    def objects(draw: st.DrawFn) -> dict[str, Any]:
        names = draw(st.lists(st.sampled_from("abcd"), max_size=3, unique=True))
        out: dict[str, Any] = {
            "type": "object",
            "properties": {name: draw(nested | st.booleans()) for name in names},
        }
        required = draw(st.lists(st.sampled_from("abcde"), max_size=3, unique=True))
        if required:
            out["required"] = required
        if draw(st.booleans()):
            out["additionalProperties"] = False
        return out

    any_of = st.lists(children | st.booleans(), min_size=1, max_size=3).map(
        lambda options: {"anyOf": options}
    )
    return arrays() | objects() | any_of


@st.composite
def recursive_roots(draw: st.DrawFn) -> dict[str, Any]:
    """A root reaching ``$defs`` ``n`` by ``$ref``; ``n`` may hold ``$ref`` to
    itself in its items and properties, so values recurse (and must end, or
    fail)."""
    node = st.recursive(
        bounded_leaves() | st.booleans(), bounded_composites, max_leaves=8
    )
    return {
        "$defs": {"n": draw(node)},
        "type": "object",
        "properties": {"a": LOOP, "b": draw(node)},
        "required": draw(st.lists(st.sampled_from("ab"), max_size=2, unique=True)),
    }

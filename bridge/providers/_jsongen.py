"""One JSON value for a JSON Schema, drawn from a ``random.Random``, within bounds.

Owns a small, pure, dependency-free generator for the offline model: the same
schema and the same generator state give the same value. It covers what tool
and structured-output schemas use in practice:

* ``type`` (one, or a list such as ``["string", "null"]``: nullable), ``const``,
  ``enum`` (values of another ``type`` are never chosen);
* objects: ``properties``, ``required`` (optional properties appear about half
  the time), ``additionalProperties`` (never adds extra keys);
* strings: ``minLength``/``maxLength``, ``format`` (``date``, ``date-time``,
  ``time``, ``email``, ``uri``, ``uuid``, ``ipv4``, ``hostname``);
* integers and numbers: ``minimum``/``maximum``, ``exclusiveMinimum``/
  ``exclusiveMaximum`` (2020-12 numbers or draft-4 booleans), integral
  ``multipleOf``;
* arrays: ``items`` (a schema, or draft-4's list with ``additionalItems``),
  ``prefixItems``, ``minItems``/``maxItems``, ``uniqueItems``;
* ``anyOf``/``oneOf`` (one option, merged with its siblings; another is tried
  when it cannot be met), ``allOf`` (merged), ``$ref`` to any JSON pointer in
  the root (``#/$defs/...``), with a depth budget so recursive schemas end.

It reads schemas as JSON Schema, so OpenAPI's ``nullable: true`` is ignored
(nullable is ``anyOf`` with ``{"type": "null"}`` or a type list). It does not
guarantee validity for keywords it does not know (``pattern``, ``not``,
``if``/``then``/``else``, ``contains``, ``dependent*``, ``minProperties``,
fractional ``multipleOf``), for ``oneOf`` options that overlap (a value may
match two), or where ``allOf`` parts, ``$ref`` siblings or ``anyOf`` siblings
set the same keyword differently (the later one wins). Those it answers with
its best effort, as a model would.

**Bounds.** The schema comes from a peer (a server's sampling request), so one
value is bounded whatever the schema says; these are fixed, far above what a
stand-in model's answer needs:

* ``MAX_CHARS``: 100,000 characters of JSON in the value (strings count their
  length, keys and numbers theirs);
* ``MAX_VALUES``: 10,000 JSON values in it (every string, number, array, ...);
* ``MAX_NESTING``: arrays and objects 32 deep; and ``MAX_OPEN``: 128
  ``$ref``/``allOf``/``anyOf``/``oneOf`` resolutions and nested values open at
  once (a ``$ref`` loop ends there; the stack stays a few hundred frames);
* ``MAX_WORK``: 1,000,000 steps of work for one :class:`SchemaValues`, every
  value drawn (kept or not), schema node checked and key merged counted: about
  a second of CPU at most, since the generator runs on the caller's event loop.

A schema it cannot answer within them, or at all, raises
:class:`~runtime.errors.ProviderError` (``provider="offline"``,
``code="unsatisfiable_schema"``) with one line naming the place and the reason:
a keyword of the wrong JSON type (``"items": 5``, a property whose schema is a
string, ``"required": "a"``, an unknown ``type``), a ``$ref`` that does not
resolve, a minimum over a bound (``minLength: 3e8``, ``minItems: 1e300``),
bounds that leave nothing (``minimum: 1e400``, that is infinity, or ``minItems``
over ``maxItems``), ``false`` or an empty ``enum`` where a value is needed, or a
recursive ``$ref`` that must go on for ever. The whole schema is checked for
the JSON types of the keywords it reads (through ``$ref``) before any value is
drawn, so that error does not depend on the seed. It never raises anything
else, and no value it returns holds ``NaN`` or an infinity.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import random
import uuid
from collections.abc import Callable, Mapping, Sequence, Sized
from typing import Any, Final, cast, final
from urllib.parse import unquote

from runtime.errors import ProviderError

from ._schema_bounds import float_bounds, int_bounds

__all__ = [
    "MAX_CHARS",
    "MAX_NESTING",
    "MAX_OPEN",
    "MAX_VALUES",
    "MAX_WORK",
    "UNSATISFIABLE",
    "SchemaValues",
    "value_from_schema",
]

JSONObject = Mapping[str, Any]

MAX_CHARS: Final = 100_000
"""Characters of JSON one generated value may take."""
MAX_VALUES: Final = 10_000
"""JSON values (scalars, arrays, objects) one generated value may hold."""
MAX_NESTING: Final = 32
"""Levels of arrays and objects one generated value may nest."""
MAX_OPEN: Final = 128
"""Schema resolutions and nested values open at once (bounds the stack)."""
MAX_WORK: Final = 1_000_000
"""Steps of work one :class:`SchemaValues` may take, over all its draws."""
UNSATISFIABLE: Final = "unsatisfiable_schema"
"""The ``code`` of the :class:`ProviderError` for a schema it cannot answer."""

_WORDS = (
    "amber", "bright", "calm", "clear", "early", "field", "green", "harbor",
    "idea", "light", "line", "move", "north", "open", "path", "plan", "quiet",
    "river", "stone", "simple", "steady", "take", "the", "center", "corner",
)  # fmt: skip
_LETTERS = "abcdefghijklmnopqrstuvwxyz"
_EXTRA_ITEMS = 3  # items past minItems when maxItems is not given
_FREE_ITEMS = 16  # items past minItems at most, whatever maxItems allows
_UNIQUE_TRIES = 20
_UNIQUE_REPEATS = 1_000  # equal items drawn in a row: the items ran out
_FORMAT_TRIES = 8
_NESTS_SCAN = 1_000  # schema nodes read to tell whether an option nests
_MAX_INT_BITS = 13_000  # about 3,900 digits

# Work, in steps of roughly a microsecond.
_DRAW_COST = 24
_NODE_COST = 8

_TYPES = frozenset(
    {"null", "boolean", "string", "integer", "number", "array", "object"}
)
_COUNTS = ("minLength", "maxLength", "minItems", "maxItems")
_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")


def value_from_schema(
    schema: JSONObject | bool,
    rng: random.Random,
    *,
    max_depth: int = 6,
    subject: str = "the schema",
) -> Any:
    """A JSON value for ``schema``, drawn from ``rng``.

    Args:
        schema: a JSON Schema (2020-12, or the common subset of older drafts);
            ``$ref`` pointers resolve against it.
        rng: the source of every choice; equal states give equal values.
        max_depth: nesting after which optional properties, extra array items
            and recursive options are avoided.
        subject: what the schema is, for the error (``tool "x"'s input schema``).

    Returns:
        A JSON-compatible value (dict, list, str, int, float, bool or None)
        within the module's bounds.

    Raises:
        ProviderError: ``code`` ``"unsatisfiable_schema"``: the schema is
            malformed where the generator reads it, or no value fits it within
            the bounds.
    """
    return SchemaValues(schema, subject=subject).draw(rng, max_depth=max_depth)


@final
class SchemaValues:
    """Values for one schema, checked once, drawn under one budget of work.

    Building it checks the JSON types of every keyword the generator reads in
    the schema (following ``$ref``); each :meth:`draw` spends from the same
    ``max_work``, so redrawing cannot multiply the time.
    """

    def __init__(
        self,
        schema: JSONObject | bool,
        *,
        subject: str = "the schema",
        max_work: int = MAX_WORK,
    ) -> None:
        self.root: Any = schema
        self.subject = subject
        self.max_work = max_work
        self.work_left = max_work
        self._resolved: dict[str, Any] = {}
        self._nests: dict[int, tuple[object, bool]] = {}
        try:
            _Checker(self).check()
        except _Unmet as unmet:
            raise self._error(unmet) from None

    def draw(self, rng: random.Random, *, max_depth: int = 6) -> Any:
        """One value for the schema (see :func:`value_from_schema`)."""
        try:
            return _Draw(self, rng, max_depth).value(self.root, 0)
        except _Unmet as unmet:
            raise self._error(unmet) from None
        except RecursionError:  # a caller's stack already deep: still one line
            error = _Unmet((), "the schema nests too deeply for the stack left")
            raise self._error(error) from None

    def work(self, steps: int) -> None:
        self.work_left -= steps
        if self.work_left < 0:
            raise _OutOfWork(
                (),
                f"answering takes more than {self.max_work:,} steps of work (it asks "
                "for much, or many of its options cannot be met)",
            )

    def resolve(self, ref: str) -> Any:
        """What a ``$ref`` points at (``True``, anything, for a remote one)."""
        if ref in self._resolved:
            return self._resolved[ref]
        self.work(len(ref) // 16 + 1)
        target = _resolve(self.root, ref)
        self._resolved[ref] = target
        return target

    def nests(self, option: Any) -> bool:
        """Whether an ``anyOf``/``oneOf`` option may nest (see :func:`_nests`)."""
        if not isinstance(option, dict | Mapping):
            return False
        key = id(cast(object, option))
        held = self._nests.get(key)
        if held is None:
            found, read = _nests(option)
            self.work(read)
            held = self._nests[key] = (cast(object, option), found)  # its id stays
        return held[1]

    def _error(self, unmet: _Unmet) -> ProviderError:
        where = f"at {_pointer(unmet.path)}, " if unmet.path else ""
        return ProviderError(
            f"the offline model cannot answer from {self.subject}: "
            f"{where}{unmet.reason}",
            provider="offline",
            code=UNSATISFIABLE,
        )


class _Unmet(Exception):
    """No value fits here: ``path`` is where in the value (or the schema)."""

    def __init__(self, path: tuple[Any, ...], reason: str) -> None:
        super().__init__(reason)
        self.path = path
        self.reason = reason


class _OutOfWork(_Unmet):
    """The work budget is spent: never retried with another option."""


# --- the shape check ------------------------------------------------------------------


class _Checker:
    """The JSON types of the keywords the generator reads, over the whole schema.

    Iterative (a deep schema cannot exhaust the stack), each node once. A place
    is kept as nested tuples, ``(parent, key, ...)``, and spelled only for an
    error.
    """

    def __init__(self, values: SchemaValues) -> None:
        self.values = values
        self.seen: set[int] = set()
        self.todo: list[tuple[JSONObject, tuple[Any, ...]]] = []

    def check(self) -> None:
        root = self.values.root
        if not isinstance(root, bool | Mapping):
            raise _Unmet((), f"the schema is {_show(root)}, not a schema")
        self.push(root, ("#",))
        try:
            while self.todo:
                node, where = self.todo.pop()
                self.node(node, where)
        except _OutOfWork:
            raise _OutOfWork(
                (),
                f"the schema is too large to read in {self.values.max_work:,} "
                "steps of work",
            ) from None

    def push(self, node: Any, where: tuple[Any, ...]) -> None:
        if not isinstance(node, dict | Mapping):
            if isinstance(node, bool):
                return
            raise _Unmet((), f"{_place(where)} is {_show(node)}, not a schema")
        mapping = cast(JSONObject, node)
        if id(mapping) not in self.seen:
            self.seen.add(id(mapping))
            self.todo.append((mapping, where))

    def node(self, schema: JSONObject, where: tuple[Any, ...]) -> None:
        self.values.work(_NODE_COST + len(schema))
        for key in schema.keys() & _SHAPES.keys():
            want = _SHAPES[key](schema[key])
            if want is not None:
                place = _place((where, key))
                raise _Unmet((), f"{place} is {_show(schema[key])}, not {want}")
        for key in schema.keys() & _CHILDREN:
            self.children(key, schema[key], where)

    def children(self, key: str, sub: Any, where: tuple[Any, ...]) -> None:
        if key == "$ref":
            target = self.values.resolve(sub)
            if target is None:
                place = _place((where, key))
                raise _Unmet((), f"{place} {_show(sub)} does not resolve in the schema")
            self.push(target, (where, key))
        elif key == "properties":
            mapping = cast(JSONObject, sub)
            self.values.work(len(mapping))
            for name, part in mapping.items():
                self.push(part, (where, key, name))
        elif isinstance(sub, list):  # the *Of keywords, prefixItems, items (draft 4)
            parts = cast(list[Any], sub)
            self.values.work(len(parts))
            for index, part in enumerate(parts):
                self.push(part, (where, key, index))
        else:
            self.push(sub, (where, key))


def _want_type(value: Any) -> str | None:
    kinds = cast(list[Any], value) if isinstance(value, list) else [value]
    if all(isinstance(k, str) and k in _TYPES for k in kinds):
        return None
    return "a JSON Schema type name or a list of them"


def _want_list(value: Any) -> str | None:
    return None if isinstance(value, list) else "a list"


def _want_options(value: Any) -> str | None:
    if isinstance(value, list) and value:
        return None
    return "a list of at least one schema"


def _want_names(value: Any) -> str | None:
    if isinstance(value, list) and all(
        isinstance(name, str) for name in cast(list[Any], value)
    ):
        return None
    return "a list of property names"


def _want_count(value: Any) -> str | None:
    return None if _count(value) is not None else "a non-negative integer"


def _want_bound(value: Any) -> str | None:
    return None if _bound(value, draft4=False) else "a number"


def _want_exclusive(value: Any) -> str | None:
    return None if _bound(value, draft4=True) else "a number"


def _want_step(value: Any) -> str | None:
    return None if _finite(value) and value > 0 else "a number above 0"


def _want_flag(value: Any) -> str | None:
    return None if isinstance(value, bool) else "true or false"


def _want_ref(value: Any) -> str | None:
    return None if isinstance(value, str) else "a string"


def _want_object(value: Any) -> str | None:
    return None if isinstance(value, dict | Mapping) else "an object"


def _want_items(value: Any) -> str | None:
    if isinstance(value, bool | dict | Mapping | list):
        return None
    return "a schema"


_SHAPES: dict[str, Callable[[Any], str | None]] = {
    "type": _want_type,
    "enum": _want_list,
    "prefixItems": _want_list,
    "anyOf": _want_options,
    "oneOf": _want_options,
    "allOf": _want_options,
    "required": _want_names,
    **dict.fromkeys(_COUNTS, _want_count),
    "minimum": _want_bound,
    "maximum": _want_bound,
    "exclusiveMinimum": _want_exclusive,
    "exclusiveMaximum": _want_exclusive,
    "multipleOf": _want_step,
    "uniqueItems": _want_flag,
    "$ref": _want_ref,
    "properties": _want_object,
    "items": _want_items,
}
"""What each keyword the generator reads must be: None if it is, else words."""
_CHILDREN = frozenset(
    {"$ref", "properties", "items", "additionalItems", "additionalProperties",
     "prefixItems", "anyOf", "oneOf", "allOf"}
)  # fmt: skip
"""The keywords whose values are (lists of, objects of) schemas it reads."""


def _place(where: tuple[Any, ...]) -> str:
    """A nested place, ``((("#",), "properties", "a"), "items")``, as a pointer."""
    parts: list[Any] = []
    while where and isinstance(where[0], tuple):
        parts[:0] = where[1:]
        where = cast(tuple[Any, ...], where[0])
    return _pointer([*where, *parts])


# --- one draw -------------------------------------------------------------------------


class _Draw:
    """One value drawn: the budgets it has spent, and where in it the draw is."""

    def __init__(self, values: SchemaValues, rng: random.Random, max_depth: int):
        self.values = values
        self.rng = rng
        self.max_depth = max_depth
        self.count = 0  # JSON values made (and kept)
        self.chars = 0  # their characters of JSON
        self.open = 0  # draws and resolutions open (the stack)
        self.path: list[Any] = []

    def fail(self, reason: str) -> _Unmet:
        return _Unmet(tuple(self.path), reason)

    # --- budgets

    def charge(self, count: int, chars: int) -> None:
        self.count += count
        self.chars += chars
        if self.count > MAX_VALUES:
            raise self.fail(
                f"the answer would hold more than {MAX_VALUES:,} values, "
                "the most one answer may"
            )
        if self.chars > MAX_CHARS:
            raise self.fail(
                f"the answer would take more than {MAX_CHARS:,} characters, "
                "the most one answer may"
            )

    def need(self, count: int, chars: int) -> None:
        """Fail now if ``count`` more values or ``chars`` more characters do not fit."""
        self.charge(count, chars)
        self.count -= count
        self.chars -= chars

    def mark(self) -> tuple[int, int]:
        return self.count, self.chars

    def restore(self, mark: tuple[int, int]) -> None:
        self.count, self.chars = mark

    def enter(self) -> None:
        """One more draw or resolution open; the caller's ``finally`` closes it."""
        self.open += 1
        if self.open > MAX_OPEN:
            raise self.fail(
                f"the schema nests ($ref, allOf, anyOf, oneOf, items, properties) "
                f"more than {MAX_OPEN} deep: a $ref that must go on for ever?"
            )

    # --- a value and its schema

    def value(self, schema: Any, depth: int) -> Any:
        """One value of the answer, at ``self.path``."""
        if depth > MAX_NESTING:
            raise self.fail(
                f"the value would nest arrays and objects more than {MAX_NESTING} "
                "deep (minItems or required properties that recurse?)"
            )
        return self.draw(schema, depth)

    def draw(self, schema: Any, depth: int) -> Any:
        try:
            self.enter()
            self.values.work(_DRAW_COST)
            if isinstance(schema, bool):  # true: anything; false: nothing fits
                if not schema:
                    raise self.fail("the schema here is false: no value fits")
                return self.any_json(depth)
            flat = self.flatten(cast(JSONObject, schema))
            if "const" in flat:
                return self.literal(flat["const"], flat, depth, "const")
            if "enum" in flat:
                return self.from_enum(flat, depth)
            for key in ("anyOf", "oneOf"):
                if key in flat:
                    return self.one_of(flat, key, depth)
            return self.typed(flat, depth)
        finally:
            self.open -= 1

    def flatten(self, schema: JSONObject) -> JSONObject:
        """``$ref`` and ``allOf`` resolved and merged into one schema."""
        try:
            self.enter()
            ref = schema.get("$ref")
            if isinstance(ref, str):
                rest = {k: v for k, v in schema.items() if k != "$ref"}
                target = self.values.resolve(ref)
                if target is None:
                    raise self.fail(f"$ref {_show(ref)} does not resolve")
                if target is False:
                    raise self.fail(f"$ref {_show(ref)} is false: no value fits")
                schema = self.merge(self.flatten_any(target), rest)
            parts = schema.get("allOf")
            if isinstance(parts, list):
                merged: JSONObject = {k: v for k, v in schema.items() if k != "allOf"}
                for part in cast(list[Any], parts):
                    if part is False:
                        raise self.fail("an allOf part is false: no value fits")
                    merged = self.merge(merged, self.flatten_any(part))
                schema = merged
            return schema
        finally:
            self.open -= 1

    def flatten_any(self, schema: Any) -> JSONObject:
        if not isinstance(schema, Mapping):
            return {}  # true (false is refused where it is met)
        return self.flatten(cast(JSONObject, schema))

    def merge(self, base: JSONObject, extra: JSONObject) -> JSONObject:
        cost = len(base) + len(extra)
        for key in ("properties", "$defs", "required"):
            if key in base and key in extra:
                cost += _size(base[key]) + _size(extra[key])
        self.values.work(cost)
        return _merge(base, extra)

    def from_enum(self, schema: JSONObject, depth: int) -> Any:
        enum = cast(list[Any], schema["enum"])
        self.values.work(len(enum))
        kinds = _kinds_of(schema)
        choices = [v for v in enum if _is_a(v, kinds or list(_TYPES))]
        if not choices:
            if not enum:
                raise self.fail("enum is empty: no value fits")
            if kinds is None:
                raise self.fail("no enum value is a JSON value (NaN, Infinity)")
            raise self.fail(f"no enum value is of type {_show(schema.get('type'))}")
        return self.literal(self.rng.choice(choices), schema, depth, "enum value")

    def literal(self, value: Any, schema: JSONObject, depth: int, what: str) -> Any:
        """A copy of a ``const`` or ``enum`` value, within the bounds."""
        kinds = _kinds_of(schema)
        if kinds is not None and not _is_a(value, kinds):
            raise self.fail(f"{what} {_show(value)} is not of type {_show(kinds)}")
        count, chars, nesting = _measure(
            value, MAX_VALUES - self.count + 1, MAX_CHARS - self.chars + 1
        )
        if nesting is None:
            raise self.fail(f"{what} holds NaN or an infinity, which JSON cannot")
        if depth + nesting > MAX_NESTING:
            raise self.fail(
                f"{what} would nest arrays and objects more than {MAX_NESTING} deep"
            )
        self.values.work(count)
        self.charge(count, chars)
        return _copy(value)

    def one_of(self, schema: JSONObject, key: str, depth: int) -> Any:
        options = cast(list[Any], schema[key])
        rest = {k: v for k, v in schema.items() if k != key}
        self.values.work(len(rest) + len(options))
        order = self.option_order(options, depth)
        if not order:
            raise self.fail(f"every {key} option is false: no value fits")
        return self.first_met(
            order,
            lambda option: self.draw(self.merge(rest, self.flatten_any(option)), depth),
        )

    def first_met(self, options: Sequence[Any], attempt: Callable[[Any], Any]) -> Any:
        """``attempt(option)`` for each of ``options`` in turn: the first value
        one meets, what the others drew undone; else the first one's failure."""
        first: _Unmet | None = None
        for option in options:
            mark = self.mark()
            try:
                return attempt(option)
            except _OutOfWork:
                raise
            except _Unmet as unmet:
                self.restore(mark)
                first = first or unmet.with_traceback(None)
        try:
            raise cast(_Unmet, first)
        finally:
            first = None  # no cycle: error, traceback, this frame, error

    def option_order(self, options: list[Any], depth: int) -> list[Any]:
        """The option drawn first, then the others as listed (``false`` left out)."""
        if depth >= self.max_depth:
            shallow = [o for o in options if not self.values.nests(o)]
            chosen = self.rng.choice(shallow) if shallow else self.rng.choice(options)
        else:
            chosen = self.rng.choice(options)
        order = [chosen, *(o for o in options if o is not chosen)]
        return [o for o in order if o is not False]

    def typed(self, schema: JSONObject, depth: int) -> Any:
        kind = _kind(schema)
        if not isinstance(kind, list):
            return self.make(kind, schema, depth)
        kinds = cast(list[str], kind)
        if not kinds:
            raise self.fail("type is [], which no value has")
        if depth >= self.max_depth and "null" in kinds:
            chosen = "null"
        else:
            chosen = self.rng.choice(kinds)
        order = [chosen, *(k for k in kinds if k != chosen)]
        return self.first_met(order, lambda option: self.make(option, schema, depth))

    def make(self, kind: Any, schema: JSONObject, depth: int) -> Any:
        maker = _MAKERS.get(kind) if isinstance(kind, str) else None
        if maker is None:
            return self.any_json(depth)
        return maker(self, schema, depth)

    def any_json(self, depth: int) -> Any:
        kinds = ["null", "boolean", "integer", "string"]
        if depth < self.max_depth:
            kinds.append("array")
        return self.typed({"type": self.rng.choice(kinds)}, depth)

    # --- one maker per type

    def null(self, schema: JSONObject, depth: int) -> Any:
        self.charge(1, 4)
        return None

    def boolean(self, schema: JSONObject, depth: int) -> Any:
        value = self.rng.random() < 0.5
        self.charge(1, 5)
        return value

    def sizes(
        self, schema: JSONObject, what: str, most: int, bound: str
    ) -> tuple[int, int | None]:
        """``min<what>`` and ``max<what>`` (``Length``, ``Items``): the least
        and the most, if any; unmet when the least is past the most, or past
        ``most`` (``bound`` says what that is)."""
        low = _count(schema.get(f"min{what}", 0)) or 0
        high = _count(schema.get(f"max{what}"))
        if high is not None and low > high:
            raise self.fail(_more(f"min{what}", schema, f"max{what}"))
        if low > most:
            raise self.fail(_more(f"min{what}", schema, bound))
        return low, high

    def string(self, schema: JSONObject, depth: int) -> Any:
        low, high = self.sizes(
            schema, "Length", MAX_CHARS - 2, f"the {MAX_CHARS:,} characters "
            "one answer may take",
        )  # fmt: skip
        self.need(1, low + 2)  # before the letters are drawn: fail fast
        fmt: Any = schema.get("format")
        maker = _FORMATS.get(fmt) if isinstance(fmt, str) else None
        if maker is not None:
            text = self.formatted(maker, cast(str, fmt), low, high)
        else:
            count = self.rng.randint(1, 4)
            text = " ".join(self.rng.choice(_WORDS) for _ in range(count))
            if len(text) < low:
                self.values.work(low - len(text))
                text += "".join(
                    self.rng.choice(_LETTERS) for _ in range(low - len(text))
                )
            if high is not None:
                text = text[:high]
        self.charge(1, len(text) + 2)
        return text

    def formatted(
        self, maker: Callable[[random.Random], str], fmt: str, low: int, high: Any
    ) -> str:
        for _ in range(_FORMAT_TRIES):
            text = maker(self.rng)
            if low <= len(text) and (high is None or len(text) <= high):
                return text
        raise self.fail(f"format {fmt} cannot be met within minLength/maxLength")

    def integer(self, schema: JSONObject, depth: int) -> Any:
        low, high = int_bounds(self.bounds(schema))
        step = _int_step(schema.get("multipleOf"))
        if step is not None:
            first, last = -(-low // step), high // step
            if first > last:
                raise self.fail(
                    f"no multiple of {_show(step)} lies within "
                    f"minimum/maximum ({_show(low)} to {_show(high)})"
                )
            value = step * self.rng.randint(first, last)
        else:
            if low > high:
                raise self.fail(
                    f"no integer lies within minimum/maximum ({_show(low)} to "
                    f"{_show(high)})"
                )
            value = self.rng.randint(low, high)
        if value.bit_length() > _MAX_INT_BITS:  # Python writes 4,300 digits at most
            raise self.fail(f"an integer there would have {_digits(value):,} digits")
        self.charge(1, _int_chars(value))
        return value

    def number(self, schema: JSONObject, depth: int) -> Any:
        if _int_step(schema.get("multipleOf")) is not None:
            return self.integer(schema, depth)
        bounds = self.bounds(schema)
        if any(_huge(v) for v in bounds.values()):  # beyond a float: an integer
            return self.integer(schema, depth)
        value = self.float_within(bounds)
        if value is None:  # no float between the bounds: perhaps an integer
            try:
                return self.integer(schema, depth)
            except _OutOfWork:
                raise
            except _Unmet:
                raise self.fail("no number lies within minimum/maximum") from None
        self.charge(1, len(repr(value)))
        return value

    def float_within(self, bounds: Mapping[str, Any]) -> float | None:
        low, high, open_low, open_high = float_bounds(bounds)
        if low < high:
            share = self.rng.random()
            value = round(low * (1 - share) + high * share, 2)
            inside_low = value > low or (value == low and not open_low)
            inside_high = value < high or (value == high and not open_high)
            if not (inside_low and inside_high and math.isfinite(value)):
                value = low / 2 + high / 2
        else:
            value = low
        if not _fits(value, bounds):
            edges = (
                math.nextafter(low, math.inf),
                math.nextafter(high, -math.inf),
                low,
                high,
            )
            inside = [v for v in edges if math.isfinite(v) and _fits(v, bounds)]
            return inside[0] if inside else None
        return value

    def bounds(self, schema: JSONObject) -> dict[str, Any]:
        """The numeric bounds, an infinite one dropped (or refused, if it is the
        side that leaves nothing: ``minimum: 1e400`` is infinity)."""
        out: dict[str, Any] = {}
        for key in _BOUNDS:
            value: Any = schema.get(key)
            if isinstance(value, bool):
                out[key] = value
            elif _number(value):
                if isinstance(value, float) and math.isinf(value):
                    lower = key in ("minimum", "exclusiveMinimum")
                    if (value > 0) == lower:  # above every number, or below
                        raise self.fail(f"{key} is {_show(value)}: no number fits")
                    continue  # no bound on that side
                out[key] = value
        if out.get("exclusiveMinimum") is True and "minimum" not in out:
            del out["exclusiveMinimum"]
        if out.get("exclusiveMaximum") is True and "maximum" not in out:
            del out["exclusiveMaximum"]
        return out

    def array(self, schema: JSONObject, depth: int) -> Any:
        items: Any = schema.get("items", True)
        prefix = cast(list[Any], schema.get("prefixItems") or [])
        if isinstance(items, list):  # draft 4 to 2019-09: a tuple
            prefix, items = cast(list[Any], items), schema.get("additionalItems", True)
        low, high = self.sizes(
            schema, "Items", MAX_VALUES - 1, f"the {MAX_VALUES:,} values "
            "one answer may hold",
        )  # fmt: skip
        self.need(low + 1, 2 * low + 1)  # fail fast when the rest cannot hold them
        if high is None:
            high = low + (0 if depth >= self.max_depth else _EXTRA_ITEMS)
        high = min(high, low + _FREE_ITEMS)
        if items is False:
            if low > len(prefix):
                raise self.fail(
                    f"minItems {low} is more than the {len(prefix)} items allowed "
                    "(items is false)"
                )
            high = min(high, len(prefix))
        count = self.rng.randint(low, max(low, high))
        self.charge(1, 2)  # "[]" before the items: they cannot crowd it out
        if schema.get("uniqueItems") is True:
            return self.unique_items(prefix, items, count, low, depth)
        return self.items(prefix, items, count, low, depth)

    def items(
        self, prefix: list[Any], items: Any, count: int, low: int, depth: int
    ) -> list[Any]:
        out: list[Any] = []
        for index in range(count):
            item = self.item(prefix, items, index, low, depth)
            if item is _NONE:
                break
            out.append(item)
        return out

    def item(
        self, prefix: list[Any], items: Any, index: int, low: int, depth: int
    ) -> Any:
        """Item ``index``, or ``_NONE`` if it cannot be made and need not be."""
        mark = self.mark()
        self.path.append(index)
        try:
            self.charge(0, 1 if index else 0)  # its comma
            return self.value(
                prefix[index] if index < len(prefix) else items, depth + 1
            )
        except _OutOfWork:
            raise
        except _Unmet:
            if index < low:
                raise
            self.restore(mark)
            return _NONE
        finally:
            self.path.pop()

    def unique_items(
        self, prefix: list[Any], items: Any, count: int, low: int, depth: int
    ) -> list[Any]:
        out: list[Any] = []
        seen: set[str] = set()
        tries = repeats = 0
        while (
            len(out) < count
            and tries < count * _UNIQUE_TRIES
            and repeats < _UNIQUE_REPEATS
        ):
            tries += 1
            mark = self.mark()
            item = self.item(prefix, items, len(out), low, depth)
            if item is _NONE:
                break
            key = _canonical(item)
            self.values.work(len(key) // 2)
            if key in seen:
                self.restore(mark)  # drawn, not kept
                repeats += 1
                continue
            repeats = 0
            seen.add(key)
            out.append(item)
        if len(out) < low:
            raise self.fail(
                f"uniqueItems: found {len(out)} distinct items of the {low} "
                "minItems asks for"
            )
        return out

    def object(self, schema: JSONObject, depth: int) -> Any:
        properties = cast(JSONObject, schema.get("properties") or {})
        required = set(cast(list[str], schema.get("required") or []))
        self.values.work(len(properties) + len(required))
        if len(required) > MAX_VALUES:
            raise self.fail(
                f"{len(required):,} required properties are more than the "
                f"{MAX_VALUES:,} values one answer may hold"
            )
        out: dict[str, Any] = {}
        self.charge(1, 2)  # "{}" before the properties: they cannot crowd it out
        for name, sub in properties.items():
            optional_too = depth < self.max_depth and self.rng.random() < 0.5
            if name in required:
                if sub is False:
                    raise self.fail(
                        f"property {_show(name)} is required, and its schema is false"
                    )
                self.put(out, name, sub, depth)
            elif optional_too and sub is not False:
                mark = self.mark()
                try:
                    self.put(out, name, sub, depth)
                except _OutOfWork:
                    raise
                except _Unmet:
                    self.restore(mark)  # optional: left out
        extra: Any = schema.get("additionalProperties", True)
        for name in sorted(required - set(properties)):
            if extra is False and "patternProperties" not in schema:
                raise self.fail(
                    f"property {_show(name)} is required, and additionalProperties "
                    "is false"
                )
            self.put(out, name, extra if extra is not False else True, depth)
        return out

    def put(self, out: dict[str, Any], name: str, sub: Any, depth: int) -> None:
        self.path.append(name)
        try:
            self.charge(0, len(name) + 4)  # "name": and a comma
            out[name] = self.value(sub, depth + 1)
        finally:
            self.path.pop()


_NONE: Any = object()

_Maker = Callable[[_Draw, JSONObject, int], Any]
_MAKERS: dict[str, _Maker] = {
    "null": _Draw.null,
    "boolean": _Draw.boolean,
    "string": _Draw.string,
    "integer": _Draw.integer,
    "number": _Draw.number,
    "array": _Draw.array,
    "object": _Draw.object,
}


# --- formats ------------------------------------------------------------------------


def _date(rng: random.Random) -> dt.date:
    return dt.date(2000, 1, 1) + dt.timedelta(days=rng.randrange(365 * 36))


def _time(rng: random.Random) -> str:
    hour, minute, second = rng.randrange(24), rng.randrange(60), rng.randrange(60)
    return f"{hour:02d}:{minute:02d}:{second:02d}Z"


_FORMATS: dict[str, Callable[[random.Random], str]] = {
    "date": lambda rng: _date(rng).isoformat(),
    "date-time": lambda rng: f"{_date(rng).isoformat()}T{_time(rng)}",
    "time": _time,
    "email": lambda rng: f"{rng.choice(_WORDS)}{rng.randrange(100)}@example.com",
    "uri": lambda rng: f"https://example.com/{rng.choice(_WORDS)}",
    "uuid": lambda rng: str(uuid.UUID(int=rng.getrandbits(128), version=4)),
    "ipv4": lambda rng: ".".join(str(rng.randrange(256)) for _ in range(4)),
    "hostname": lambda rng: f"{rng.choice(_WORDS)}.example.com",
}


# --- helpers ------------------------------------------------------------------------


def _kind(schema: JSONObject) -> Any:
    if "type" in schema:
        return schema["type"]
    if "properties" in schema or "required" in schema:
        return "object"
    if "items" in schema or "prefixItems" in schema or "minItems" in schema:
        return "array"
    if "minLength" in schema or "maxLength" in schema or "format" in schema:
        return "string"
    if any(k in schema for k in ("minimum", "maximum", "multipleOf")):
        return "number"
    return None


def _kinds_of(schema: JSONObject) -> list[str] | None:
    kind = schema.get("type")
    if kind is None:
        return None
    return cast(list[str], kind) if isinstance(kind, list) else [cast(str, kind)]


def _is_a(value: Any, kinds: list[str]) -> bool:
    """Whether ``value`` has one of the JSON Schema types ``kinds``."""
    if value is None:
        return "null" in kinds
    if isinstance(value, bool):
        return "boolean" in kinds
    if isinstance(value, int):
        return "integer" in kinds or "number" in kinds
    if isinstance(value, float):
        if not math.isfinite(value):
            return False  # not a JSON value at all
        whole = value.is_integer() and "integer" in kinds
        return whole or "number" in kinds
    if isinstance(value, str):
        return "string" in kinds
    if isinstance(value, list):
        return "array" in kinds
    return isinstance(value, Mapping) and "object" in kinds


def _nests(option: Any) -> tuple[bool, int]:
    """Whether ``option`` holds the string ``$ref``, ``object`` or ``array`` (as
    a key or a value), and how many nodes were read: at most ``_NESTS_SCAN``,
    past which it is taken to nest."""
    todo: list[Any] = [option]
    read = 0
    while todo:
        node = todo.pop()
        read += 1
        if read > _NESTS_SCAN:
            return True, read
        if isinstance(node, str):
            if node in ("$ref", "object", "array"):
                return True, read
        elif isinstance(node, Mapping):
            mapping = cast(JSONObject, node)
            todo.extend(mapping.keys())
            todo.extend(mapping.values())
        elif isinstance(node, list):
            todo.extend(cast(list[Any], node))
    return False, read


def _resolve(root: Any, ref: str) -> Any:
    """The node a ``$ref`` names: ``True`` for a remote one, ``None`` when a local
    one does not resolve."""
    if not ref.startswith("#"):
        return True  # a remote reference: anything goes
    pointer = unquote(ref[1:])
    if pointer and not pointer.startswith("/"):
        return None  # "#name": an anchor, not supported
    node: Any = root
    for raw in pointer.split("/")[1:]:
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and part in node:
            node = cast(JSONObject, node)[part]
            continue
        items = cast(list[Any], node) if isinstance(node, list) else []
        if not (part.isascii() and part.isdigit() and len(part) < 10):
            return None
        if int(part) >= len(items):
            return None
        node = items[int(part)]
    return node


def _merge(base: JSONObject, extra: JSONObject) -> JSONObject:
    merged = {**base, **extra}
    for key in ("properties", "$defs"):
        if isinstance(base.get(key), Mapping) and isinstance(extra.get(key), Mapping):
            merged[key] = {**base[key], **extra[key]}
    if isinstance(base.get("required"), list) and isinstance(
        extra.get("required"), list
    ):
        merged["required"] = sorted({*base["required"], *extra["required"]})
    return merged


def _size(value: Any) -> int:
    return len(cast(Sized, value)) if isinstance(value, Mapping | list) else 0


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _finite(value: Any) -> bool:
    return _number(value) and (isinstance(value, int) or math.isfinite(value))


def _bound(value: Any, *, draft4: bool) -> bool:
    """Whether ``value`` can be a numeric bound (an infinity can: ``1e400``)."""
    if isinstance(value, bool):
        return draft4
    return _number(value) and not (isinstance(value, float) and math.isnan(value))


def _count(value: Any) -> int | None:
    """A non-negative integer (``3.0`` counts), or None."""
    if isinstance(value, bool) or not _finite(value) or value < 0:
        return None
    if isinstance(value, float):
        return int(value) if value.is_integer() else None
    return cast(int, value)


def _int_step(value: Any) -> int | None:
    """An integral ``multipleOf`` as an int (``2.0`` is 2), else None."""
    if not _finite(value) or value <= 0:
        return None
    if isinstance(value, float):
        return int(value) if value.is_integer() else None
    return cast(int, value)


def _huge(value: Any) -> bool:
    return (
        isinstance(value, int)
        and not isinstance(value, bool)
        and (value.bit_length() > 1000)
    )


def _fits(value: float, bounds: Mapping[str, Any]) -> bool:
    """Whether ``value`` meets the bounds (both spellings of exclusive ones)."""
    low: Any = bounds.get("minimum")
    high: Any = bounds.get("maximum")
    low_open: Any = bounds.get("exclusiveMinimum")
    high_open: Any = bounds.get("exclusiveMaximum")
    checks: tuple[bool, ...] = (
        low is None or value > low or (value == low and low_open is not True),
        high is None or value < high or (value == high and high_open is not True),
        not _number(low_open) or value > low_open,
        not _number(high_open) or value < high_open,
    )
    return all(checks)


def _digits(value: int) -> int:
    """About how many digits ``value`` has (log10 2 per bit), without writing it."""
    return value.bit_length() * 30103 // 100000 + 1


def _int_chars(value: int) -> int:
    return _digits(value) + 1  # and a sign


def _measure(value: Any, max_count: int, max_chars: int) -> tuple[int, int, Any]:
    """Values, characters of JSON and nesting of ``value``: the nesting is None if
    it holds a non-finite float. Reading stops once past ``max_count`` or
    ``max_chars`` (the caller's charge then fails)."""
    count = chars = nesting = 0
    todo: list[tuple[Any, int]] = [(value, 0)]
    while todo and count <= max_count and chars <= max_chars:
        node, level = todo.pop()
        count += 1
        if isinstance(node, str):
            chars += len(node) + 2
        elif isinstance(node, bool) or node is None:
            chars += 5
        elif isinstance(node, int):
            chars += _int_chars(node)
        elif isinstance(node, float):
            if not math.isfinite(node):
                return count, chars, None
            chars += len(repr(node))
        elif isinstance(node, Mapping):
            mapping = cast(JSONObject, node)
            nesting = max(nesting, level + 1)
            chars += 2 + sum(len(k) + 4 for k in mapping)
            todo.extend((v, level + 1) for v in mapping.values())
        elif isinstance(node, list):
            items = cast(list[Any], node)
            nesting = max(nesting, level + 1)
            chars += 2 + len(items)
            todo.extend((v, level + 1) for v in items)
    return count, chars, nesting


def _more(key: str, schema: JSONObject, than: str) -> str:
    """``minItems 5 is more than maxItems 3``: ``than`` a keyword, or words."""
    other = f"{than} {_show(schema[than])}" if than in schema else than
    return f"{key} {_show(schema[key])} is more than {other}"


def _pointer(path: Sequence[Any]) -> str:
    """A short, printable JSON pointer for a message (``/a/0``, ``#/items``)."""
    parts = [str(p).replace("~", "~0").replace("/", "~1") for p in path]
    head = [] if not parts or parts[0] != "#" else ["#"]
    rest = parts[len(head) :]
    if len(rest) > 8:
        rest = [*rest[:4], "...", *rest[-3:]]
    shown = [json.dumps(p[:40] + ("..." if len(p) > 40 else ""))[1:-1] for p in rest]
    return "/".join([*head, *shown]) if head else "/" + "/".join(shown)


def _show(value: Any) -> str:
    """A short, one-line picture of a value from the schema."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int):
        if value.bit_length() > 64:
            return f"a {_digits(value)}-digit number"
        return str(value)
    if isinstance(value, float):
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return (
            str(int(value)) if value.is_integer() and abs(value) < 1e16 else repr(value)
        )
    if isinstance(value, str):
        text = json.dumps(value[:40])
        return text[:-1] + '..."' if len(value) > 40 else text
    if isinstance(value, list):
        items = cast(list[Any], value)
        if len(items) <= 4 and all(isinstance(v, str) for v in items):
            return "[" + ", ".join(_show(v) for v in items) + "]"
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


def _copy(value: Any) -> Any:
    return json.loads(json.dumps(value))


def _canonical(value: Any) -> str:
    return json.dumps(_integral(value), sort_keys=True, separators=(",", ":"))


def _integral(value: Any) -> Any:
    """Floats that are whole numbers as ints, since JSON Schema counts 1 == 1.0."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [_integral(v) for v in cast(Sequence[Any], value)]
    if isinstance(value, dict):
        return {k: _integral(v) for k, v in cast(dict[str, Any], value).items()}
    return value

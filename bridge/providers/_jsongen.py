"""One JSON value for a JSON Schema, drawn from a ``random.Random``.

Owns a small, pure, dependency-free generator for the offline model: the same
schema and the same generator state give the same value. It covers what tool
and structured-output schemas use in practice:

* ``type`` (one, or a list such as ``["string", "null"]``: nullable), ``const``,
  ``enum``;
* objects: ``properties``, ``required`` (optional properties appear about half
  the time), ``additionalProperties`` (never adds extra keys);
* strings: ``minLength``/``maxLength``, ``format`` (``date``, ``date-time``,
  ``time``, ``email``, ``uri``, ``uuid``, ``ipv4``, ``hostname``);
* integers and numbers: ``minimum``/``maximum``, ``exclusiveMinimum``/
  ``exclusiveMaximum`` (2020-12 numbers or draft-4 booleans), integral
  ``multipleOf``;
* arrays: ``items``, ``prefixItems``, ``minItems``/``maxItems``, ``uniqueItems``;
* ``anyOf``/``oneOf`` (one option, merged with its siblings), ``allOf``
  (merged), ``$ref`` to any JSON pointer in the root (``#/$defs/...``), with a
  depth budget so recursive schemas end.

It reads schemas as JSON Schema, so OpenAPI's ``nullable: true`` is ignored
(nullable is ``anyOf`` with ``{"type": "null"}`` or a type list). It does not
guarantee validity for keywords it does not know (``pattern``, ``not``,
``if``/``then``/``else``, ``contains``, ``dependent*``, ``minProperties``,
fractional ``multipleOf``), for ``oneOf`` options that overlap (a value may
match two), or for a ``format`` combined with length bounds (the format wins).
It never raises on such schemas: it returns its best effort, as a model would.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import random
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from ._schema_bounds import float_bounds, int_bounds

__all__ = ["value_from_schema"]

JSONObject = Mapping[str, Any]

_WORDS = (
    "amber", "bright", "calm", "clear", "early", "field", "green", "harbor",
    "idea", "light", "line", "move", "north", "open", "path", "plan", "quiet",
    "river", "stone", "simple", "steady", "take", "the", "center", "corner",
)  # fmt: skip
_EXTRA_ITEMS = 3
_UNIQUE_TRIES = 20


def value_from_schema(
    schema: JSONObject | bool, rng: random.Random, *, max_depth: int = 6
) -> Any:
    """A JSON value for ``schema``, drawn from ``rng``.

    Args:
        schema: a JSON Schema (2020-12, or the common subset of older drafts);
            ``$ref`` pointers resolve against it.
        rng: the source of every choice; equal states give equal values.
        max_depth: nesting after which optional properties, extra array items
            and recursive options are avoided.

    Returns:
        A JSON-compatible value (dict, list, str, int, float, bool or None).
    """
    return _Generator(schema, rng, max_depth).value(schema, 0)


class _Generator:
    def __init__(self, root: JSONObject | bool, rng: random.Random, max_depth: int):
        self.root = root
        self.rng = rng
        self.max_depth = max_depth

    def value(self, schema: JSONObject | bool, depth: int) -> Any:
        if isinstance(schema, bool):  # true: anything; false: nothing fits
            return self.any_json(depth) if schema else None
        schema = self.flatten(schema)
        if "const" in schema:
            return _copy(schema["const"])
        if schema.get("enum"):
            return _copy(self.rng.choice(list(schema["enum"])))
        for key in ("anyOf", "oneOf"):
            options = schema.get(key)
            if isinstance(options, list) and options:
                option = self.pick_option(cast(list[Any], options), depth)
                rest = {k: v for k, v in schema.items() if k != key}
                return self.value(_merge(rest, self.flatten_any(option)), depth)
        return self.typed(schema, depth)

    def flatten(self, schema: JSONObject) -> JSONObject:
        """``$ref`` and ``allOf`` resolved and merged into one schema."""
        for _ in range(32):  # a ref chain longer than this is a loop
            ref = schema.get("$ref")
            if not isinstance(ref, str):
                break
            rest = {k: v for k, v in schema.items() if k != "$ref"}
            schema = _merge(self.flatten_any(_resolve(self.root, ref)), rest)
        parts = schema.get("allOf")
        if isinstance(parts, list):
            merged: JSONObject = {k: v for k, v in schema.items() if k != "allOf"}
            for part in cast(list[Any], parts):
                merged = _merge(merged, self.flatten_any(part))
            schema = merged
        return schema

    def flatten_any(self, schema: Any) -> JSONObject:
        if schema is True or not isinstance(schema, Mapping):
            return {}
        return self.flatten(cast(JSONObject, schema))

    def pick_option(self, options: list[Any], depth: int) -> Any:
        if depth >= self.max_depth:
            shallow = [o for o in options if not _nests(o)]
            if shallow:
                return self.rng.choice(shallow)
        return self.rng.choice(options)

    def typed(self, schema: JSONObject, depth: int) -> Any:
        kind = _kind(schema)
        if isinstance(kind, list):
            kinds = cast(list[str], kind) or ["null"]
            if depth >= self.max_depth and "null" in kinds:
                kind = "null"
            else:
                kind = self.rng.choice(kinds)
        maker = _MAKERS.get(str(kind))
        if maker is None:
            return self.any_json(depth)
        return maker(self, schema, depth)

    def any_json(self, depth: int) -> Any:
        kinds = ["null", "boolean", "integer", "string"]
        if depth < self.max_depth:
            kinds.append("array")
        return self.typed({"type": self.rng.choice(kinds)}, depth)

    # --- one maker per type -------------------------------------------------------

    def null(self, schema: JSONObject, depth: int) -> Any:
        return None

    def boolean(self, schema: JSONObject, depth: int) -> Any:
        return self.rng.random() < 0.5

    def string(self, schema: JSONObject, depth: int) -> Any:
        fmt = _FORMATS.get(str(schema.get("format")))
        if fmt is not None:
            return fmt(self.rng)
        low = _int(schema.get("minLength"), 0)
        high = _int(schema.get("maxLength"), None)
        count = self.rng.randint(1, 4)
        text = " ".join(self.rng.choice(_WORDS) for _ in range(count))
        while len(text) < low:
            text += self.rng.choice("abcdefghijklmnopqrstuvwxyz")
        return text if high is None else text[: max(high, low)]

    def integer(self, schema: JSONObject, depth: int) -> Any:
        low, high = int_bounds(schema)
        step = schema.get("multipleOf")
        if isinstance(step, int) and not isinstance(step, bool) and step > 0:
            first, last = -(-low // step), high // step
            return step * self.rng.randint(first, max(first, last))
        return self.rng.randint(low, max(low, high))

    def number(self, schema: JSONObject, depth: int) -> Any:
        step = schema.get("multipleOf")
        if isinstance(step, int) and not isinstance(step, bool):
            return self.integer(schema, depth)
        low, high, open_low, open_high = float_bounds(schema)
        if low >= high:
            return low
        share = self.rng.random()
        value = round(low * (1 - share) + high * share, 2)
        inside_low = value > low or (value == low and not open_low)
        inside_high = value < high or (value == high and not open_high)
        if not (inside_low and inside_high and math.isfinite(value)):
            value = low / 2 + high / 2
        return value

    def array(self, schema: JSONObject, depth: int) -> Any:
        prefix = cast(list[Any], schema.get("prefixItems") or [])
        items: Any = schema.get("items", True)
        low = _int(schema.get("minItems"), 0)
        high = _int(schema.get("maxItems"), None)
        if high is None:
            high = low + (0 if depth >= self.max_depth else _EXTRA_ITEMS)
        if items is False:
            high = min(high, len(prefix))
        count = self.rng.randint(low, max(low, high))
        if schema.get("uniqueItems") is True:
            return self.unique_items(prefix, items, count, low, depth)
        return [
            self.value(prefix[i] if i < len(prefix) else items, depth + 1)
            for i in range(count)
        ]

    def unique_items(
        self, prefix: list[Any], items: Any, count: int, low: int, depth: int
    ) -> list[Any]:
        out: list[Any] = []
        seen: set[str] = set()
        tries = 0
        while len(out) < count and tries < count * _UNIQUE_TRIES:
            tries += 1
            index = len(out)
            item = self.value(
                prefix[index] if index < len(prefix) else items, depth + 1
            )
            key = _canonical(item)
            if key not in seen:
                seen.add(key)
                out.append(item)
        return out if len(out) >= low else out + out[: low - len(out)]

    def object(self, schema: JSONObject, depth: int) -> Any:
        properties = cast(JSONObject, schema.get("properties") or {})
        required = set(cast(list[str], schema.get("required") or []))
        out: dict[str, Any] = {}
        for name, sub in properties.items():
            optional_too = depth < self.max_depth and self.rng.random() < 0.5
            if name in required or optional_too:
                out[name] = self.value(sub, depth + 1)
        extra: Any = schema.get("additionalProperties", True)
        for name in sorted(required - set(properties)):
            out[name] = self.value(extra if extra is not False else True, depth + 1)
        return out


_Maker = Callable[[_Generator, JSONObject, int], Any]
_MAKERS: dict[str, _Maker] = {
    "null": _Generator.null,
    "boolean": _Generator.boolean,
    "string": _Generator.string,
    "integer": _Generator.integer,
    "number": _Generator.number,
    "array": _Generator.array,
    "object": _Generator.object,
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


def _nests(option: Any) -> bool:
    if not isinstance(option, Mapping):
        return False
    text = json.dumps(option, default=str)
    return '"$ref"' in text or '"object"' in text or '"array"' in text


def _resolve(root: JSONObject | bool, ref: str) -> Any:
    if not ref.startswith("#"):
        return True  # a remote reference: anything goes
    node: Any = root
    for raw in ref[1:].split("/")[1:]:
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and part in node:
            node = cast(JSONObject, node)[part]
            continue
        items: list[Any] = cast(list[Any], node) if isinstance(node, list) else []
        if not (part.isdigit() and int(part) < len(items)):
            return True
        node = items[int(part)]
    return node


def _merge(base: JSONObject, extra: JSONObject) -> JSONObject:
    merged = {**base, **extra}
    for key in ("properties", "$defs"):
        if key in base and key in extra:
            merged[key] = {**base[key], **extra[key]}
    if "required" in base and "required" in extra:
        merged["required"] = sorted({*base["required"], *extra["required"]})
    return merged


def _int(value: Any, default: Any) -> Any:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return math.ceil(value)
    return default


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

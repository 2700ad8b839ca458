"""What no JSON message can carry, in a value a server advertises.

A Python value can hold two things JSON cannot: a non-finite float
(``float("inf")``, NaN), which ``pydantic_core.to_json`` writes as
``Infinity`` or ``NaN`` and a strict parser (``JSON.parse``, the TypeScript
SDK) refuses together with the whole message it is in; and a lone surrogate
(text decoded with ``errors="surrogateescape"``, or a bad ``"\\ud800"``
escape), which UTF-8 cannot encode, so the message fails when it is written.
A tool's definition travels in ``tools/list`` beside every other tool's, so
one such value in it loses the server's whole list, not just the tool.

Owns :func:`sendable_schema` (a JSON Schema with each ``default`` holding a
non-finite number left out: such a default is a Python function's or a
model's, which still applies to what is left out; the schema only tells of
it) and :func:`unsendable` (the first value left that JSON cannot carry, and
where: an :class:`Unsendable`).

It does not refuse anything itself: ``runtime.tools`` refuses such a tool
when it is defined, and ``runtime.elicitation`` such a form.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any, Final, cast, final

import attrs

__all__ = ["Unsendable", "sendable_schema", "unsendable"]

# Keywords whose value maps names to schemas: its keys are no keywords.
_NAMED_SCHEMAS: Final = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
)
# Keywords whose value is JSON data, not a schema.
_DATA: Final = frozenset({"default", "const", "enum", "examples"})

_LONE_SURROGATE: Final = re.compile("[\ud800-\udfff]")

Path = tuple[str | int, ...]


@final
@attrs.frozen
class Unsendable:
    """A value JSON cannot carry, found by :func:`unsendable`.

    Attributes:
        path: where it is, from the root of the value searched (keys and
            list indexes; empty for the root itself).
        problem: what is wrong with it, as the end of a sentence whose
            subject is the place (``"is inf, which JSON cannot carry..."``).
    """

    path: Path
    problem: str

    def describe(self, skip: int = 0) -> str:
        """``"<place> <problem>"``, the place written from ``path[skip:]``
        (``properties.limit.examples[0]``), or ``"the value"`` at the root."""
        return f"{_place(self.path[skip:])} {self.problem}"


def sendable_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of the JSON Schema ``schema``, with every ``default`` that holds
    a non-finite number left out (the rest as it is)."""
    return _schema(schema)


def unsendable(value: Any) -> Unsendable | None:
    """The first non-finite float or text with a lone surrogate (a value, or
    a mapping's key) in ``value``, walking mappings, lists and tuples; None
    when JSON can carry all of it. Other values are not looked at."""
    return _find(value, ())


def _schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "default" and _has_non_finite(value):
            continue  # the Python default applies all the same
        if key in _DATA:
            out[key] = value
        elif key in _NAMED_SCHEMAS and isinstance(value, Mapping):
            named = cast("Mapping[str, Any]", value).items()
            out[key] = {name: _any_schema(sub) for name, sub in named}
        else:
            out[key] = _any_schema(value)
    return out


def _any_schema(value: Any) -> Any:
    if isinstance(value, Mapping):
        return _schema(cast("Mapping[str, Any]", value))
    if isinstance(value, list):
        return [_any_schema(item) for item in cast("list[Any]", value)]
    return value


def _has_non_finite(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, Mapping):
        return any(
            _has_non_finite(v) for v in cast("Mapping[Any, Any]", value).values()
        )
    if isinstance(value, list | tuple):
        return any(_has_non_finite(v) for v in cast("list[Any]", value))
    return False


def _find(value: Any, path: Path) -> Unsendable | None:
    if isinstance(value, str):
        return _text(value, path)
    if isinstance(value, float):
        if math.isfinite(value):
            return None
        return Unsendable(
            path,
            f"is {value!r}, which JSON cannot carry (a strict JSON parser "
            f"refuses the whole tools/list); use a finite number, or none",
        )
    if isinstance(value, Mapping):
        for key, item in cast("Mapping[Any, Any]", value).items():
            found = (_text(key, (*path, key)) if isinstance(key, str) else None) or (
                _find(item, (*path, key))
            )
            if found is not None:
                return found
        return None
    if isinstance(value, list | tuple):
        for index, item in enumerate(cast("list[Any]", value)):
            found = _find(item, (*path, index))
            if found is not None:
                return found
    return None


def _text(text: str, path: Path) -> Unsendable | None:
    if text.isascii():
        return None
    lone = _LONE_SURROGATE.search(text)
    if lone is None:
        return None
    return Unsendable(
        path,
        f"is not valid Unicode: {lone.group()!r} at index {lone.start()} is a "
        f"lone surrogate, which UTF-8 cannot carry (left by decoding bytes with "
        f"errors='surrogateescape', or a bad '\\ud800' escape); decode with "
        f"errors='replace', or write the character meant",
    )


def _place(path: Path) -> str:
    if not path:
        return "the value"
    place = ""
    for step in path:
        if isinstance(step, int):
            place += f"[{step}]"
            continue
        # A name with a lone surrogate is written escaped: the message is sent.
        name = step.encode("utf-8", "backslashreplace").decode("utf-8")
        place += f".{name}" if place else name
    return place

"""A quick, conservative check of a form answer against a flat form schema.

MCP form schemas are flat objects of primitive fields, and nearly every answer
is valid, so a full JSON Schema validation (``jsonschema``, tens of
microseconds) is mostly spent confirming it. :func:`surely_valid` confirms the
common case directly: it answers True only when every keyword in the schema is
one it knows, and the answer passes each of them exactly as JSON Schema
2020-12 (formats not asserted) says. Anything else — an unknown keyword, a
type list, a non-string enum, any failure — is None: "ask the full
validator", which then decides and explains. So this module can only save
time; it never accepts what ``jsonschema`` would refuse.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, cast

__all__ = ["surely_valid"]

_OBJECT_KEYS: Final = frozenset(
    {"type", "properties", "required", "title", "description"}
)
_FIELD_KEYS: Final = frozenset(
    {"type", "title", "description", "default", "format", "enum", "enumNames",
     "minLength", "maxLength", "minimum", "maximum"}
)  # fmt: skip


def surely_valid(schema: Mapping[str, Any], content: Mapping[str, Any]) -> bool | None:
    """True if ``content`` certainly matches ``schema``; None if undecided."""
    if schema.get("type") != "object" or not _OBJECT_KEYS.issuperset(schema):
        return None
    properties: Any = schema.get("properties", {})
    required: Any = schema.get("required", [])
    if not isinstance(properties, dict) or not isinstance(required, list):
        return None
    fields = cast("dict[str, Any]", properties)
    for name in cast("list[Any]", required):
        if name not in content:
            return None
    for name, value in content.items():
        field: Any = fields.get(name)
        if field is not None and not _field_ok(field, value):
            return None
    return True


def _field_ok(field: Any, value: Any) -> bool:
    if not isinstance(field, dict):
        return False
    spec = cast("dict[str, Any]", field)
    if not _FIELD_KEYS.issuperset(spec):
        return False
    kind = spec.get("type")
    if kind == "string":
        return _string_ok(spec, value)
    if kind == "boolean":
        return type(value) is bool and "enum" not in spec
    if kind in ("number", "integer"):
        return _number_ok(spec, value, integer=kind == "integer")
    return False


def _string_ok(field: Mapping[str, Any], value: Any) -> bool:
    if type(value) is not str:
        return False
    enum: Any = field.get("enum")
    if enum is not None and not _in_string_enum(value, enum):
        return False
    low, high = field.get("minLength"), field.get("maxLength")
    if low is not None and not (type(low) is int and len(value) >= low):
        return False
    return high is None or (type(high) is int and len(value) <= high)


def _in_string_enum(value: str, enum: Any) -> bool:
    if not isinstance(enum, list):
        return False
    members = cast("list[Any]", enum)
    return all(type(e) is str for e in members) and value in members


def _number_ok(field: Mapping[str, Any], value: Any, *, integer: bool) -> bool:
    if type(value) not in (int, float) or "enum" in field:
        return False
    if integer and not (type(value) is int or value.is_integer()):
        return False
    low, high = field.get("minimum"), field.get("maximum")
    if low is not None and not (type(low) in (int, float) and value >= low):
        return False
    return high is None or (type(high) in (int, float) and value <= high)

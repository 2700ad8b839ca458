"""Turn a pydantic model into an MCP elicitation ``requestedSchema``.

MCP form elicitation only accepts a flat object whose properties are primitive:
strings (optionally with ``format``), numbers, integers, booleans, single-select
enums (plain ``enum``, titled ``oneOf`` of ``const``/``title``, or the legacy
``enum`` + ``enumNames``) and multi-select arrays (``items.enum``, or titled
``items.anyOf``). Titled forms come from ``json_schema_extra`` on a ``str`` /
``list[str]`` field. This module maps a model's JSON Schema onto
exactly those shapes (keeping only the keywords MCP defines, and no non-finite
``default``) and refuses anything else, and what JSON cannot carry (another
non-finite number, a lone surrogate), with an error naming the field and why,
at tool-definition time.

It owns the mapping; it does not validate answers (the model itself does that).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, cast

from pydantic import BaseModel, SecretBytes, SecretStr

from ..errors import InvalidTool
from ..wire.sendable import sendable_schema, unsendable

__all__ = ["elicitation_schema"]

_STRING_KEYS = ("title", "description", "minLength", "maxLength", "format", "default")
_NUMBER_KEYS = ("title", "description", "minimum", "maximum", "default")
_COMMON_KEYS = ("title", "description", "default")
_FORMATS = frozenset({"email", "uri", "date", "date-time"})


@functools.cache
def elicitation_schema(model: type[BaseModel]) -> Mapping[str, Any]:
    """The MCP ``requestedSchema`` for ``model``, or InvalidTool if it is not
    flat or not JSON."""
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise InvalidTool(f"elicits expects pydantic model classes, got {model!r}")
    _refuse_secrets(model)
    schema = model.model_json_schema()
    defs: Mapping[str, Any] = schema.get("$defs", {})
    properties: dict[str, Any] = {}
    for name, prop in schema.get("properties", {}).items():
        properties[name] = _sendable(
            model, name, _property(model, name, _deref(prop, defs), defs)
        )
    out: dict[str, Any] = {"type": "object", "properties": properties}
    if schema.get("required"):
        out["required"] = list(schema["required"])
    found = unsendable(out)  # a field's name, or its alias
    if found is not None:
        raise InvalidTool(f"{model.__name__}: {found.describe()}")
    return out


def _sendable(
    model: type[BaseModel], name: str, prop: dict[str, Any]
) -> dict[str, Any]:
    """``prop`` with no non-finite ``default`` (the model's applies to a field
    left empty all the same), or InvalidTool naming the field, if it still
    holds what JSON cannot carry: the form would fail at the write, or be
    refused by a strict client (see :mod:`runtime.wire.sendable`)."""
    prop = sendable_schema(prop)
    found = unsendable(prop)
    if found is not None:
        raise InvalidTool(f"{model.__name__}.{name}: {found.describe()}")
    return prop


# MCP forbids asking for secrets in form mode (they would travel and be shown in
# the clear); such fields are refused when the tool is defined.
_SECRET_NAMES = frozenset(
    {"password", "passwd", "passphrase", "api_key", "apikey", "secret",
     "client_secret", "private_key", "credit_card", "card_number", "cvv", "cvc",
     "ssn", "pin"}
)  # fmt: skip


def _refuse_secrets(model: type[BaseModel]) -> None:
    for name, field in model.model_fields.items():
        annotation: Any = field.annotation
        secret_type = annotation in (SecretStr, SecretBytes, SecretStr | None)
        if secret_type or name.lower() in _SECRET_NAMES:
            raise InvalidTool(
                f"{model.__name__}.{name} looks like a secret; MCP forbids asking "
                f"for passwords, keys or payment data in a form. Send the user to "
                f"a page of yours with ctx.elicit_url(message, url) instead."
            )


def _deref(prop: Mapping[str, Any], defs: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = prop.get("$ref")
    if not isinstance(ref, str):
        return prop
    target = defs[ref.rsplit("/", 1)[-1]]
    # Keep the field's own title/description/default over the referenced type's.
    return {**target, **{k: v for k, v in prop.items() if k != "$ref"}}


def _property(
    model: type[BaseModel],
    name: str,
    prop: Mapping[str, Any],
    defs: Mapping[str, Any],
) -> dict[str, Any]:
    prop = _strip_optional(prop, defs)
    kind = prop.get("type")
    if "enum" in prop or "oneOf" in prop:
        return _single_select(model, name, prop)
    if kind == "string":
        fmt = prop.get("format")
        if fmt is not None and fmt not in _FORMATS:
            prop = {k: v for k, v in prop.items() if k != "format"}
        return _pick(prop, _STRING_KEYS, type="string")
    if kind in ("number", "integer"):
        return _pick(prop, _NUMBER_KEYS, type=kind)
    if kind == "boolean":
        return _pick(prop, _COMMON_KEYS, type="boolean")
    if kind == "array":
        return _multi_select(model, name, prop, defs)
    raise _flat_error(model, name, prop)


def _strip_optional(
    prop: Mapping[str, Any], defs: Mapping[str, Any]
) -> Mapping[str, Any]:
    """``X | None`` becomes ``X``: absence is how a form leaves a field empty."""
    options: Any = prop.get("anyOf")
    if not isinstance(options, list):
        return prop
    kept: list[Mapping[str, Any]] = [
        o for o in cast(list[Mapping[str, Any]], options) if o.get("type") != "null"
    ]
    if len(kept) != 1:
        return prop
    rest = {k: v for k, v in prop.items() if k != "anyOf"}
    if rest.get("default", 0) is None:
        del rest["default"]
    return {**_deref(kept[0], defs), **rest}


def _single_select(
    model: type[BaseModel], name: str, prop: Mapping[str, Any]
) -> dict[str, Any]:
    if "oneOf" in prop:
        options = prop["oneOf"]
        if not all(isinstance(o.get("const"), str) for o in options):
            raise _flat_error(model, name, prop)
        out = _pick(prop, _COMMON_KEYS, type="string")
        out["oneOf"] = [
            {"const": o["const"], "title": o.get("title", o["const"])} for o in options
        ]
        return out
    values = prop["enum"]
    if not all(isinstance(v, str) for v in values):
        raise InvalidTool(
            f"{model.__name__}.{name}: elicitation enums must have string values, "
            f"got {values!r}; use a str Enum or Literal of strings"
        )
    out = _pick(prop, _COMMON_KEYS, type="string")
    out["enum"] = list(values)
    names: Any = prop.get("enumNames")
    if names is not None:  # the legacy titled form (MCP LegacyTitledEnumSchema)
        if not (
            isinstance(names, list)
            and len(cast(list[Any], names)) == len(values)
            and all(isinstance(n, str) for n in cast(list[Any], names))
        ):
            raise _flat_error(model, name, prop)
        out["enumNames"] = list(cast(list[str], names))
    return out


def _multi_select(
    model: type[BaseModel],
    name: str,
    prop: Mapping[str, Any],
    defs: Mapping[str, Any],
) -> dict[str, Any]:
    items = _deref(prop.get("items", {}), defs)
    out = _pick(prop, (*_COMMON_KEYS, "minItems", "maxItems"), type="array")
    titled: Any = items.get("anyOf")
    if isinstance(titled, list):  # MCP TitledMultiSelectEnumSchema
        options = cast(list[Any], titled)
        if not options or not all(_is_titled_option(o) for o in options):
            raise _flat_error(model, name, prop)
        out["items"] = {
            "anyOf": [{"const": o["const"], "title": o["title"]} for o in options]
        }
        return out
    values: Any = items.get("enum")
    if not (isinstance(values, list) and all(isinstance(v, str) for v in values)):  # pyright: ignore[reportUnknownVariableType]
        raise _flat_error(model, name, prop)
    out["items"] = {"type": "string", "enum": list(cast(list[str], values))}
    return out


def _is_titled_option(option: Any) -> bool:
    if not isinstance(option, dict):
        return False
    entry = cast(dict[str, Any], option)
    return isinstance(entry.get("const"), str) and isinstance(entry.get("title"), str)


def _pick(
    prop: Mapping[str, Any], keys: tuple[str, ...], **fixed: Any
) -> dict[str, Any]:
    out = dict(fixed)
    # A null (``x: str = None``'s default) is how JSON Schema says nothing
    # here; MCP's schema has no null for these keys, so it is left out.
    out.update({k: prop[k] for k in keys if prop.get(k) is not None})
    return out


def _flat_error(
    model: type[BaseModel], name: str, prop: Mapping[str, Any]
) -> InvalidTool:
    return InvalidTool(
        f"{model.__name__}.{name} cannot be elicited: MCP forms take only flat "
        f"fields of str, int, float, bool, a str Enum/Literal, or a list of one "
        f"(got JSON Schema {dict(prop)!r}). Split nested data into several fields."
    )

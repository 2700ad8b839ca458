"""Strict validation of JSON against pydantic wire models, unions by tag.

``mcp-types`` declares content as plain unions (``TextContent | ImageContent |
... | list[...]``). Pydantic's smart mode validates a value against every
member of such a union to pick the best, so one text block costs as much as
six. Every member carries a required ``type`` literal, so at most one member
can accept a given object: this module builds, once per model, a subclass
whose unions dispatch on that tag (pydantic's ``Discriminator``) and so
validate one member.

:func:`check_json` accepts exactly what the original model accepts:

* a value the tagged model accepts, the original accepts too (the tagged
  member is one of the union's members, and the rest of the model is
  inherited unchanged);
* a value the tagged model refuses is validated by the original model, whose
  verdict and ``ValidationError`` are the ones the caller sees.

So refusals cost two validations, and acceptances one cheap one. Only unions
the rule above holds for are rewritten: every member a model with a required,
single-string ``type`` literal (tags distinct), or one ``list`` member, or
``None``. Anything else is left as it is.
"""

from __future__ import annotations

import functools
import math
import types
from typing import (
    Annotated,
    Any,
    Literal,
    TypeGuard,
    Union,
    cast,
    get_args,
    get_origin,
)

from pydantic import (
    BaseModel,
    Discriminator,
    Tag,
    TypeAdapter,
    ValidationError,
    create_model,
)

__all__ = [
    "check_form_properties",
    "check_json",
    "plain_form_content",
    "plain_form_properties",
    "plain_requested_schema",
    "tagged_model",
]

# The tag of a union's list member. A model tagged "[]" beside a list member
# would share it, and a union with a shared tag is left alone.
_LIST_TAG = "[]"


def check_json(model: type[BaseModel], data: object) -> None:
    """Validate ``data`` (JSON) against ``model``: strict, wire names only.

    Raises:
        ValidationError: ``model`` refuses ``data`` (its own error).
    """
    tagged = tagged_model(model)
    if tagged is not model:
        try:
            _strict(tagged, data)
        except ValidationError:
            pass  # the original model gives the verdict, and the message
        else:
            return
    _strict(model, data)


def _strict(model: type[BaseModel], data: object) -> None:
    model.__pydantic_validator__.validate_python(
        data, strict=True, by_alias=True, by_name=False
    )


def check_form_properties(wire: types.ModuleType, properties: object) -> None:
    """Validate a form schema's ``properties`` (JSON) as a map of the
    ``PrimitiveSchemaDefinition`` of ``wire`` (an ``mcp-types`` era module):
    strict, wire names only, as :func:`check_json`.

    Raises:
        ValidationError: some property is not a primitive field of that era.
    """
    _form_properties(wire).validator.validate_python(
        properties, strict=True, by_alias=True, by_name=False
    )


def plain_form_properties(properties: object) -> bool:
    """Whether ``properties`` is a map of primitive form fields each of
    exactly one of MCP's shapes, spelled with only the keys that shape
    defines and values of their exact JSON types.

    Such properties are valid in every era (the ``PrimitiveSchemaDefinition``
    of 2025-11-25 and 2026-07-28 are the same), and valid JSON Schema
    (lengths and counts not negative, a select's options not empty), so
    checking them needs no era's models and no metaschema: building those is
    a fifth of a process's start-up, paid at the first form otherwise.
    ``False`` says only "not sure": the models then give the verdict
    (:func:`check_form_properties`), as they always did.
    """
    if type(properties) is not dict:
        return False
    return all(
        type(name) is str and type(field) is dict and _plain_field(field)
        for name, field in cast(dict[Any, Any], properties).items()
    )


def plain_requested_schema(schema: object) -> bool:
    """Whether ``schema`` is a form's whole ``requestedSchema`` valid in every
    era by construction: ``{"type": "object", "properties": ..., "required":
    [...]}`` with :func:`plain_form_properties` and distinct names as
    ``required``. Such a schema is a valid JSON Schema (2020-12) too."""
    if type(schema) is not dict:
        return False
    form = cast(dict[str, Any], schema)
    required = form.get("required", [])
    return (
        form.keys() <= {"type", "properties", "required"}
        and form.get("type") == "object"
        and "properties" in form
        and _strings(required)
        and len(set(required)) == len(required)  # the metaschema's uniqueItems
        and plain_form_properties(form["properties"])
    )


def plain_form_content(content: object) -> bool:
    """Whether ``content`` is an accepted form's values as both eras' models
    take them: names to text, whole or finite numbers, booleans and lists of
    text (a fractional number too, as the TypeScript schema allows)."""
    return type(content) is dict and all(
        type(name) is str and _plain_answer(value)
        for name, value in cast(dict[Any, Any], content).items()
    )


def _plain_answer(value: object) -> bool:
    return _number(value) or _strings(value) or type(value) in (str, bool)


_FORMATS = frozenset({"date", "date-time", "email", "uri"})
_TEXT = ("title", "description")


def _plain_field(field: dict[str, Any]) -> bool:
    kind = field.get("type")
    if not all(type(field[k]) is str for k in _TEXT if k in field):
        return False
    if kind == "string":
        if "enum" in field:  # untitled single select, or the legacy titled one
            names = field.get("enumNames")
            return (
                field.keys() <= _LEGACY_ENUM_KEYS
                and _strings(field["enum"])
                and (names is None or _strings(names))
                and _optional(field, "default", str)
            )
        if "oneOf" in field:  # titled single select
            return (
                field.keys() <= _TITLED_ENUM_KEYS
                and _options(field["oneOf"])
                and _optional(field, "default", str)
            )
        return (
            field.keys() <= _STRING_KEYS
            and _optional(field, "default", str)
            and _count(field, "minLength")
            and _count(field, "maxLength")
            and _optional(field, "format", str)
            and field.get("format", "date") in _FORMATS
        )
    if kind in ("number", "integer"):
        return field.keys() <= _NUMBER_KEYS and all(
            _number(field[k]) for k in ("minimum", "maximum", "default") if k in field
        )
    if kind == "boolean":
        return field.keys() <= _COMMON_KEYS and _optional(field, "default", bool)
    if kind == "array":  # multi select, untitled or titled
        if type(field.get("items")) is not dict:
            return False
        items = cast(dict[str, Any], field["items"])
        plain_items = (
            items.keys() == {"type", "enum"}
            and items["type"] == "string"
            and _strings(items["enum"])
        ) or (items.keys() == {"anyOf"} and _options(items["anyOf"]))
        return (
            plain_items
            and field.keys() <= _ARRAY_KEYS
            and _count(field, "minItems")
            and _count(field, "maxItems")
            and ("default" not in field or _strings(field["default"]))
        )
    return False


_COMMON_KEYS = frozenset({"type", "title", "description", "default"})
_STRING_KEYS = _COMMON_KEYS | {"minLength", "maxLength", "format"}
_NUMBER_KEYS = _COMMON_KEYS | {"minimum", "maximum"}
_LEGACY_ENUM_KEYS = _COMMON_KEYS | {"enum", "enumNames"}
_TITLED_ENUM_KEYS = _COMMON_KEYS | {"oneOf"}
_ARRAY_KEYS = _COMMON_KEYS | {"items", "minItems", "maxItems"}


def _optional(field: dict[str, Any], key: str, kind: type) -> bool:
    return key not in field or type(field[key]) is kind  # exact: a bool is no int


def _count(field: dict[str, Any], key: str) -> bool:
    value = field.get(key, 0)
    return type(value) is int and value >= 0


def _strings(value: object) -> bool:
    return type(value) is list and all(type(v) is str for v in cast(list[Any], value))


def _options(value: object) -> bool:
    """A titled select's options: ``[{"const": str, "title": str}, ...]``,
    at least one (JSON Schema's ``oneOf`` and ``anyOf`` take no empty list)."""
    return (
        type(value) is list
        and len(cast(list[Any], value)) > 0
        and all(
            type(o) is dict
            and o.keys() == {"const", "title"}
            and type(o["const"]) is str
            and type(o["title"]) is str
            for o in cast(list[Any], value)
        )
    )


def _number(value: object) -> bool:
    return type(value) is int or (type(value) is float and math.isfinite(value))


@functools.cache
def _form_properties(wire: types.ModuleType) -> TypeAdapter[Any]:
    field: Any = wire.PrimitiveSchemaDefinition
    return TypeAdapter(cast(Any, dict)[str, field])


_TAGGED: dict[type[BaseModel], type[BaseModel]] = {}


def tagged_model(model: type[BaseModel]) -> type[BaseModel]:
    """``model`` with its tag-dispatchable unions (at any depth) rewritten;
    ``model`` itself when there are none."""
    found = _TAGGED.get(model)
    if found is None:
        # A model that refers to itself keeps the original, untagged, inside.
        _TAGGED[model] = model
        found = _TAGGED[model] = _rewrite_model(model)
    return found


def _rewrite_model(model: type[BaseModel]) -> type[BaseModel]:
    changed: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        annotation = _rewrite(info.annotation)
        if annotation is not info.annotation:
            changed[name] = (annotation, info)  # aliases, defaults: as before
    if not changed:
        return model
    return create_model(
        model.__name__, __base__=model, __module__=model.__module__, **changed
    )


def _rewrite(annotation: Any) -> Any:
    origin: Any = get_origin(annotation)
    if _is_model(annotation):
        return tagged_model(annotation)
    if origin is list:
        (item,) = get_args(annotation)
        rewritten = _rewrite(item)
        return annotation if rewritten is item else _list_of(rewritten)
    if origin is Union or origin is types.UnionType:
        members = get_args(annotation)
        rewritten_members = tuple(_rewrite(m) for m in members)
        dispatched = _dispatched(rewritten_members)
        if dispatched is not None:
            return dispatched
        if rewritten_members != members:
            return _union_of(rewritten_members)
    return annotation


def _is_model(annotation: Any) -> TypeGuard[type[BaseModel]]:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _list_of(item: Any) -> Any:
    return list[item]


def _union_of(members: tuple[Any, ...]) -> Any:
    return Union[members]  # noqa: UP007 - built from a tuple


def _dispatched(members: tuple[Any, ...]) -> Any | None:
    """The union of ``members`` dispatched on its tag, or None if some member
    cannot be told apart by tag alone."""
    nullable = type(None) in members
    by_tag: dict[str, Any] = {}
    for member in members:
        if member is type(None):
            continue
        tag = _LIST_TAG if get_origin(member) is list else _tag_of(member)
        if tag is None or tag in by_tag:
            return None
        by_tag[tag] = member
    if len(by_tag) < 2:
        return None
    tagged = tuple(Annotated[m, Tag(t)] for t, m in by_tag.items())
    union: Any = Annotated[Union[tagged], Discriminator(_tag)]  # noqa: UP007
    return union | None if nullable else union


def _tag_of(member: Any) -> str | None:
    if not _is_model(member):
        return None
    field = member.model_fields.get("type")
    if field is None or not field.is_required():
        return None
    if get_origin(field.annotation) is not Literal:
        return None
    values = get_args(field.annotation)
    if len(values) != 1 or type(values[0]) is not str:
        return None
    return values[0]


def _tag(value: Any) -> str | None:
    """The member a JSON value is for: its ``type`` string, or the list member."""
    if type(value) is dict:
        tag = cast("dict[str, Any]", value).get("type")
        return tag if type(tag) is str else None
    if type(value) is list:
        return _LIST_TAG
    return None

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

__all__ = ["check_form_properties", "check_json", "tagged_model"]

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

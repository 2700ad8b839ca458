"""Structured output from a tool's return annotation, as the official SDK makes it.

A host that reads ``structuredContent`` should get the same from a yieldmcp
tool as from the same function served by ``mcp``'s ``MCPServer`` (2.3, its
``func_metadata``), so :func:`output_shape` follows its rules:

* a pydantic model: its schema, and the model's JSON as ``structuredContent``;
* a ``TypedDict``, a ``dict[str, T]``, a dataclass (or any class with
  annotations, read as a model of its fields): their schema, and the value's
  JSON;
* ``str``, ``int``, ``float``, ``bool``, ``bytes``, ``None`` and every other
  type (``list[T]``, ``tuple[...]``, ``Optional[T]``, unions, ``dict[int, T]``)
  are *wrapped*: the schema of an object with one required ``result`` field,
  and ``{"result": value}``;
* content blocks (``Text``, ``Image``, ``Audio``, ``ResourceLink``,
  ``EmbeddedResource``; bare, in a list or tuple, or in a union) are content:
  no schema, no ``structuredContent``.

Where the SDK gives no structured output — no annotation, ``Any``, a bare
``dict`` or ``list``, a type pydantic cannot describe — yieldmcp keeps its own
rule (:data:`DATA`): data the tool returns goes out as ``structuredContent``
with no ``outputSchema`` (any JSON in 2026-07-28, objects only in 2025-11-25).
A pydantic model's schema is its serialization schema (the SDK uses the
validation one; they differ only for computed fields and custom serializers),
as yieldmcp always did. The text block beside the structured content is
yieldmcp's own (the value's JSON, or the string itself). A non-finite
``default`` (``price: float = inf``) is left out of the schema, which JSON
could not carry with it (``runtime.lowlevel.sendable_schema``).
"""

from __future__ import annotations

import functools
import sys
import types
import typing
from collections.abc import Sequence
from typing import Annotated, Any, Final, final

import attrs
import pydantic
import pydantic_core
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, create_model
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaWarningKind
from typing_extensions import is_typeddict

from runtime.lowlevel import sendable_schema
from runtime.messages import Audio, Image, Text

from ._mcp_wire import JSONObject

__all__ = ["CONTENT", "DATA", "OutputShape", "content_block_types", "output_shape"]


@final
@attrs.frozen
class OutputShape:
    """What a tool's results look like as MCP structured output.

    Attributes:
        schema: the ``outputSchema`` (None: none is advertised).
        wrapped: ``structuredContent`` is ``{"result": value}``.
        content: the tool returns content blocks: no ``structuredContent``.
    """

    schema: JSONObject | None
    wrapped: bool = False
    content: bool = False


DATA: Final = OutputShape(None)
"""No schema; data the tool returns is ``structuredContent`` as it comes."""

CONTENT: Final = OutputShape(None, content=True)
"""Content blocks: no schema and no ``structuredContent``."""

_OUR_BLOCKS: Final[tuple[type, ...]] = (Text, Image, Audio)
_ALL_BLOCKS: list[tuple[type, ...]] = []


def content_block_types() -> tuple[type, ...]:
    """The types a tool returns as content: ``Text``, ``Image`` and ``Audio``,
    and the SDK's ``mcp_types.ResourceLink`` and ``EmbeddedResource`` once
    ``mcp_types`` is loaded.

    A value or an annotation can be one of the SDK's types only if the code
    that made it imported them, so the SDK's models, a quarter of a server's
    start-up, are not imported for this check: a stdio server answers its
    first request before any tool needs them.
    """
    if _ALL_BLOCKS:
        return _ALL_BLOCKS[0]
    sdk = sys.modules.get("mcp_types")
    links, resources = (
        getattr(sdk, "ResourceLink", None),
        getattr(sdk, "EmbeddedResource", None),
    )
    if not (isinstance(links, type) and isinstance(resources, type)):
        return _OUR_BLOCKS  # not loaded, or still loading
    _ALL_BLOCKS.append((*_OUR_BLOCKS, links, resources))
    return _ALL_BLOCKS[0]


_WRAPPED_PRIMITIVES = (str, int, float, bool, bytes, type(None))
_SEQUENCES = (list, tuple, Sequence)


def output_shape(tool_name: str, output: Any) -> OutputShape:
    """The shape of ``tool_name``'s results for its ``output`` annotation (None:
    none). Made once per tool name and annotation."""
    try:
        return _cached_shape(tool_name, output)
    except TypeError:  # an annotation that cannot be hashed: made each time
        return _shape(tool_name, output)


@functools.cache
def _cached_shape(tool_name: str, output: Any) -> OutputShape:
    return _shape(tool_name, output)


def _shape(tool_name: str, output: Any) -> OutputShape:
    if output is None:
        return DATA
    if _returns_content(output):
        return CONTENT
    bare = typing.get_args(output)[0] if _annotated(output) else output
    if isinstance(bare, type) and issubclass(bare, BaseModel):
        schema = bare.model_json_schema(mode="serialization")
        return OutputShape(_inline_root_ref(sendable_schema(schema)))
    described = _described(tool_name, output, bare)
    if described is None:
        return DATA
    model, wrapped = described
    try:
        schema = TypeAdapter(model).json_schema(schema_generator=_Strict)
    except (pydantic.PydanticUserError, TypeError, ValueError, NameError):
        return DATA  # the SDK offers no structured output for it either
    except pydantic_core.SchemaError:
        return DATA
    return OutputShape(_inline_root_ref(sendable_schema(schema)), wrapped=wrapped)


def _described(tool_name: str, output: Any, bare: Any) -> tuple[Any, bool] | None:
    """The type the SDK describes the result with, and whether it wraps it;
    None where it gives no structured output (yieldmcp's own rule applies)."""
    if bare is type(None) or bare in _WRAPPED_PRIMITIVES:
        return _wrapped(tool_name, output), True
    if isinstance(bare, types.GenericAlias):
        args = typing.get_args(bare)
        if typing.get_origin(bare) is dict and len(args) == 2 and args[0] is str:
            return Annotated[bare, Field(title=f"{tool_name}DictOutput")], False
        return _wrapped(tool_name, output), True
    if isinstance(bare, type):
        if is_typeddict(bare):
            return bare, False
        try:
            hints = typing.get_type_hints(bare)
        except (NameError, TypeError):
            return None
        if not hints:
            return None  # a bare dict, list, object: no fields to describe
        return _model_of_class(bare, hints), False
    if bare is Any:
        return None
    return _wrapped(tool_name, output), True  # unions, Optional, Literal, ...


def _wrapped(tool_name: str, annotation: Any) -> type[BaseModel]:
    return create_model(f"{tool_name}Output", result=annotation)


_NO_DEFAULT = object()


def _model_of_class(cls: type[Any], hints: dict[str, Any]) -> type[BaseModel]:
    """A model with ``cls``'s annotated fields (its defaults kept)."""
    fields: dict[str, Any] = {}
    for name, hint in hints.items():
        if name.startswith("_"):
            continue
        default = getattr(cls, name, _NO_DEFAULT)
        fields[name] = hint if default is _NO_DEFAULT else (hint, default)
    config = ConfigDict(from_attributes=True)
    return create_model(cls.__name__, __config__=config, **fields)


def _annotated(annotation: Any) -> bool:
    return typing.get_origin(annotation) is Annotated


def _returns_content(annotation: Any) -> bool:
    """Whether ``annotation`` declares content blocks: bare, as the items of
    a list, tuple or sequence, or as an arm of a union."""
    origin = typing.get_origin(annotation)
    if origin is None:
        return isinstance(annotation, type) and issubclass(
            annotation, content_block_types()
        )
    if origin is Annotated:
        return _returns_content(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType) or origin in _SEQUENCES:
        return any(_returns_content(arg) for arg in typing.get_args(annotation))
    return False


class _Strict(GenerateJsonSchema):
    """A schema generator that refuses what it would only warn about (a type
    with no JSON form), as the SDK's does."""

    def emit_warning(self, kind: JsonSchemaWarningKind, detail: str) -> None:
        raise ValueError(f"JSON schema warning: {kind} - {detail}")


_DEFS = "#/$defs/"


def _inline_root_ref(schema: dict[str, Any]) -> JSONObject:
    """A schema whose root is a bare ``$ref`` into ``$defs`` (a self-referential
    model) with the definition copied onto the root: ``outputSchema`` needs an
    object there. ``$defs`` stays, for the references inside."""
    ref = schema.get("$ref")
    if not isinstance(ref, str) or not ref.startswith(_DEFS):
        return schema
    definition: dict[str, Any] = schema["$defs"][ref.removeprefix(_DEFS)]
    siblings = {key: value for key, value in schema.items() if key != "$ref"}
    return {**definition, **siblings}

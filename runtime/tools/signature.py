"""Reading a tool function's signature: its context, and its arguments model.

A tool function takes its arguments one of two ways:

* **plain typed parameters**, as in the official SDK and fastmcp:
  ``def add(a: int, b: Annotated[int, Field(ge=0)] = 1, *, ctx: Context)``.
  Each parameter becomes a field of a pydantic model made here (named
  ``{fn}Arguments``, like the official SDK's, so the input schemas agree):
  its annotation, ``Annotated[..., Field(...)]`` metadata and default flow
  into the input schema; an unannotated parameter accepts any JSON value;
* **one pydantic model**: ``def add(params: AddParams, ctx: Context)`` (or
  ``params=AddParams``). A sole parameter annotated with a model is this form,
  whatever its name, with or without ``ctx``.

The context is the parameter annotated with :class:`~runtime.context.Context`
(``Context | None`` too), wherever it stands; failing that, a parameter
named ``ctx`` with no annotation. A function may leave it out.

This module only reads signatures and adapts the call: :func:`arguments_of`
returns the params model and a body ``(params, ctx) -> ...`` that calls the
function with its parameters. ``runtime.tools`` makes the tool.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable, Mapping
from typing import Annotated, Any, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, create_model

from ..context import Context
from ..errors import InvalidTool

__all__ = ["arguments_of", "hints_of"]

# One entry per parameter of the function, in order: how to fill it.
_CTX = object()
_MODEL = object()
Plan = list[tuple[str, object, bool]]  # (name, _CTX | _MODEL | field, positional)


class _PlainArguments(BaseModel):
    """The base of a model made from plain parameters: as the official SDK's,
    unknown arguments are ignored and any annotated type is allowed."""

    model_config = ConfigDict(arbitrary_types_allowed=True)


def hints_of(fn: Callable[..., Any], *, extras: bool = True) -> dict[str, Any]:
    """``fn``'s annotations, resolved, with ``Annotated`` metadata kept unless
    ``extras`` is false."""
    try:
        return get_type_hints(fn, include_extras=extras)
    except Exception as exc:
        raise InvalidTool(
            f"cannot read the annotations of {fn.__qualname__}: {exc}. Models named "
            f"in annotations must be importable from the function's module (not "
            f"local to another function), or passed explicitly (params=, output=)"
        ) from None


def arguments_of(
    fn: Callable[..., Any], explicit: type[BaseModel] | None, default: type[BaseModel]
) -> tuple[type[BaseModel], Callable[[Any, Context], Any]]:
    """The params model of tool function ``fn`` and a body calling it.

    ``explicit`` is ``@tool(params=...)``; ``default`` is the model of a
    function that takes no arguments.

    Raises:
        InvalidTool: the signature cannot be a tool's (the message says why).
    """
    parameters = list(inspect.signature(fn).parameters.values())
    _no_variadics(fn, parameters)
    hints = hints_of(fn)
    ctx = _context_parameter(fn, parameters, hints)
    rest = [p for p in parameters if p.name != ctx]
    if explicit is not None or _is_model_form(rest, hints):
        return _model_form(fn, parameters, ctx, rest, explicit, hints)
    if not rest:
        if parameters and _all_positional(parameters):
            return default, _ctx_only(fn)
        return default, _call(fn, [(p.name, _CTX, _positional(p)) for p in parameters])
    return _plain_form(fn, parameters, ctx, hints)


def _no_variadics(fn: Callable[..., Any], parameters: list[inspect.Parameter]) -> None:
    for p in parameters:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise InvalidTool(
                f"{fn.__qualname__}: a tool's parameters are its arguments, one "
                f"by one; *{p.name} / **{p.name} cannot be described to a model"
            )


def _is_context(hint: Any) -> bool:
    if isinstance(hint, type):
        return issubclass(hint, Context)
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return any(_is_context(a) for a in typing.get_args(hint))
    if typing.get_origin(hint) is typing.Annotated:
        return _is_context(typing.get_args(hint)[0])
    return False


def _context_parameter(
    fn: Callable[..., Any],
    parameters: list[inspect.Parameter],
    hints: Mapping[str, Any],
) -> str | None:
    annotated = [p.name for p in parameters if _is_context(hints.get(p.name))]
    if len(annotated) > 1:
        raise InvalidTool(
            f"{fn.__qualname__}: only one parameter may be the Context; "
            f"{annotated} are all annotated with it"
        )
    if annotated:
        return annotated[0]
    unannotated_ctx = [
        p.name for p in parameters if p.name == "ctx" and p.name not in hints
    ]
    return unannotated_ctx[0] if unannotated_ctx else None


def _is_model(hint: Any) -> bool:
    return isinstance(hint, type) and issubclass(hint, BaseModel)


def _is_model_form(rest: list[inspect.Parameter], hints: Mapping[str, Any]) -> bool:
    return len(rest) == 1 and _is_model(hints.get(rest[0].name))


def _positional(p: inspect.Parameter) -> bool:
    return p.kind is p.POSITIONAL_ONLY


def _all_positional(parameters: list[inspect.Parameter]) -> bool:
    return all(p.kind is not p.KEYWORD_ONLY for p in parameters)


def _ctx_only(fn: Callable[[Context], Any]) -> Callable[[Any, Context], Any]:
    def body(params: Any, ctx: Context) -> Any:
        return fn(ctx)

    return body


def _model_form(
    fn: Callable[..., Any],
    parameters: list[inspect.Parameter],
    ctx: str | None,
    rest: list[inspect.Parameter],
    explicit: type[BaseModel] | None,
    hints: Mapping[str, Any],
) -> tuple[type[BaseModel], Callable[[Any, Context], Any]]:
    if len(rest) > 1:
        raise InvalidTool(
            f"{fn.__qualname__}: with params= the function takes the model and the "
            f"context, e.g. (params, ctx); it takes {[p.name for p in parameters]}"
        )
    model = explicit or hints[rest[0].name]
    if not _is_model(model):
        raise InvalidTool(
            f"{fn.__qualname__}: params= must be a pydantic model; got {model!r}"
        )
    names = [p.name for p in parameters]
    if rest and names == [rest[0].name, ctx] and _all_positional(parameters):
        return model, fn  # (params, ctx) as is: no adapter on every call
    plan: Plan = [
        (p.name, _CTX if p.name == ctx else _MODEL, _positional(p)) for p in parameters
    ]
    return model, _call(fn, plan)


def _plain_form(
    fn: Callable[..., Any],
    parameters: list[inspect.Parameter],
    ctx: str | None,
    hints: Mapping[str, Any],
) -> tuple[type[BaseModel], Callable[[Any, Context], Any]]:
    fields: dict[str, Any] = {}
    plan: Plan = []
    for p in parameters:
        if p.name == ctx:
            plan.append((p.name, _CTX, _positional(p)))
            continue
        if p.name.startswith("_"):
            raise InvalidTool(
                f"{fn.__qualname__}: parameter {p.name!r} starts with '_', which "
                f"no argument name may (pydantic keeps such names private)"
            )
        field, alias = p.name, None
        # A name BaseModel already uses (``json``, ``copy``...) stays the
        # argument's name through an alias, as in the official SDK.
        if callable(getattr(BaseModel, p.name, None)):
            field, alias = f"field_{p.name}", p.name
        hint = Annotated[hints.get(p.name, Any), Field(alias=alias)]
        fields[field] = hint if p.default is p.empty else (hint, p.default)
        plan.append((p.name, field, _positional(p)))
    model = _plain_model(fn, fields)
    return model, _call(fn, plan)


def _plain_model(fn: Callable[..., Any], fields: dict[str, Any]) -> type[BaseModel]:
    try:
        model = create_model(
            f"{fn.__name__}Arguments", __base__=_PlainArguments, **fields
        )
        model.model_json_schema()  # a type with no JSON Schema fails here, now
    except Exception as exc:
        raise InvalidTool(
            f"{fn.__qualname__}: its parameters cannot make an input schema: {exc}"
        ) from None
    return model


def _call(fn: Callable[..., Any], plan: Plan) -> Callable[[Any, Context], Any]:
    def body(params: Any, ctx: Context) -> Any:
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for name, source, positional in plan:
            if source is _CTX:
                value = ctx
            elif source is _MODEL:
                value = params
            else:
                value = getattr(params, typing.cast(str, source))
            if positional:
                args.append(value)
            else:
                kwargs[name] = value
        return fn(*args, **kwargs)

    return body

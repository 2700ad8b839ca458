"""Defining tools: the ``@tool`` decorator and the ``handoff`` builder.

A tool is a generator function whose parameters are its arguments, typed:
``def add(a: int, b: int, ctx: Context)`` (``Annotated[..., Field(...)]`` and
defaults flow into the ``inputSchema``; ``ctx`` is found by its annotation,
wherever it stands). Or it takes one pydantic model, ``fn(params, ctx)``, whose
JSON Schema is the ``inputSchema`` (``runtime.tools.signature`` reads both forms).
A plain function that returns without yielding is a tool too. The return
annotation ``Op[R]`` (or ``-> R``, or ``output=R``) is the result's type: the
result is checked against it, and a server derives the tool's
``outputSchema`` and ``structuredContent`` from it (as the official SDK does:
``{"result": …}`` for ``int``, ``list[T]`` and the like). ``input_schema=`` advertises a
hand-written JSON Schema verbatim instead of the model's (for what pydantic
cannot express, such as ``$anchor`` or ``if``/``then``/``else``); arguments are
then checked against it with ``jsonschema`` before the params model sees them.

The *handoff* form splits a tool in three: ``before(params) -> H`` runs once and
its result is journaled (so a replayed call sees the same value), the generator
``client(handoff, ctx)`` does the interactive part, and ``after(handoff, result)``
formats the final value.

Everything checkable is checked here, when the tool is defined: the params
model, every ``elicits`` model (flat MCP form schemas only), the name, and that
JSON can carry what ``tools/list`` says of the tool (no lone surrogate in its
text, no non-finite number in its schemas but a ``default``, which is left
out: :mod:`runtime.wire.sendable`). A definition error raises
:class:`~runtime.errors.InvalidTool` naming the problem.

What a definition makes, the :class:`Tool` value and its :class:`Program`, lives
in ``runtime.tools.value`` and is re-exported here; this module does not parse a
call's arguments or check its result (the tool does, per call).
"""

from __future__ import annotations

import collections.abc
import copy
import inspect
import json
import re
import typing
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast, overload

from pydantic import BaseModel, ConfigDict, PydanticUserError, TypeAdapter

from ..context import Context, ElicitKey
from ..effects.base import Op
from ..elicitation.schema import elicitation_schema
from ..errors import InvalidTool
from ..messages import boolean_property
from ..principal import scope_set
from ..steps.tools import as_program, before_program, code_version
from ..wire.schemas import offline_validator
from ..wire.sendable import Unsendable, sendable_schema, unsendable
from .signature import arguments_of, hints_of
from .value import Program as Program
from .value import TaskFrom, TaskSupport
from .value import Tool as Tool

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

__all__ = ["Program", "Tool", "handoff", "tool"]

P = TypeVar("P", bound=BaseModel)
R = TypeVar("R")
H = TypeVar("H")
CR = TypeVar("CR")

_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")

Elicits = Mapping[str, type[BaseModel]] | Iterable[ElicitKey[Any]]


class _NoParams(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _AnyParams(BaseModel):
    """The arguments of a tool whose explicit ``input_schema`` checks them."""

    model_config = ConfigDict(extra="allow")


# --- @tool --------------------------------------------------------------------------


@overload
def tool(fn: Callable[[P, Context], Op[R]], /) -> Tool[P, R]: ...


@overload
def tool(fn: Callable[[Context], Op[R]], /) -> Tool[BaseModel, R]: ...


@overload
def tool(fn: Callable[[P, Context], R], /) -> Tool[P, R]: ...


@overload
def tool(fn: Callable[[Context], R], /) -> Tool[BaseModel, R]: ...


@overload
def tool(fn: Callable[..., Op[R]], /) -> Tool[BaseModel, R]: ...


@overload
def tool(fn: Callable[..., R], /) -> Tool[BaseModel, R]: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    params: type[BaseModel] | None = None,
    elicits: Elicits | None = None,
    output: Any = None,
    title: str | None = None,
    annotations: Mapping[str, Any] | None = None,
    input_schema: Mapping[str, Any] | None = None,
    scopes: Iterable[str] = (),
    version: str | None = None,
    continues: Iterable[str] = (),
    task: TaskSupport = "forbidden",
    task_from: TaskFrom = "call",
) -> Callable[[Callable[..., Any]], Tool[Any, Any]]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    params: type[BaseModel] | None = None,
    elicits: Elicits | None = None,
    output: Any = None,
    title: str | None = None,
    annotations: Mapping[str, Any] | None = None,
    input_schema: Mapping[str, Any] | None = None,
    scopes: Iterable[str] = (),
    version: str | None = None,
    continues: Iterable[str] = (),
    task: TaskSupport = "forbidden",
    task_from: TaskFrom = "call",
) -> Any:
    """Define a tool from ``fn`` (a generator function, or a plain one).

    ``fn`` takes its arguments as typed parameters (``def add(a: int, b: int)``),
    or as one pydantic model (``def add(params: AddParams, ctx: Context)``, or
    ``params=AddParams``); the parameter annotated with ``Context`` (else one
    named ``ctx``) receives the context, and may be left out. A function taking
    only ``ctx`` has no arguments. ``output`` defaults to ``R`` from a return
    annotation ``Op[R]``. ``description`` defaults to the docstring.

    ``input_schema`` (a JSON Schema 2020-12 object schema) is advertised as the
    tool's ``inputSchema`` exactly as given; arguments that fail it (or then
    ``params``) are answered as an ``isError`` result naming each field
    (SEP-1303). Without a ``params`` model, the tool receives a model carrying
    every argument as an extra field (``params.model_extra``).

    ``scopes`` are the OAuth scopes a caller's access token must grant to call
    the tool, on a server that checks tokens (``Server(auth=...)``): without
    them the call is refused with HTTP 403 ``insufficient_scope``.

    An ``async def`` tool runs as one step (``ctx.step``): it may await any
    I/O but yields no effects. ``version`` names the code's version, which
    a call or task recorded under it carries (default: a hash of ``fn``'s
    source); one recorded under another version is refused, unless that
    version is in ``continues``: ``@tool(version="2", continues=("1",))``
    says this code goes on with calls and tasks recorded under "1" (use
    ``ctx.patched`` where the code changed; ``docs/durable.md``).

    ``task="optional"`` lets a 2026-07-28 client that supports the tasks
    extension get a task for a call (``resultType: "task"``, then
    ``tasks/get``); ``"required"`` refuses clients that do not (-32021).
    ``task_from="step"`` asks the questions before the tool's first step in
    the request itself, and makes the task there.

    Raises:
        InvalidTool: if the definition is malformed (see the message).
    """

    def define(fn: Callable[..., Any]) -> Tool[Any, Any]:
        code = code_version(fn, version)
        tool_name = fn.__name__ if name is None else name
        older = _continues(tool_name, version, continues)
        fn = as_program(fn)  # an async def: one step
        default = _NoParams if input_schema is None else _AnyParams
        params_model, body = arguments_of(fn, params, default)
        return _make(
            name=fn.__name__ if name is None else name,
            description=description if description is not None else _doc(fn),
            params=params_model,
            output=output if output is not None else _returned_type(fn),
            elicits=elicits,
            body=body,
            title=title,
            annotations=annotations,
            input_schema=input_schema,
            scopes=scopes,
            version=code,
            continues=older,
            task=_task_support(fn.__name__ if name is None else name, task),
            task_from=task_from,
        )

    return define if fn is None else define(fn)


def _make(
    *,
    name: str,
    description: str | None,
    params: type[BaseModel],
    output: Any,
    elicits: Elicits | None,
    body: Callable[..., Any],
    title: str | None,
    annotations: Mapping[str, Any] | None,
    input_schema: Mapping[str, Any] | None = None,
    scopes: Iterable[str] = (),
    version: str | None = None,
    continues: frozenset[str] = frozenset(),
    task: TaskSupport = "forbidden",
    task_from: TaskFrom = "call",
) -> Tool[Any, Any]:
    if not _NAME.match(name):
        raise InvalidTool(
            f"tool name {name!r} must be 1-128 characters of [A-Za-z0-9_.-]"
        )
    made = Tool(
        name=name,
        description=description,
        params=params,
        output=output,
        elicits=_elicits(name, elicits),
        body=body,
        output_adapter=_adapter(name, output),
        title=title,
        annotations=annotations,
        schema_validator=_schema_validator(name, input_schema),
        scopes=_scopes(name, scopes),
        version=version,
        continues=continues,
        task=task,
        task_from=task_from,
    )
    _refuse_unsendable(made, input_schema)
    return made


def _refuse_unsendable(
    made: Tool[Any, Any], explicit: Mapping[str, Any] | None
) -> None:
    """Refuse a tool whose definition JSON cannot carry: ``tools/list`` holds
    every tool's, so one lone surrogate or ``Infinity`` in it would lose the
    whole list (a strict host's parser refuses it, or the write fails).

    A non-finite ``default`` of a generated schema is not refused: the schema
    leaves it out (:attr:`Tool.input_schema`), and the default applies all
    the same. An explicit ``input_schema`` is advertised verbatim, so nothing
    in it is left out: it is refused.
    """
    name = made.name
    texts = {
        "description": made.description,
        "title": made.title,
        "annotations": made.annotations,
        "elicits": list(made.elicits),  # the keys, in the definition's _meta
    }
    found = unsendable({key: text for key, text in texts.items() if text is not None})
    if found is not None:
        raise InvalidTool(f"tool {name!r}: {found.describe()}")
    # The params model's schema, not yet as JSON (text JSON cannot carry
    # would fail the conversion): made.input_schema once it passes.
    arguments = (
        explicit
        if explicit is not None
        else sendable_schema(made.params.model_json_schema())
    )
    found = unsendable(arguments)
    if found is not None:
        raise InvalidTool(f"tool {name!r}, {_in_arguments(found, arguments)}")
    found = unsendable(_output_schema(made.output))
    if found is not None:
        raise InvalidTool(f"tool {name!r}, output schema: {found.describe()}")


def _in_arguments(found: Unsendable, schema: Mapping[str, Any]) -> str:
    """Where ``found`` is in the input ``schema``: the parameter it is in, or
    whose type it is in (a definition in ``$defs`` that it refers to)."""
    path = found.path
    if len(path) > 2 and path[0] == "properties":
        return f"parameter {path[1]!r}: {found.describe(skip=2)}"
    if len(path) > 2 and path[0] == "$defs":
        ref = f'"#/$defs/{path[1]}"'
        properties: Mapping[str, Any] = schema.get("properties", {})
        for parameter, prop in properties.items():
            if ref in json.dumps(prop, default=repr):
                return f"parameter {parameter!r}: {found.describe()}"
    return f"input schema: {found.describe()}"


def _output_schema(output: Any) -> dict[str, Any] | None:
    """The JSON Schema the ``outputSchema`` is made of (``encoders.mcp`` wraps
    or copies it), without its non-finite defaults; None when pydantic has none
    (then no ``outputSchema`` is advertised either)."""
    if output is None:
        return None
    try:
        with warnings.catch_warnings():  # a type with no JSON Schema: not ours to say
            warnings.simplefilter("ignore")
            schema = TypeAdapter(output).json_schema(mode="serialization")
    except (PydanticUserError, TypeError, ValueError, NameError):
        return None  # no JSON Schema for it (as the output type's own check)
    return sendable_schema(schema)


def _task_support(name: str, task: str) -> TaskSupport:
    if task not in ("forbidden", "optional", "required"):
        raise InvalidTool(
            f"tool {name!r}: task must be 'forbidden', 'optional' or 'required', "
            f"got {task!r}"
        )
    return task


def _continues(
    name: str, version: str | None, continues: Iterable[str]
) -> frozenset[str]:
    """The older versions a tool's code goes on with, checked."""
    if isinstance(continues, str):
        raise InvalidTool(
            f"tool {name!r}: continues must be a tuple of version strings, "
            f"got {continues!r} (write continues=({continues!r},))"
        )
    if not isinstance(continues, Iterable):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise InvalidTool(
            f"tool {name!r}: continues must be a tuple of version strings, "
            f"got {continues!r}"
        )
    older = tuple(continues)
    if not older:
        return frozenset()
    if version is None:
        raise InvalidTool(
            f"tool {name!r}: continues needs an explicit version "
            f'(@tool(version="2", continues=("1",))): the default version '
            f"is a hash of the source, which every edit changes"
        )
    for older_version in older:
        if not (isinstance(older_version, str) and older_version):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidTool(
                f"tool {name!r}: continues holds version strings, got {older_version!r}"
            )
        if older_version == version:
            raise InvalidTool(
                f"tool {name!r}: continues names {version!r}, the tool's own "
                f"version; list only the older versions it goes on with"
            )
    return frozenset(older)


def _scopes(name: str, scopes: Iterable[str]) -> frozenset[str]:
    try:
        return scope_set(scopes)
    except ValueError as exc:
        raise InvalidTool(f"tool {name!r}: {exc}") from None


def _schema_validator(name: str, schema: Mapping[str, Any] | None) -> Validator | None:
    if schema is None:
        return None
    if schema.get("type") != "object":
        raise InvalidTool(f"tool {name!r}: input_schema must have type 'object'")
    import jsonschema  # only for a tool with an explicit schema (see offline_validator)

    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise InvalidTool(
            f"tool {name!r}: input_schema is invalid: {exc.message}"
        ) from None
    problem = boolean_property(schema)
    if problem is not None:
        raise InvalidTool(f"tool {name!r}: {problem}")
    return offline_validator(copy.deepcopy(dict(schema)))


def _elicits(tool_name: str, elicits: Elicits | None) -> dict[str, type[BaseModel]]:
    if elicits is None:
        return {}
    if isinstance(elicits, Mapping):
        pairs = list(cast("Mapping[str, type[BaseModel]]", elicits).items())
    elif isinstance(elicits, str | bytes):
        raise InvalidTool(_ELICITS_FORM.format(tool_name, elicits))
    else:
        pairs = [_elicit_key(tool_name, k) for k in elicits]
    out: dict[str, type[BaseModel]] = {}
    for key, model in pairs:
        if not isinstance(key, str) or not key:
            raise InvalidTool(f"tool {tool_name!r}: elicits keys must be non-empty str")
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise InvalidTool(
                f"tool {tool_name!r}, elicits[{key!r}]: the form must be a pydantic "
                f"model class, got {model!r}"
            )
        try:
            elicitation_schema(model)
        except InvalidTool as exc:
            raise InvalidTool(f"tool {tool_name!r}, elicits[{key!r}]: {exc}") from None
        out[key] = model
    return out


_ELICITS_FORM = (
    "tool {!r}: elicits takes ElicitKey values (elicits=[ElicitKey('name', "
    "Model)]) or a mapping (elicits={{'name': Model}}), not {!r}: each key "
    "needs the model of its form"
)


def _elicit_key(tool_name: str, key: object) -> tuple[str, type[BaseModel]]:
    if not isinstance(key, ElicitKey):
        raise InvalidTool(_ELICITS_FORM.format(tool_name, key))
    known = cast("ElicitKey[Any]", key)
    return known.name, known.model


def _adapter(name: str, output: Any) -> TypeAdapter[Any] | None:
    if output is None:
        return None
    try:
        return TypeAdapter(output)
    except Exception as exc:
        raise InvalidTool(f"tool {name!r}: output type {output!r}: {exc}") from None


def _doc(fn: Callable[..., Any]) -> str | None:
    doc = inspect.getdoc(fn)
    return doc or None


def _hints(fn: Callable[..., Any]) -> dict[str, Any]:
    return hints_of(fn, extras=False)


def _returned_type(fn: Callable[..., Any]) -> Any:
    """``R`` from ``Op[R]`` / ``Generator[Y, S, R]``, or a plain return type;
    None when there is none (or it is ``Any`` or a type variable)."""
    hint = _hints(fn).get("return")
    if hint is None:
        return None
    origin = typing.get_origin(hint)
    if origin in (collections.abc.Generator, typing.Generator):
        args = typing.get_args(hint)
        hint = args[2] if len(args) == 3 else None
    if hint in (Any, None) or isinstance(hint, TypeVar):
        return None
    return hint  # NoneType too: a tool declared to return nothing


def _before_params(
    before: Callable[..., Any], hints: Mapping[str, Any]
) -> type[BaseModel]:
    names = list(inspect.signature(before).parameters)
    model = hints.get(names[0]) if len(names) == 1 else None
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise InvalidTool(
            f"handoff: before must take one parameter annotated with a pydantic "
            f"model, e.g. `def before(params: PlayParams) -> Side`; "
            f"{before.__qualname__} takes {names}"
        )
    return model


# --- handoff ------------------------------------------------------------------------


def handoff(
    *,
    before: Callable[[P], H],
    client: Callable[[H, Context], Op[CR]],
    after: Callable[[H, CR], R],
    name: str | None = None,
    description: str | None = None,
    elicits: Elicits | None = None,
    output: Any = None,
    title: str | None = None,
    annotations: Mapping[str, Any] | None = None,
) -> Tool[P, R]:
    """Define a tool in three phases: ``before`` → ``client`` → ``after``.

    ``before(params)`` runs once, on the server, as a step: its result is
    journaled through its return annotation, which it must have.
    ``client(handoff, ctx)`` is the effect generator. ``after(handoff,
    client_result)`` runs once, when the client part returns, and produces the
    tool's result. ``name`` defaults to the name of ``client``, ``params`` to
    the annotation of ``before``'s parameter.
    """
    hints = _hints(before)
    params_model = _before_params(before, hints)
    tool_name = client.__name__ if name is None else name
    run_before = before_program(tool_name, before, hints)

    def body(params: Any, ctx: Context) -> Op[R]:
        value = yield from run_before(params)
        result = yield from client(value, ctx)
        return after(value, result)

    return _make(
        name=tool_name,
        description=description if description is not None else _doc(client),
        params=params_model,
        output=output if output is not None else _returned_type(after),
        elicits=elicits,
        body=body,
        title=title,
        annotations=annotations,
        version=code_version(client),
    )

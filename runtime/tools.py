"""Defining tools: the ``@tool`` decorator and the ``handoff`` builder.

A tool is a generator function ``fn(params, ctx)`` whose ``params`` is a pydantic
model (its JSON Schema becomes the tool's ``inputSchema``). A plain function that
returns without yielding is a tool too. A return annotation ``Op[Model]`` (or
``output=Model``) makes the result structured (``outputSchema`` +
``structuredContent``). ``input_schema=`` advertises a hand-written JSON Schema
verbatim instead of the model's (for what pydantic cannot express, such as
``$anchor`` or ``if``/``then``/``else``); arguments are then checked against it
with ``jsonschema`` before the params model sees them.

The *handoff* form splits a tool in three: ``before(params) -> H`` runs once and
its result is journaled (so a replayed call sees the same value), the generator
``client(handoff, ctx)`` does the interactive part, and ``after(handoff, result)``
formats the final value.

Everything checkable is checked here, when the tool is defined: the params
model, every ``elicits`` model (flat MCP form schemas only), the name. A
definition error raises :class:`~runtime.errors.InvalidTool` naming the problem.
"""

from __future__ import annotations

import collections.abc
import copy
import inspect
import re
import types
import typing
from collections.abc import Callable, Generator, Iterable, Mapping
from typing import Any, Generic, TypeVar, cast, final, get_type_hints, overload

import attrs
import jsonschema
import pydantic_core
from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from ._effect_base import AtOnce, Op
from ._elicit_schema import elicitation_schema
from ._local_effects import RunBefore
from .context import Context, ElicitKey
from .errors import InvalidTool, RequestError

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


_INVALID_PARAMS = -32602


@final
@attrs.frozen(kw_only=True, eq=False)
class Tool(Generic[P, R]):
    """A defined tool. Run it with ``runtime.run`` or serve it with ``bridge``.

    Attributes:
        name: the MCP tool name.
        description: shown to the model choosing tools.
        params: the pydantic model of the arguments.
        output: the type of the result (a pydantic model makes it structured).
        elicits: the declared elicitation forms, by key.
    """

    name: str
    description: str | None
    params: type[P]
    output: Any
    elicits: Mapping[str, type[BaseModel]]
    title: str | None = None
    annotations: Mapping[str, Any] | None = None
    _body: Callable[[P, Context], Op[R]] = attrs.field(alias="body", repr=False)
    _output_adapter: TypeAdapter[Any] | None = attrs.field(
        alias="output_adapter", repr=False
    )
    _schema_validator: Any = attrs.field(
        default=None, alias="schema_validator", repr=False
    )
    _context: Context = attrs.field(init=False, repr=False)
    # The params model's JSON Schema, as JSON: made once, copied per use.
    _params_schema: bytes | None = attrs.field(init=False, default=None, repr=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_context", Context(self.elicits))

    @property
    def input_schema(self) -> dict[str, Any]:
        """The JSON Schema of the arguments (``inputSchema``): the explicit
        ``input_schema`` verbatim, else the params model's; a fresh copy each
        time (the model's is generated once: ``tools/list`` asks every time)."""
        if self._schema_validator is not None:
            schema: dict[str, Any] = self._schema_validator.schema
            return copy.deepcopy(schema)
        if self._params_schema is None:
            generated = pydantic_core.to_json(self.params.model_json_schema())
            object.__setattr__(self, "_params_schema", generated)
        assert self._params_schema is not None
        return pydantic_core.from_json(self._params_schema)

    @property
    def output_schema(self) -> dict[str, Any] | None:
        """The JSON Schema of a structured result (``outputSchema``), if any."""
        if isinstance(self.output, type) and issubclass(self.output, BaseModel):
            return self.output.model_json_schema()
        return None

    def parse_arguments(self, arguments: Mapping[str, Any] | P | None) -> P:
        """Validate ``arguments`` into the params model (raises ValidationError)."""
        if isinstance(arguments, self.params):
            return arguments
        data = dict(arguments or {})
        if self._schema_validator is not None:
            _check_schema_arguments(self._schema_validator, data)
        # model_validate's own body, without its Python-level frame
        return self.params.__pydantic_validator__.validate_python(data)

    def context(self) -> Context:
        """A context that knows this tool's elicitation forms.

        A context holds no per-call state, so every call shares this tool's.
        """
        return self._context

    def program(self, params: P) -> Program[P, R]:
        """This tool's program bound to ``params``: called with a context, it
        makes the effect generator; :meth:`Program.finish` checks its result."""
        return Program(self, params)

    def _start(self, params: P, ctx: Context) -> Op[R]:
        produced: Any = self._body(params, ctx)
        # type() first: isinstance against the Generator ABC is the slow path,
        # and a plain function's usual results are never generators.
        if type(produced) is types.GeneratorType or (
            type(produced) not in _PLAIN_RESULTS and isinstance(produced, Generator)
        ):
            # The body's generator is the program: no wrapper generator to step
            # through, and to keep alive while the call is parked.
            return cast("Op[R]", produced)
        return AtOnce(produced)

    def _finish(self, produced: Any) -> R:
        if self._output_adapter is None or (
            self.output is str and type(produced) is str
        ):
            return cast(R, produced)  # nothing to check, or what str checks
        try:
            # The adapter's validator itself: TypeAdapter.validate_python is a
            # Python-level wrapper that passes seven keyword arguments on.
            return cast(R, self._output_adapter.validator.validate_python(produced))
        except ValidationError as exc:
            raise TypeError(
                f"tool {self.name!r} returned a value that is not a valid "
                f"{self.output!r}: {exc.error_count()} error(s): "
                f"{exc.errors(include_url=False)[0]['msg']}"
            ) from None


@final
class Program(Generic[P, R]):
    """A tool's program bound to its arguments (see :meth:`Tool.program`).

    Calling it with a context makes the tool's effect generator. The value the
    generator returns is the tool's result once :meth:`finish` accepts it (the
    stepper calls it when the program returns): the ``output`` type is checked
    outside the generator, so no wrapper generator stays on the stack of a
    parked call.
    """

    __slots__ = ("params", "tool")

    def __init__(self, tool: Tool[P, R], params: P) -> None:
        self.tool = tool
        self.params = params

    def __call__(self, ctx: Context) -> Op[R]:
        return self.tool._start(self.params, ctx)  # pyright: ignore[reportPrivateUsage]

    def finish(self, produced: Any) -> R:
        """The tool's result for what its generator returned.

        Raises:
            TypeError: the value is not a valid ``output``.
        """
        return self.tool._finish(produced)  # pyright: ignore[reportPrivateUsage]


_PLAIN_RESULTS: frozenset[type[Any]] = frozenset(
    {str, dict, list, int, float, bool, type(None)}
)


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
) -> Any:
    """Define a tool from ``fn(params, ctx)`` (a generator function, or a plain one).

    ``params`` defaults to the annotation of ``fn``'s first parameter; a function
    taking only ``ctx`` has no arguments. ``output`` defaults to ``R`` from a
    return annotation ``Op[R]``. ``description`` defaults to the docstring.

    ``input_schema`` (a JSON Schema 2020-12 object schema) is advertised as the
    tool's ``inputSchema`` exactly as given; arguments that fail it are refused
    with JSON-RPC error -32602 before ``params`` validates them. Without a
    ``params`` model, the tool receives a model carrying every argument as an
    extra field (``params.model_extra``).

    Raises:
        InvalidTool: if the definition is malformed (see the message).
    """

    def define(fn: Callable[..., Any]) -> Tool[Any, Any]:
        default = _NoParams if input_schema is None else _AnyParams
        params_model, takes_params = _params_of(fn, params, default)
        body = fn if takes_params else _drop_params(fn)
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
) -> Tool[Any, Any]:
    if not _NAME.match(name):
        raise InvalidTool(
            f"tool name {name!r} must be 1-128 characters of [A-Za-z0-9_.-]"
        )
    return Tool(
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
    )


def _schema_validator(
    name: str, schema: Mapping[str, Any] | None
) -> jsonschema.Draft202012Validator | None:
    if schema is None:
        return None
    if schema.get("type") != "object":
        raise InvalidTool(f"tool {name!r}: input_schema must have type 'object'")
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise InvalidTool(
            f"tool {name!r}: input_schema is invalid: {exc.message}"
        ) from None
    return jsonschema.Draft202012Validator(copy.deepcopy(dict(schema)))


def _check_schema_arguments(validator: Any, arguments: dict[str, Any]) -> None:
    # jsonschema's messages echo values and schema internals; say only where.
    errors: list[Any] = list(validator.iter_errors(arguments))
    where = sorted({str(e.json_path) for e in errors})
    if where:
        raise RequestError(
            _INVALID_PARAMS,
            f"Invalid params: arguments do not match the tool's inputSchema at "
            f"{', '.join(where)}",
        )


def _elicits(tool_name: str, elicits: Elicits | None) -> dict[str, type[BaseModel]]:
    if elicits is None:
        return {}
    if isinstance(elicits, Mapping):
        pairs = list(cast("Mapping[str, type[BaseModel]]", elicits).items())
    else:
        pairs = [(k.name, k.model) for k in elicits]
    out: dict[str, type[BaseModel]] = {}
    for key, model in pairs:
        if not isinstance(key, str) or not key:
            raise InvalidTool(f"tool {tool_name!r}: elicits keys must be non-empty str")
        try:
            elicitation_schema(model)
        except InvalidTool as exc:
            raise InvalidTool(f"tool {tool_name!r}, elicits[{key!r}]: {exc}") from None
        out[key] = model
    return out


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
    try:
        return get_type_hints(fn)
    except Exception as exc:
        raise InvalidTool(
            f"cannot read the annotations of {fn.__qualname__}: {exc}. Models named "
            f"in annotations must be importable from the function's module (not "
            f"local to another function), or passed explicitly (params=, output=)"
        ) from None


def _params_of(
    fn: Callable[..., Any],
    explicit: type[BaseModel] | None,
    default: type[BaseModel] = _NoParams,
) -> tuple[type[BaseModel], bool]:
    positional = [
        p
        for p in inspect.signature(fn).parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    if len(positional) not in (1, 2):
        raise InvalidTool(
            f"{fn.__qualname__} must take (params, ctx) or (ctx); it takes "
            f"{[p.name for p in positional]}"
        )
    takes_params = len(positional) == 2
    if not takes_params:
        return explicit or default, False
    model = explicit or _hints(fn).get(positional[0].name)
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise InvalidTool(
            f"{fn.__qualname__}: annotate the first parameter with a pydantic "
            f"model (or pass params=Model); got {model!r}"
        )
    return model, True


def _drop_params(fn: Callable[[Context], Any]) -> Callable[[Any, Context], Any]:
    def body(params: Any, ctx: Context) -> Any:
        return fn(ctx)

    return body


def _returned_type(fn: Callable[..., Any]) -> Any:
    """``R`` from ``Op[R]`` / ``Generator[Y, S, R]``, or a plain return type."""
    hint = _hints(fn).get("return")
    if hint is None:
        return None
    origin = typing.get_origin(hint)
    if origin in (collections.abc.Generator, typing.Generator):
        args = typing.get_args(hint)
        hint = args[2] if len(args) == 3 else None
    if hint in (Any, type(None), None) or isinstance(hint, TypeVar):
        return None
    return hint


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

    ``before(params)`` runs once, on the server; its result is journaled (annotate
    its return type so it can be recorded faithfully). ``client(handoff, ctx)`` is
    the effect generator. ``after(handoff, client_result)`` runs once, when the
    client part returns, and produces the tool's result. ``name`` defaults to the
    name of ``client``, ``params`` to the annotation of ``before``'s parameter.
    """
    hints = _hints(before)
    params_model = _before_params(before, hints)
    handoff_adapter = TypeAdapter(hints.get("return", Any))
    tool_name = client.__name__ if name is None else name

    def body(params: Any, ctx: Context) -> Op[R]:
        value = yield RunBefore(
            tool=tool_name, before=before, params=params, adapter=handoff_adapter
        )
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
    )

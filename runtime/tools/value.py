"""A defined tool, as a value: what ``@tool`` and ``handoff`` make.

Owns :class:`Tool` (name, description, params and output types, elicitation
forms, the input schema) with what a call needs of it: its arguments
validated (against an explicit ``input_schema`` first, if it has one), its
:class:`Program` bound to them, and the program's result checked against the
tool's output type.

It does not define tools or check definitions (:mod:`runtime.tools`: ``@tool``
and ``handoff``), run them (the stepper and the driver) or spell them for MCP
(``encoders``).
"""

from __future__ import annotations

import copy
import types
from collections.abc import Callable, Generator, Mapping
from typing import Any, Generic, Literal, TypeAlias, TypeVar, cast, final

import attrs
import pydantic_core
from pydantic import BaseModel, TypeAdapter, ValidationError

from ..context import Context
from ..effects.base import AtOnce, Op
from ..errors import InvalidArguments
from ..principal import Principal
from ..wire.sendable import sendable_schema

__all__ = ["Program", "TaskFrom", "TaskSupport", "Tool"]

TaskSupport: TypeAlias = Literal["forbidden", "optional", "required"]
"""Whether a call of the tool may run as a task (the 2026-07-28 tasks
extension): never, when the client supports tasks, or always."""

TaskFrom: TypeAlias = Literal["call", "step"]
"""Where a task-supporting call becomes a task: at once (``"call"``), or at
its first step (``"step"``: the questions before it are asked in the request)."""

P = TypeVar("P", bound=BaseModel)
R = TypeVar("R")


@final
@attrs.frozen(kw_only=True, eq=False)
class Tool(Generic[P, R]):
    """A defined tool. Run it with ``runtime.lowlevel.run`` or serve it with ``bridge``.

    Attributes:
        name: the MCP tool name.
        description: shown to the model choosing tools.
        params: the pydantic model of the arguments.
        output: the type of the result (a pydantic model makes it structured).
        elicits: the declared elicitation forms, by key.
        scopes: the OAuth scopes a caller's token must grant to call it (on
            a server that checks tokens; see ``bridge.server.auth``).
        version: the fingerprint of its code that a call or task recorded
            under it carries (``@tool(version=...)``, by default a hash of
            its source); None checks nothing.
        continues: the older versions whose recorded calls and tasks this
            code goes on with (``@tool(version="2", continues=("1",))``):
            see :meth:`continues_from`.
        task: whether a call may run as a task (:data:`TaskSupport`).
        task_from: where such a call becomes one (:data:`TaskFrom`).
    """

    name: str
    description: str | None
    params: type[P]
    output: Any
    elicits: Mapping[str, type[BaseModel]]
    title: str | None = None
    annotations: Mapping[str, Any] | None = None
    scopes: frozenset[str] = frozenset()
    version: str | None = None
    continues: frozenset[str] = frozenset()
    task: TaskSupport = "forbidden"
    task_from: TaskFrom = "call"
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

    def continues_from(self, recorded: str | None) -> bool:
        """Whether a call or task recorded under version ``recorded`` (None:
        recorded by a tool with no version) may go on under this code: it
        is this tool's version, or one the tool lists in ``continues``."""
        return recorded == self.version or recorded in self.continues

    @property
    def input_schema(self) -> dict[str, Any]:
        """The JSON Schema of the arguments (``inputSchema``): the explicit
        ``input_schema`` verbatim, else the params model's, with no non-finite
        ``default`` (JSON has none; the default applies all the same: see
        :mod:`runtime.wire.sendable`); a fresh copy each time (the model's is
        generated once: ``tools/list`` asks every time)."""
        if self._schema_validator is not None:
            schema: dict[str, Any] = self._schema_validator.schema
            return copy.deepcopy(schema)
        if self._params_schema is None:
            generated = pydantic_core.to_json(
                sendable_schema(self.params.model_json_schema())
            )
            object.__setattr__(self, "_params_schema", generated)
        assert self._params_schema is not None
        return pydantic_core.from_json(self._params_schema)

    @property
    def output_schema(self) -> dict[str, Any] | None:
        """The JSON Schema of a pydantic model result, if the output is one
        (with no non-finite ``default``, as :attr:`input_schema`). What MCP
        advertises as ``outputSchema`` covers other types too (wrapped in
        ``result``, as the official SDK does): see ``encoders.mcp``."""
        if isinstance(self.output, type) and issubclass(self.output, BaseModel):
            return sendable_schema(self.output.model_json_schema())
        return None

    def parse_arguments(self, arguments: Mapping[str, Any] | P | None) -> P:
        """Validate ``arguments`` into the params model.

        Raises:
            ValidationError: the params model refuses them.
            InvalidArguments: they fail an explicit ``input_schema``.
        """
        if isinstance(arguments, self.params):
            return arguments
        data = dict(arguments or {})
        if self._schema_validator is not None:
            _check_schema_arguments(self.name, self._schema_validator, data)
        # model_validate's own body, without its Python-level frame
        return self.params.__pydantic_validator__.validate_python(data)

    def check_arguments(self, arguments: Mapping[str, Any] | None) -> P:
        """:meth:`parse_arguments`, with every failure an :class:`InvalidArguments`
        naming each field and what is wrong with it (what a server sends back)."""
        try:
            return self.parse_arguments(arguments)
        except ValidationError as exc:
            raise InvalidArguments(self.name, _field_problems(exc)) from None

    def context(self, principal: Principal | None = None) -> Context:
        """A context that knows this tool's elicitation forms, for a call made
        by ``principal``. Calls with no principal share this tool's one."""
        if principal is None:
            return self._context
        return self._context.acting_for(principal)

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


def _field_problems(exc: ValidationError) -> tuple[str, ...]:
    # One line per error: as many as the arguments (bounded by the request's
    # size) have wrong. pydantic's messages never echo the input.
    errors = exc.errors(include_url=False, include_input=False)
    return tuple(
        f"{'.'.join(str(p) for p in e['loc']) or '<root>'}: {e['msg']}" for e in errors
    )


def _check_schema_arguments(
    tool: str, validator: Any, arguments: dict[str, Any]
) -> None:
    errors: list[Any] = list(validator.iter_errors(arguments))
    errors.sort(key=lambda e: [str(p) for p in e.absolute_path])
    if errors:
        # jsonschema's messages quote the caller's own values back to it.
        raise InvalidArguments(
            tool,
            tuple(
                f"{'.'.join(str(p) for p in e.absolute_path) or '<root>'}: {e.message}"
                for e in errors
            ),
        )

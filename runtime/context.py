"""The ``Context`` a tool receives: the spelling of every effect.

Each method either *builds* an effect (``sample``, ``elicit``, ``log``, …) or
returns an *op*, a small generator composed of effects (``sample_schema``,
``sample_tools``, ``random``, ``choice``; ``step``). Use them the same way:
``result = yield from ctx.sample(...)``. Each notes what it returns while a
call runs, so one never yielded is reported (:mod:`runtime.effects.made`).

A context belongs to one tool: it knows the tool's declared ``elicits``, so
``ctx.elicit("pick_move", ...)`` can find the model to ask for. It performs no
I/O; the interpreter does. Its only per-call value is ``ctx.principal``, who
the call acts for when the server checks access tokens (plain data).
"""

from __future__ import annotations

import datetime
import functools
import uuid
from collections.abc import Callable, Generator, Mapping, Sequence
from typing import Any, Generic, Literal, TypeVar, final, overload

import attrs
from pydantic import BaseModel

from .effects.base import Effect, Op
from .effects.branch import Branch, Limits
from .effects.local import Clock, RandomBits
from .effects.made import note
from .effects.notices import Log, LogLevel, Progress, ReleaseStream
from .effects.patch import Patched
from .effects.sleep import Sleep
from .elicitation.effects import Elicit, ElicitUrl, ListRoots
from .errors import InvalidEffect
from .messages import Message, ModelPreferences, NamedTool, ToolChoice, ToolSpec
from .principal import Principal
from .results import (
    SampleResult,
    SampleValidationError,
    SchemaResult,
    ToolsResult,
)
from .sampling.effect import Sample
from .sampling.outcome import (
    schema_retry_messages,
    tool_call_problems,
    tools_retry_messages,
)
from .steps.spelling import StepMethods

__all__ = ["Context", "ElicitKey"]

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")
A = TypeVar("A")
B = TypeVar("B")
C = TypeVar("C")
D = TypeVar("D")
E = TypeVar("E")

IncludeContext = Literal["none", "thisServer", "allServers"]
Child = Callable[["Context"], Generator[Any, Any, T]]


@final
@attrs.frozen
class ElicitKey(Generic[M]):
    """A typed elicitation key, declared in a tool's ``elicits=[PICK_MOVE]``.

    ``ctx.elicit(PICK_MOVE, ...)`` then returns ``ElicitResult[Move]``.
    """

    name: str
    model: type[M]


def _messages(
    prompt: str | None, messages: Sequence[Message] | None
) -> tuple[Message, ...]:
    if (prompt is None) == (messages is None):
        raise InvalidEffect("sample: pass exactly one of `prompt` or `messages`")
    if prompt is not None:
        return (Message.user(prompt),)
    assert messages is not None
    return tuple(messages)


@final
class Context(StepMethods):
    """Builds effects for one tool (and steps: :class:`StepMethods`). Tools
    receive it as their ``ctx`` argument."""

    __slots__ = ("_elicits", "_principal")

    def __init__(self, elicits: Mapping[str, type[BaseModel]] | None = None) -> None:
        self._elicits: Mapping[str, type[BaseModel]] = dict(elicits or {})
        self._principal: Principal | None = None

    @property
    def principal(self) -> Principal | None:
        """Who the call acts for (the caller whose access token the server
        accepted), or ``None`` when no token is checked (stdio, in-process)."""
        return self._principal

    def acting_for(self, principal: Principal | None) -> Context:
        """This context (the same forms), for a call made by ``principal``."""
        acting = Context.__new__(Context)
        acting._elicits, acting._principal = self._elicits, principal
        return acting

    # --- sampling --------------------------------------------------------------------

    @overload
    def sample(
        self,
        prompt: str | None = None,
        *,
        schema: type[M],
        messages: Sequence[Message] | None = None,
        system_prompt: str | None = None,
        max_tokens: int = 1024,
        temperature: float | None = None,
        stop_sequences: Sequence[str] = (),
        model_preferences: ModelPreferences | None = None,
        include_context: IncludeContext | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Sample[M]: ...

    @overload
    def sample(
        self,
        prompt: str | None = None,
        *,
        messages: Sequence[Message] | None = None,
        tools: Sequence[ToolSpec] = (),
        tool_choice: ToolChoice | None = None,
        system_prompt: str | None = None,
        max_tokens: int = 1024,
        temperature: float | None = None,
        stop_sequences: Sequence[str] = (),
        model_preferences: ModelPreferences | None = None,
        include_context: IncludeContext | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Sample[None]: ...

    def sample(
        self,
        prompt: str | None = None,
        *,
        messages: Sequence[Message] | None = None,
        schema: type[Any] | None = None,
        tools: Sequence[ToolSpec] = (),
        tool_choice: ToolChoice | None = None,
        system_prompt: str | None = None,
        max_tokens: int = 1024,
        temperature: float | None = None,
        stop_sequences: Sequence[str] = (),
        model_preferences: ModelPreferences | None = None,
        include_context: IncludeContext | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Sample[Any]:
        """Ask the client's model for a message (``sampling/createMessage``).

        Pass ``prompt`` (one user message) or ``messages`` (a conversation of MCP
        content blocks). ``schema=Model`` asks for structured output: the result
        has ``parsed`` or ``parse_error``. ``tools=[...]`` lets the model call
        tools: the result has ``tool_calls``. The two are mutually exclusive.
        """
        return note(
            Sample(
                messages=_messages(prompt, messages),
                schema=schema,
                tools=tuple(tools),
                tool_choice=tool_choice,
                system_prompt=system_prompt,
                max_tokens=max_tokens,
                temperature=temperature,
                stop_sequences=stop_sequences,
                model_preferences=model_preferences,
                include_context=include_context,
                metadata=metadata,
            )
        )

    def sample_schema(
        self,
        prompt: str | None = None,
        *,
        schema: type[M],
        retries: int = 2,
        messages: Sequence[Message] | None = None,
        **options: Any,
    ) -> Op[SchemaResult[M]]:
        """Structured output, guaranteed: retry with a corrective hint until valid.

        Raises:
            SampleValidationError: after ``retries + 1`` invalid answers.
        """
        return note(_sample_schema_op(self, prompt, schema, retries, messages, options))

    def sample_tools(
        self,
        prompt: str | None = None,
        *,
        tools: Sequence[ToolSpec],
        tool_choice: Literal["auto", "required"] | NamedTool = "required",
        retries: int = 2,
        messages: Sequence[Message] | None = None,
        **options: Any,
    ) -> Op[ToolsResult]:
        """Tool calls, guaranteed: at least one call, to an offered tool (the one
        ``tool_choice`` names, if it names one), with valid arguments; otherwise
        retry with a corrective hint.

        Raises:
            SampleValidationError: after ``retries + 1`` unusable answers.
        """
        return note(
            _sample_tools_op(
                self, prompt, tools, tool_choice, retries, messages, options
            )
        )

    # --- elicitation -----------------------------------------------------------------

    @overload
    def elicit(self, key: ElicitKey[M], message: str, **context: Any) -> Elicit[M]: ...

    @overload
    def elicit(self, key: str, message: str, **context: Any) -> Elicit[Any]: ...

    def elicit(
        self, key: ElicitKey[Any] | str, message: str, **context: Any
    ) -> Elicit[Any]:
        """Ask the user to fill in the form declared as ``key`` in ``elicits``.

        Extra keyword arguments travel with the request as ``x-model-context``.
        The result's ``action`` is ``"accept"`` (with validated ``content``),
        ``"decline"`` or ``"cancel"``.
        """
        name = key.name if isinstance(key, ElicitKey) else key
        if not isinstance(name, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidEffect(
                f"elicit: takes an ElicitKey or the name of a form declared in "
                f"@tool(elicits=...), not a {type(key).__name__}: declare the form "
                f"as a pydantic model, KEY = ElicitKey('name', Model), list it in "
                f"@tool(elicits=[KEY]) and ask with ctx.elicit(KEY, message)"
            )
        model = self._elicits.get(name)
        if model is None:
            raise InvalidEffect(
                f"elicit: {name!r} is not declared in this tool's elicits "
                f"(declared: {sorted(self._elicits)}); add it to @tool(elicits=...)"
            )
        if isinstance(key, ElicitKey) and key.model is not model:
            raise InvalidEffect(
                f"elicit: {name!r} is declared with {model.__name__}, not "
                f"{key.model.__name__}"
            )
        if context or type(message) is not str:
            return note(Elicit(key=name, message=message, model=model, context=context))
        return note(_plain_elicit(model, name, message))

    def list_roots(self) -> ListRoots:
        """Ask the client which roots (file:// URIs) it exposes."""
        return note(ListRoots())

    def elicit_url(
        self, message: str, url: str, *, elicitation_id: str | None = None
    ) -> ElicitUrl:
        """Ask the user to complete a flow at ``url`` (URL mode; for sensitive data)."""
        return note(
            ElicitUrl(
                message=message,
                url=url,
                elicitation_id=elicitation_id or uuid.uuid4().hex,
            )
        )

    # --- notices ---------------------------------------------------------------------

    def log(self, level: LogLevel, data: Any, *, logger: str | None = None) -> Log:
        """Send a log message to the client (``notifications/message``)."""
        return note(Log(level=level, data=data, logger=logger))

    def progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> Progress:
        """Report progress (``notifications/progress``); it must increase each time."""
        return note(Progress(progress=progress, total=total, message=message))

    def release_stream(self) -> ReleaseStream:
        """Let the transport close this call's response stream for now; the
        client reconnects and resumes it (HTTP SSE polling; a no-op elsewhere).
        """
        return note(ReleaseStream())

    # --- time and randomness ---------------------------------------------------------

    def now(self) -> Clock:
        """The wall-clock time in seconds, recorded so replays see the same value."""
        return note(Clock())

    def patched(self, name: str) -> Patched:
        """Whether this call takes the code of the change named ``name``:
        ``if (yield from ctx.patched("fee")): ...new... else: ...old...``.

        False while replaying a call that went past this point under the code
        before the change (so it keeps doing what it did); True when the point
        is reached live (every new call, and an old one reaching it for the
        first time). The first answer for ``name`` is recorded in the call's
        journal, and every later ``patched(name)`` of the call gives it. The
        point takes no key: the effects around it keep theirs, so calls
        recorded before the change replay (``docs/durable.md``).

        Raises:
            TypeError: ``name`` is not a non-empty str.
        """
        return note(Patched(name))

    def sleep(
        self,
        seconds: float | datetime.timedelta | None = None,
        *,
        until: datetime.datetime | None = None,
    ) -> Sleep:
        """Wait ``seconds`` (a number or a ``timedelta``), or until ``until``
        (a timezone-aware ``datetime``): ``yield from ctx.sleep(3600)``.

        The deadline is recorded the first time the tool reaches this point,
        so a replay, a restart or another process waits only for what is
        left. A task with a store holds nothing while it sleeps; a
        2026-07-28 request refuses a sleep over the server's
        ``--max-request-sleep`` (run the tool as a task); ``run_scripted``
        does not wait (docs/durable.md, "Timers").
        """
        if isinstance(seconds, datetime.timedelta):
            seconds = seconds.total_seconds()
        if until is None:
            return note(Sleep(seconds=seconds))
        if seconds is not None:
            raise InvalidEffect("sleep: pass exactly one of `seconds` or `until`")
        if not isinstance(until, datetime.datetime):
            raise InvalidEffect(f"sleep: `until` is a datetime, got {until!r}")
        if until.tzinfo is None or until.utcoffset() is None:
            raise InvalidEffect(
                "sleep: `until` must be timezone-aware, e.g. "
                "datetime.now(timezone.utc) + timedelta(hours=1)"
            )
        return note(Sleep(until=until.timestamp()))

    def random(self) -> Op[float]:
        """A float in [0, 1), recorded so replays see the same value."""
        return note(_random_op())

    def choice(self, items: Sequence[T]) -> Op[T]:
        """One of ``items``, chosen at random, recorded so replays agree."""
        return note(_choice_op(items))

    # --- branch ----------------------------------------------------------------------

    @overload
    def branch(
        self, a: Child[A], /, *, limits: Limits | None = None
    ) -> Effect[tuple[A]]: ...

    @overload
    def branch(
        self, a: Child[A], b: Child[B], /, *, limits: Limits | None = None
    ) -> Effect[tuple[A, B]]: ...

    @overload
    def branch(
        self, a: Child[A], b: Child[B], c: Child[C], /, *, limits: Limits | None = None
    ) -> Effect[tuple[A, B, C]]: ...

    @overload
    def branch(
        self,
        a: Child[A],
        b: Child[B],
        c: Child[C],
        d: Child[D],
        /,
        *,
        limits: Limits | None = None,
    ) -> Effect[tuple[A, B, C, D]]: ...

    @overload
    def branch(
        self, *children: Child[T], limits: Limits | None = None
    ) -> Effect[tuple[T, ...]]: ...

    def branch(
        self, *children: Child[Any], limits: Limits | None = None
    ) -> Effect[Any]:
        """Run ``children`` concurrently; results come back in child order.

        Each child is called with this context and must return a generator (a
        generator function, or ``lambda ctx: helper(ctx, ...)``). The first
        failure cancels the siblings and raises an ``ExceptionGroup``.
        """
        return note(Branch(children=children, limits=limits))


# --- ops: what the generator methods above return ------------------------------------
#
# Each method is a plain function that notes the generator it returns (so one
# never started is reported at the tool's line: runtime.effects.made), and the
# generator is one of these; base._SPELLINGS names each for the report.


def _sample_schema_op(
    ctx: Context,
    prompt: str | None,
    schema: type[M],
    retries: int,
    messages: Sequence[Message] | None,
    options: Mapping[str, Any],
) -> Op[SchemaResult[M]]:
    _check_retries(retries)
    conversation = _messages(prompt, messages)
    result: SampleResult[M] | None = None
    for attempt in range(1, retries + 2):
        result = yield from ctx.sample(messages=conversation, schema=schema, **options)
        if result.parsed is not None:
            return SchemaResult(
                parsed=result.parsed,
                text=result.text,
                model=result.model,
                stop_reason=result.stop_reason,
                usage=result.usage,
                exchange=result.exchange,
                attempts=attempt,
            )
        conversation = schema_retry_messages(result)
    assert result is not None
    assert result.parse_error is not None
    raise SampleValidationError(
        "sample_schema", retries + 1, result, result.parse_error.message
    )


def _sample_tools_op(
    ctx: Context,
    prompt: str | None,
    tools: Sequence[ToolSpec],
    tool_choice: Literal["auto", "required"] | NamedTool,
    retries: int,
    messages: Sequence[Message] | None,
    options: Mapping[str, Any],
) -> Op[ToolsResult]:
    _check_retries(retries)
    if not tools:
        raise InvalidEffect("sample_tools needs at least one tool")
    conversation = _messages(prompt, messages)
    result: SampleResult[None] | None = None
    reason = ""
    for attempt in range(1, retries + 2):
        result = yield from ctx.sample(
            messages=conversation, tools=tools, tool_choice=tool_choice, **options
        )
        problems = tool_call_problems(result.tool_calls, tools, tool_choice)
        if result.tool_calls and not problems:
            return ToolsResult(
                tool_calls=result.tool_calls,
                text=result.text,
                model=result.model,
                stop_reason="toolUse",
                usage=result.usage,
                exchange=result.exchange,
                attempts=attempt,
            )
        reason = "; ".join(problems.values()) or "the model called no tool"
        conversation = tools_retry_messages(result, problems, tools)
    assert result is not None
    raise SampleValidationError("sample_tools", retries + 1, result, reason)


def _random_op() -> Op[float]:
    bits = yield from RandomBits(53)
    return bits / (1 << 53)


def _choice_op(items: Sequence[T]) -> Op[T]:
    if not items:
        raise InvalidEffect("choice needs at least one item")
    bits = yield from RandomBits(64)
    return items[bits % len(items)]


def _check_retries(retries: int) -> None:
    if not (isinstance(retries, int) and retries >= 0):
        raise InvalidEffect(f"retries must be a non-negative int, got {retries!r}")


@functools.lru_cache(maxsize=4096)
def _plain_elicit(model: type[BaseModel], key: str, message: str) -> Elicit[Any]:
    """The form ``key`` asking ``message``, with no context.

    Effects are immutable values, so one value serves every time the same
    question is asked: a replay asks each of its questions again, once per
    round, and a recent question is then found instead of made and checked
    anew. (An invalid message raises, and nothing is kept.)
    """
    return Elicit(key=key, message=message, model=model)

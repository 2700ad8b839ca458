"""Results: what a tool receives back at the ``yield`` of an effect.

Expected outcomes are values here, never exceptions: a schema the model failed
is ``SampleResult.parse_error``; a declined elicitation is
``ElicitResult(action="decline")``. Every sample and elicitation also carries an
:class:`Exchange`, the messages to append to a running conversation.

The one exception here, :class:`SampleValidationError`, is what ``sample_schema``
and ``sample_tools`` raise in place of a ``SchemaResult`` or ``ToolsResult`` once
their retries run out; it carries the last :class:`SampleResult`, so it lives
beside it (the rest of the hierarchy is in :mod:`runtime.errors`, which imports
no value type).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar, final

import attrs

from .errors import YieldMCPError
from .messages import Block, Message, ToolCall, Usage
from .replies import ElicitAction

__all__ = [
    "ElicitResult",
    "ElicitUrlResult",
    "Exchange",
    "ParseError",
    "SampleResult",
    "SampleValidationError",
    "SchemaResult",
    "ToolsResult",
]

P = TypeVar("P")
M = TypeVar("M")


@final
@attrs.frozen(kw_only=True)
class ParseError:
    """Why structured output failed: the validator's ``message`` and ``raw_text``."""

    message: str
    raw_text: str


@final
@attrs.frozen(kw_only=True)
class Exchange:
    """One interaction, as messages ready for a conversation history.

    ``messages`` is ``[request, response]`` for text and tool calls, and
    ``[request, tool_use, tool_result]`` for structured output (the result is an
    acknowledgement the runtime writes, so the history stays MCP-valid).
    ``history`` is the whole conversation: what was sent, then the new messages.
    ``parsed`` is the validated structured data of a ``schema=`` sample (as on
    its result), and ``None`` for text, tool calls, elicitations, or output that
    failed the schema.
    """

    messages: tuple[Message, ...]
    history: tuple[Message, ...]
    parsed: Any = None

    @property
    def request(self) -> Message:
        return self.messages[0]

    @property
    def response(self) -> Message:
        return self.messages[1]


def _made(exchange: Exchange | Callable[[], Exchange]) -> Exchange:
    return exchange if isinstance(exchange, Exchange) else exchange()


def _made_once(result: SampleResult[Any] | ElicitResult[Any]) -> Exchange:
    """A result's exchange, made on first use and kept in place of its maker."""
    made = result._exchange  # pyright: ignore[reportPrivateUsage]
    if not isinstance(made, Exchange):
        made = made()
        object.__setattr__(result, "_exchange", made)
    return made


@final
@attrs.frozen(kw_only=True)
class SampleResult(Generic[P]):
    """The result of ``sample``.

    ``tool_calls`` lists the model's calls to offered tools (``stop_reason`` is
    ``"toolUse"`` when there are any). With ``schema=``, exactly one of ``parsed``
    and ``parse_error`` is set.
    """

    text: str
    content: tuple[Block, ...]
    model: str
    stop_reason: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    parsed: P | None = None
    parse_error: ParseError | None = None
    usage: Usage | None = None
    _exchange: Exchange | Callable[[], Exchange] = attrs.field(
        alias="exchange", eq=_made, repr=False
    )

    @property
    def exchange(self) -> Exchange:
        """The request and the response, for a conversation (made on first use)."""
        return _made_once(self)


@final
@attrs.frozen(kw_only=True)
class SchemaResult(Generic[P]):
    """The result of ``sample_schema``: ``parsed`` is always a valid value."""

    parsed: P
    text: str
    model: str
    stop_reason: str | None
    usage: Usage | None
    exchange: Exchange
    attempts: int


@final
@attrs.frozen(kw_only=True)
class ToolsResult:
    """The result of ``sample_tools``: at least one valid call to an offered tool."""

    tool_calls: tuple[ToolCall, ...]
    text: str
    model: str
    stop_reason: str | None
    usage: Usage | None
    exchange: Exchange
    attempts: int


@final
@attrs.frozen(kw_only=True)
class ElicitResult(Generic[M]):
    """The result of ``elicit``: ``action`` and, on accept, validated ``content``.

    ``exchange`` may be given as a function making it: it is made on first use
    (a replayed call rarely looks at the history of every answer).
    """

    action: ElicitAction
    content: M | None
    _exchange: Exchange | Callable[[], Exchange] = attrs.field(
        alias="exchange", eq=_made, repr=False
    )

    @property
    def exchange(self) -> Exchange:
        return _made_once(self)

    @property
    def accepted(self) -> bool:
        return self.action == "accept"


@final
@attrs.frozen(kw_only=True)
class ElicitUrlResult:
    """The result of ``elicit_url``: whether the user agreed to open the URL."""

    action: ElicitAction
    elicitation_id: str

    @property
    def accepted(self) -> bool:
        return self.action == "accept"


@final
class SampleValidationError(YieldMCPError):
    """``sample_schema`` / ``sample_tools`` ran out of retries.

    Attributes:
        method: ``"sample_schema"`` or ``"sample_tools"``.
        attempts: how many samples were made (``retries + 1``).
        last_result: the last ``SampleResult`` received, for inspection.
    """

    def __init__(
        self, method: str, attempts: int, last_result: SampleResult[Any], reason: str
    ) -> None:
        super().__init__(
            f"{method} gave up after {attempts} attempt(s): {reason}. Inspect "
            f".last_result for the model's final answer, or raise `retries`."
        )
        self.method = method
        self.attempts = attempts
        self.last_result = last_result
        self.reason = reason

"""The ``Sample`` effect: asking the client's model for a message.

Owns :class:`Sample`: its checks at construction (messages, tools, tool choice,
schema, limits), the request it stands for, its fingerprint, and the reserved
``__schema__`` meta-tool that carries a ``schema`` on the wire.

It does not read the model's reply: turning a reply into a ``SampleResult``
(structured output, corrective retries) is :mod:`runtime.sampling.outcome`'s, and the
MCP and provider spellings belong to ``encoders`` and ``decoders``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any, Generic, Literal, TypeVar, cast, final

import attrs
from pydantic import BaseModel

from ..codec import message_to_json, sample_reply_from_json, sample_reply_to_json
from ..effects.base import JSON, PeerQuestion
from ..errors import InvalidEffect, RemoteProtocolError
from ..messages import (
    SCHEMA_TOOL_NAME,
    Message,
    ModelPreferences,
    NamedTool,
    ToolChoice,
    ToolSpec,
    validate_messages,
)
from ..replies import SampleReply
from ..requests import SamplingRequest
from ..results import SampleResult
from ..wire.sendable import sendable_schema
from .outcome import resolve_sample

__all__ = ["Sample"]

P = TypeVar("P")


def _strings(value: Iterable[str]) -> tuple[str, ...]:
    """``stop_sequences`` as a tuple: a list of strings, not a string (whose
    every character would stop the model: OpenAI's ``stop="..."`` habit)."""
    if isinstance(value, str):
        raise InvalidEffect(
            f"sample: stop_sequences is a list of strings, got the string "
            f"{value[:60]!r}: write stop_sequences=[{value[:60]!r}]"
        )
    sequences = tuple(value)
    for sequence in sequences:
        if not isinstance(sequence, str):
            raise InvalidEffect(
                f"sample: stop_sequences holds strings, got {type(sequence).__name__}"
            )
    return sequences


def _check_sample(s: Sample[Any]) -> None:
    if not s.messages:
        raise InvalidEffect("sample needs a prompt or at least one message")
    if s.schema is not None and s.tools:
        raise InvalidEffect(
            "sample: `schema` and `tools` are mutually exclusive; use `schema` for "
            "one structured answer, `tools` to let the model pick calls"
        )
    if s.schema is not None and not (
        isinstance(s.schema, type) and issubclass(s.schema, BaseModel)
    ):
        raise InvalidEffect(
            f"sample: schema must be a pydantic model, got {s.schema!r}"
        )
    if s.tool_choice is not None and not s.tools:
        raise InvalidEffect("sample: `tool_choice` needs `tools`")
    if (
        s.tool_choice is not None
        and not isinstance(s.tool_choice, NamedTool)
        and (s.tool_choice not in ("auto", "required", "none"))
    ):
        raise InvalidEffect(
            f"sample: tool_choice must be 'auto', 'required', 'none' or "
            f"NamedTool(name), got {s.tool_choice!r}"
        )
    names = [t.name for t in s.tools]
    if len(set(names)) != len(names):
        raise InvalidEffect(f"sample: tool names must be unique, got {names}")
    if SCHEMA_TOOL_NAME in names:
        raise InvalidEffect(
            f"sample: {SCHEMA_TOOL_NAME!r} is reserved for structured output; pass "
            f"schema= instead"
        )
    if isinstance(s.tool_choice, NamedTool) and s.tool_choice.name not in names:
        raise InvalidEffect(
            f"sample: tool_choice names {s.tool_choice.name!r}, not among {names}"
        )
    if not (isinstance(s.max_tokens, int) and s.max_tokens >= 1):
        raise InvalidEffect(
            f"sample: max_tokens must be a positive int, got {s.max_tokens!r}"
        )
    if s.temperature is not None and not (
        isinstance(s.temperature, int | float)
        and math.isfinite(s.temperature)
        and s.temperature >= 0
    ):
        raise InvalidEffect(f"sample: temperature must be >= 0, got {s.temperature!r}")
    validate_messages(s.messages)


@final
@attrs.frozen(kw_only=True)
class Sample(PeerQuestion[SampleResult[P]], Generic[P]):
    """Ask the client's model for a message (MCP ``sampling/createMessage``).

    Every field is forwarded. With ``schema`` (a pydantic model) the model is asked
    for structured output through the reserved ``__schema__`` tool with tool
    choice *required*; the answer is read back from that tool call's input, or from
    JSON text when a naive client replies in prose, and validated: the result holds
    ``parsed`` or a ``parse_error``, never an exception. With ``tools`` the result
    lists ``tool_calls``. ``schema`` and ``tools`` are mutually exclusive.
    """

    messages: tuple[Message, ...] = attrs.field(converter=tuple)
    system_prompt: str | None = None
    max_tokens: int = 1024
    temperature: float | None = None
    stop_sequences: tuple[str, ...] = attrs.field(default=(), converter=_strings)
    model_preferences: ModelPreferences | None = None
    include_context: Literal["none", "thisServer", "allServers"] | None = None
    tools: tuple[ToolSpec, ...] = attrs.field(default=(), converter=tuple)
    tool_choice: ToolChoice | None = None
    schema: type[P] | None = None
    metadata: Mapping[str, Any] | None = None

    def __attrs_post_init__(self) -> None:
        _check_sample(self)

    @property
    def schema_tool(self) -> ToolSpec | None:
        """The ``__schema__`` meta-tool standing for ``schema`` on the wire."""
        if self.schema is None:
            return None
        model = cast("type[BaseModel]", self.schema)
        return _schema_tool(model)

    def request(self) -> SamplingRequest:
        """This sample as data: ``schema`` becomes the required ``__schema__`` tool."""
        schema_tool = self.schema_tool
        return SamplingRequest(
            messages=self.messages,
            system_prompt=self.system_prompt,
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            stop_sequences=self.stop_sequences,
            model_preferences=self.model_preferences,
            include_context=self.include_context,
            tools=self.tools if schema_tool is None else (schema_tool,),
            tool_choice=self.tool_choice if schema_tool is None else "required",
            metadata=self.metadata,
        )

    def fingerprint(self) -> JSON:
        prefs = self.model_preferences
        return {
            "effect": "sample",
            "messages": [message_to_json(m) for m in self.messages],
            "systemPrompt": self.system_prompt,
            "maxTokens": self.max_tokens,
            "temperature": self.temperature,
            "stopSequences": list(self.stop_sequences),
            "modelPreferences": None if prefs is None else attrs.asdict(prefs),
            "includeContext": self.include_context,
            "tools": [_tool_json(t) for t in self.tools],
            "toolChoice": _choice_json(self.tool_choice),
            "schema": None
            if self.schema_tool is None
            else _tool_json(self.schema_tool),
            "metadata": None if self.metadata is None else dict(self.metadata),
        }

    def resolve(self, reply: Any, key: str) -> SampleResult[P]:
        if not isinstance(reply, SampleReply):
            raise RemoteProtocolError(f"a sample was answered with {reply!r}")
        return resolve_sample(self, reply, key)

    def reply_to_json(self, reply: Any) -> JSON:
        return sample_reply_to_json(cast(SampleReply, reply))

    def reply_from_json(self, data: JSON) -> Any:
        return sample_reply_from_json(data)


def _tool_json(tool: ToolSpec) -> JSON:
    return {
        "name": tool.name,
        "description": tool.description,
        "inputSchema": dict(tool.input_schema),
    }


def _choice_json(choice: ToolChoice | None) -> JSON:
    return {"name": choice.name} if isinstance(choice, NamedTool) else choice


_SCHEMA_TOOLS: dict[type[BaseModel], ToolSpec] = {}


def _schema_tool(model: type[BaseModel]) -> ToolSpec:
    spec = _SCHEMA_TOOLS.get(model)
    if spec is None:
        spec = ToolSpec(
            name=SCHEMA_TOOL_NAME,
            description=(
                "Respond with structured data matching this schema by calling "
                "this tool."
            ),
            # No non-finite default (JSON has none: a strict client could
            # not read the request); the model still applies it.
            input_schema=sendable_schema(model.model_json_schema()),
        )
        _SCHEMA_TOOLS[model] = spec
    return spec

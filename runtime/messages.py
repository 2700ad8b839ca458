"""Conversation values: content blocks, messages, tool specs and tool calls.

These are the canonical, protocol-neutral shapes every encoder and decoder maps to
and from (MCP, OpenAI, Anthropic, Ollama, Gemini). They mirror MCP's sampling
content blocks, spelled in Python: ``Text``, ``Image``, ``Audio``, ``ToolUse`` and
``ToolResult``, grouped into ``Message`` values with a ``role``.

``meta`` on a block carries provider-opaque continuity data (MCP ``_meta``: e.g. a
Gemini ``thoughtSignature`` or an Anthropic thinking block) that must survive a
round trip untouched. ``annotations`` on a text, image or audio block are MCP's
hints for the host (``{"audience": ["user"], "priority": 0.9}``), kept as sent.
Nothing here performs I/O.

:func:`validate_messages` enforces MCP's rules for tool use in a conversation; it
runs whenever a ``Sample`` effect is built, so a bad history fails in the tool,
at the line that built it, not at the peer.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, TypeAlias, TypeVar, cast, final

import attrs
from pydantic import BaseModel

from .errors import InvalidEffect, InvalidMessages

__all__ = [
    "RAW_ARGUMENTS_KEY",
    "SCHEMA_TOOL_NAME",
    "Audio",
    "Block",
    "Image",
    "Message",
    "ModelPreferences",
    "NamedTool",
    "Role",
    "Text",
    "ToolCall",
    "ToolChoice",
    "ToolResult",
    "ToolSpec",
    "ToolUse",
    "Usage",
    "boolean_property",
    "validate_messages",
]

Role: TypeAlias = Literal["user", "assistant"]

SCHEMA_TOOL_NAME = "__schema__"
"""Reserved tool name carrying structured output on the wire (see ``sample``)."""

RAW_ARGUMENTS_KEY = "__raw__"
"""A tool call whose arguments were not valid JSON carries the text under this key
as its only input, so retries can see and correct the model's mistake."""

_M = TypeVar("_M", bound=BaseModel)
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")


def _meta_field() -> Any:
    return attrs.field(default=None, kw_only=True, repr=False)


def _annotations_field() -> Any:
    return attrs.field(default=None, kw_only=True)


@final
@attrs.frozen
class Text:
    """A text block."""

    text: str = attrs.field(validator=attrs.validators.instance_of(str))
    meta: Mapping[str, Any] | None = _meta_field()
    annotations: Mapping[str, Any] | None = _annotations_field()


@final
@attrs.frozen
class Image:
    """An image block: base64 ``data`` and its ``mime_type``."""

    data: str = attrs.field(validator=attrs.validators.instance_of(str))
    mime_type: str = attrs.field(validator=attrs.validators.instance_of(str))
    meta: Mapping[str, Any] | None = _meta_field()
    annotations: Mapping[str, Any] | None = _annotations_field()


@final
@attrs.frozen
class Audio:
    """An audio block: base64 ``data`` and its ``mime_type``."""

    data: str = attrs.field(validator=attrs.validators.instance_of(str))
    mime_type: str = attrs.field(validator=attrs.validators.instance_of(str))
    meta: Mapping[str, Any] | None = _meta_field()
    annotations: Mapping[str, Any] | None = _annotations_field()


@final
@attrs.frozen
class ToolUse:
    """The model asks to call tool ``name`` with ``input``; ``id`` pairs the result."""

    id: str = attrs.field(validator=attrs.validators.instance_of(str))
    name: str = attrs.field(validator=attrs.validators.instance_of(str))
    input: Mapping[str, Any] = attrs.field(factory=dict[str, Any])
    meta: Mapping[str, Any] | None = _meta_field()


def _to_result_content(
    value: Iterable[Text | Image | Audio | str] | str,
) -> tuple[Any, ...]:
    if isinstance(value, str):
        return (Text(value),)
    blocks = tuple(Text(v) if isinstance(v, str) else v for v in value)
    for block in blocks:
        if not isinstance(block, Text | Image | Audio):
            raise InvalidMessages(
                f"tool result content must be Text, Image or Audio blocks (or str), "
                f"got {block!r}"
            )
    return blocks


@final
@attrs.frozen
class ToolResult:
    """The answer to the ``ToolUse`` whose id is ``tool_use_id``.

    ``content`` may be given as a plain string. ``is_error`` marks a failed call so
    the model can correct itself.
    """

    tool_use_id: str = attrs.field(validator=attrs.validators.instance_of(str))
    content: tuple[Text | Image | Audio, ...] = attrs.field(
        default=(), converter=_to_result_content
    )
    is_error: bool = attrs.field(default=False, kw_only=True)
    structured_content: Any = attrs.field(default=None, kw_only=True)
    meta: Mapping[str, Any] | None = _meta_field()


Block: TypeAlias = Text | Image | Audio | ToolUse | ToolResult
_BLOCK_TYPES = (Text, Image, Audio, ToolUse, ToolResult)


def _to_blocks(value: Iterable[Block] | Block | str) -> tuple[Block, ...]:
    if isinstance(value, str):
        return (Text(value),)
    if isinstance(value, _BLOCK_TYPES):
        return (value,)
    blocks = tuple(value)
    for block in blocks:
        if not isinstance(block, _BLOCK_TYPES):
            raise InvalidMessages(
                f"message content must be content blocks (Text, Image, Audio, "
                f"ToolUse, ToolResult) or a str, got {block!r}"
            )
    return blocks


@final
@attrs.frozen
class Message:
    """One turn of a conversation: a ``role`` and its content blocks.

    ``content`` accepts a str (one ``Text`` block), a block, or blocks.
    """

    role: Role = attrs.field(validator=attrs.validators.in_(("user", "assistant")))
    content: tuple[Block, ...] = attrs.field(converter=_to_blocks)

    @classmethod
    def user(cls, *content: Block | str) -> Message:
        """A user message made of ``content`` (strings become ``Text``)."""
        return cls("user", tuple(_one(c) for c in content))

    @classmethod
    def assistant(cls, *content: Block | str) -> Message:
        """An assistant message made of ``content`` (strings become ``Text``)."""
        return cls("assistant", tuple(_one(c) for c in content))

    @property
    def text(self) -> str:
        """The concatenated text of this message's ``Text`` blocks."""
        return "".join(b.text for b in self.content if isinstance(b, Text))


def _one(value: Block | str) -> Block:
    return Text(value) if isinstance(value, str) else value


def boolean_property(schema: Mapping[str, Any]) -> str | None:
    """Why a tool's input ``schema`` cannot go to a 2025-11-25 peer, or None.

    JSON Schema (and 2026-07-28) allow a property's schema to be ``true`` or
    ``false``; 2025-11-25's ``schema.json`` wants an object there, for a
    server's tool and a tool offered in sampling alike. The first such
    property is named, with the object that means the same. A server's tool
    is refused when it is made (it is listed to both eras); a tool offered in
    sampling, when it is sent to a 2025-11-25 client.
    """
    properties: Any = schema.get("properties")
    if not isinstance(properties, Mapping):
        return None
    for key, subschema in cast("Mapping[str, Any]", properties).items():
        if isinstance(subschema, bool):
            equal = "{}" if subschema else '{"not": {}}'
            return (
                f"input_schema.properties[{key!r}] is {subschema}; MCP wants an "
                f"object schema there (write {equal})"
            )
    return None


@final
@attrs.frozen(kw_only=True)
class ToolSpec:
    """A tool offered to the model during sampling (not an MCP server tool).

    ``input_schema`` is a JSON Schema whose root is ``{"type": "object"}``. Build
    one from a pydantic model with :meth:`from_model`.
    """

    name: str
    description: str | None = None
    input_schema: Mapping[str, Any] = attrs.field(
        factory=lambda: {"type": "object", "properties": {}}
    )

    def __attrs_post_init__(self) -> None:
        if not _TOOL_NAME.match(self.name):
            raise InvalidEffect(
                f"tool name {self.name!r} is not 1-128 characters of "
                f"[A-Za-z0-9_.-]; MCP tool names are restricted to those"
            )
        if self.input_schema.get("type") != "object":
            raise InvalidEffect(
                f"tool {self.name!r}: input_schema must have type 'object' at its "
                f"root, got {self.input_schema.get('type')!r}"
            )

    @classmethod
    def from_model(
        cls, name: str, model: type[BaseModel], *, description: str | None = None
    ) -> ToolSpec:
        """A tool whose arguments are described by the pydantic ``model``."""
        doc = description if description is not None else model.__doc__
        return cls(
            name=name,
            description=doc.strip() if doc else None,
            input_schema=model.model_json_schema(),
        )


@final
@attrs.frozen
class ToolCall:
    """A call the model made: ``id``, tool ``name`` and decoded ``arguments``."""

    id: str
    name: str
    arguments: Mapping[str, Any]

    def parse(self, model: type[_M]) -> _M:
        """The arguments validated as ``model`` (raises pydantic's ValidationError)."""
        return model.model_validate(dict(self.arguments))


@final
@attrs.frozen
class NamedTool:
    """``tool_choice`` forcing one specific tool (``ToolChoice`` "named")."""

    name: str


ToolChoice: TypeAlias = Literal["auto", "required", "none"] | NamedTool


@final
@attrs.frozen(kw_only=True)
class ModelPreferences:
    """Advisory model selection hints, forwarded to the client as-is."""

    hints: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    cost_priority: float | None = None
    speed_priority: float | None = None
    intelligence_priority: float | None = None


@final
@attrs.frozen
class Usage:
    """Token usage reported by a provider for one sample."""

    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens


# --- validation ---------------------------------------------------------------------


def validate_messages(messages: Sequence[Message]) -> None:
    """Check a conversation against MCP's sampling rules, or raise InvalidMessages.

    The rules: at least one message; ``tool_use`` only from the assistant and
    ``tool_result`` only from the user; a user message holding tool results holds
    nothing else; tool-use ids are unique; every assistant tool use is answered by
    a matching result in the very next message, and results answer only those.

    Earlier tool uses may name any tool: a conversation swaps tools as it goes
    (a decision tree's level-1 tools, then its level-2 ones), and it may carry a
    ``__schema__`` or an elicitation exchange. Only the model's reply to a
    request must name a tool offered in it (``sample_tools`` checks that).
    """
    if not messages:
        raise InvalidMessages("a sample needs at least one message")
    for index, message in enumerate(messages):
        if not isinstance(message, Message):
            raise InvalidMessages(
                f"message {index} is a {type(message).__name__}, not a Message: "
                f"write Message.user('...') or Message.assistant('...')"
            )
    seen: set[str] = set()
    open_ids: list[str] = []
    for index, message in enumerate(messages):
        uses = [b for b in message.content if isinstance(b, ToolUse)]
        results = [b for b in message.content if isinstance(b, ToolResult)]
        if open_ids:
            _check_answers(index, message, open_ids, results)
            open_ids = []
        elif results:
            raise InvalidMessages(
                f"message {index}: tool_result for "
                f"{[r.tool_use_id for r in results]} does not follow an assistant "
                f"message with those tool_use ids"
            )
        if uses:
            _check_uses(index, message, uses, seen)
            open_ids = [u.id for u in uses]
    if open_ids:
        raise InvalidMessages(
            f"the last message uses tools {open_ids} but no tool_result answers "
            f"them; append a user message of ToolResult blocks before sampling"
        )


def _check_uses(
    index: int,
    message: Message,
    uses: list[ToolUse],
    seen: set[str],
) -> None:
    if message.role != "assistant":
        raise InvalidMessages(f"message {index}: only the assistant may use tools")
    for use in uses:
        if use.id in seen:
            raise InvalidMessages(f"message {index}: tool_use id {use.id!r} repeats")
        seen.add(use.id)


def _check_answers(
    index: int, message: Message, open_ids: list[str], results: list[ToolResult]
) -> None:
    if message.role != "user" or len(results) != len(message.content):
        raise InvalidMessages(
            f"message {index}: must be a user message holding only ToolResult "
            f"blocks answering {open_ids}"
        )
    answered = [r.tool_use_id for r in results]
    if sorted(answered) != sorted(open_ids):
        raise InvalidMessages(
            f"message {index}: tool results answer {answered}, but the previous "
            f"message used tools {open_ids}; each tool_use needs exactly one result"
        )

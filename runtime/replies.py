"""Replies: what a peer answers to a question, before the tool sees it.

A reply is the protocol-neutral answer an executor returns (``SampleReply`` for a
sample, ``ElicitReply`` for an elicitation). The runtime turns a reply into the
typed result the tool receives (``SampleResult``, ``ElicitResult``), validating
it on the way; replies are what the journal records, so a replayed tool is
re-validated exactly as the live one was.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeAlias, final

import attrs

from .messages import Block, Text, ToolUse, Usage

__all__ = ["ElicitAction", "ElicitReply", "Root", "RootsReply", "SampleReply"]

ElicitAction: TypeAlias = Literal["accept", "decline", "cancel"]


def _blocks(value: Any) -> tuple[Block, ...]:
    if isinstance(value, str):
        return (Text(value),)
    return tuple(value)


@final
@attrs.frozen(kw_only=True)
class SampleReply:
    """A model's answer to a sample: content blocks, model name, stop reason."""

    content: tuple[Block, ...] = attrs.field(converter=_blocks)
    model: str = "unknown"
    stop_reason: str | None = None
    usage: Usage | None = None

    @property
    def text(self) -> str:
        return "".join(b.text for b in self.content if isinstance(b, Text))

    @property
    def tool_uses(self) -> tuple[ToolUse, ...]:
        return tuple(b for b in self.content if isinstance(b, ToolUse))


@final
@attrs.frozen(kw_only=True)
class ElicitReply:
    """A user's answer to an elicitation: the action and, on accept, the content."""

    action: ElicitAction = attrs.field(
        validator=attrs.validators.in_(("accept", "decline", "cancel"))
    )
    content: Mapping[str, Any] | None = None


@final
@attrs.frozen
class Root:
    """A root the client exposes: a ``file://`` URI and an optional name."""

    uri: str
    name: str | None = None


@final
@attrs.frozen
class RootsReply:
    """A client's answer to ``roots/list``."""

    roots: tuple[Root, ...] = attrs.field(converter=tuple)

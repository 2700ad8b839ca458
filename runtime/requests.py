"""Requests as a host receives them: protocol-neutral, schema-as-data.

A tool builds ``Sample`` and ``Elicit`` effects, which refer to pydantic models.
What crosses to the other side (over MCP, or in-process to a provider) is only
data: a :class:`SamplingRequest`, where structured output is the reserved
``__schema__`` tool with tool choice ``required``, and an
:class:`ElicitationRequest` carrying the JSON Schema of the form.

Provider encoders take a ``SamplingRequest``; elicitation handlers take an
``ElicitationRequest``. ``Sample.request()`` / ``Elicit.request()`` build them
on the tool side, ``decoders.mcp`` builds them from the wire on the host side.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, final

import attrs

from .messages import SCHEMA_TOOL_NAME, Message, ModelPreferences, ToolChoice, ToolSpec

__all__ = ["ElicitationRequest", "SamplingRequest"]


@final
@attrs.frozen(kw_only=True)
class SamplingRequest:
    """Everything a model needs to answer one sample."""

    messages: tuple[Message, ...] = attrs.field(converter=tuple)
    system_prompt: str | None = None
    max_tokens: int = 1024
    temperature: float | None = None
    stop_sequences: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    model_preferences: ModelPreferences | None = None
    include_context: Literal["none", "thisServer", "allServers"] | None = None
    tools: tuple[ToolSpec, ...] = attrs.field(default=(), converter=tuple)
    tool_choice: ToolChoice | None = None
    metadata: Mapping[str, Any] | None = None

    @property
    def schema_tool(self) -> ToolSpec | None:
        """The ``__schema__`` tool when this asks for structured output, else None.

        Structured output means: ``__schema__`` is the only tool offered and the
        choice is ``required``. A host should answer it with the provider's
        native structured output and return the data as a ``__schema__`` call.
        """
        if (
            len(self.tools) == 1
            and self.tools[0].name == SCHEMA_TOOL_NAME
            and self.tool_choice == "required"
        ):
            return self.tools[0]
        return None


@final
@attrs.frozen(kw_only=True)
class ElicitationRequest:
    """A form (``mode="form"``) or an out-of-band flow (``mode="url"``) to show.

    ``key`` is the tool's elicitation key when the server shares it (yieldmcp
    servers do), so hosts can route forms to typed handlers. ``context`` is the
    tool's extra context (``x-model-context``).
    """

    message: str
    mode: Literal["form", "url"] = "form"
    requested_schema: Mapping[str, Any] = attrs.field(factory=dict[str, Any])
    url: str | None = None
    elicitation_id: str | None = None
    key: str | None = None
    context: Mapping[str, Any] = attrs.field(factory=dict[str, Any])

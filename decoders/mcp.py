"""MCP wire decoding: the JSON a peer sends, validated, to canonical values.

Owns the reading of what an MCP peer sends yieldmcp: a client's
``CreateMessageResult`` and ``ElicitResult`` (server side), a server's
``sampling/createMessage`` and ``elicitation/create`` params (host side) and a
server's ``CallToolResult`` (client side). Blocks and messages are read by
:mod:`runtime.codec`; the decoders validate first, with the official
``mcp-types`` models (strict, wire names only), so anything malformed becomes a
:class:`~runtime.errors.RemoteProtocolError` with a short summary. Decoders
raise nothing else, whatever JSON they are given.

Decoders take no era: they accept what *either* era's schema accepts (a
2025-11-25 URL elicitation with ``elicitationId``, a 2026-07-28 one without;
object or any-JSON ``structuredContent``; ``CallToolResult`` with or without
``resultType``). Rules the wire models cannot express are checked here:

* a sampling result must come from the ``assistant``;
* a sampling conversation must follow MCP's tool-use rules
  (:func:`runtime.messages.validate_messages`);
* an accepted form answer must match the requested schema (JSON Schema 2020-12,
  formats not asserted). Numbers follow the TypeScript schema: a float answers a
  ``number`` field although the generated ``schema.json`` types answers as
  ``integer`` (PROTOCOL.md §3.2); ``30.0`` answers an ``integer`` field.

Documented normalisations (what a round trip through the encoders loses):
block ``annotations`` and message-level ``_meta`` are dropped; a sampling tool
keeps only ``name``, ``description`` and ``inputSchema``; model hints without a
name are dropped; ``toolChoice: {}`` reads as no choice; content sent with a
decline, a cancel or a URL-mode answer is dropped. ``tool_result`` blocks inside
sampling messages may hold only text, image and audio (yieldmcp's ``ToolResult``
cannot carry resources); resources are refused with a clear error.

This module is the public home of the MCP decoders and defines none. Each part
lives in its own module: ``_mcp_answers`` (a client's answers, server side),
``_mcp_requests`` (a server's requests, host side), ``_mcp_tools`` (a
server's ``CallToolResult``, client side) and ``_mcp_wire`` (the validation
they share).

It does not decide what to do with a decoded value, check capabilities, or read
JSON-RPC envelopes (the bridge does).
"""

from typing import TYPE_CHECKING, Any

from ._mcp_answers import elicit_reply as elicit_reply
from ._mcp_answers import form_reply as form_reply
from ._mcp_answers import sample_reply as sample_reply
from ._mcp_requests import elicitation_request as elicitation_request
from ._mcp_requests import sampling_request as sampling_request
from ._mcp_tools import ToolCallResult as ToolCallResult
from ._mcp_tools import call_tool_result as call_tool_result

if TYPE_CHECKING:
    from ._mcp_tools import ResultBlock as ResultBlock
else:

    def __getattr__(name: str) -> Any:
        # ResultBlock names the SDK's models, imported on first use only.
        if name == "ResultBlock":
            from . import _mcp_tools

            return _mcp_tools.ResultBlock
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ResultBlock",
    "ToolCallResult",
    "call_tool_result",
    "elicit_reply",
    "elicitation_request",
    "form_reply",
    "sample_reply",
    "sampling_request",
]

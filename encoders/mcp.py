"""MCP wire encoding: canonical values to the JSON yieldmcp sends, per protocol era.

Owns the MCP spelling of what a yieldmcp server sends (``sampling/createMessage``
and ``elicitation/create`` params, tool definitions and ``tools/call`` results)
and of what a yieldmcp host answers (``CreateMessageResult``, ``ElicitResult``).
Blocks and messages are spelled by :mod:`runtime.codec`; this package adds the
request- and result-level shape and the differences between the two eras:

* ``"2025-11-25"``: URL elicitation carries ``elicitationId``; a tool's
  ``outputSchema`` and every ``structuredContent`` must be JSON objects.
* ``"2026-07-28"``: no ``elicitationId``; ``structuredContent`` may be any JSON
  value; ``CallToolResult`` carries ``resultType: "complete"``.

Every output is checked against the era's official ``mcp-types`` model (strict,
wire names only) before it is returned, so a failure here is a
:class:`~runtime.errors.LocalProtocolError`: we were about to break the protocol.
The check covers what comes from outside the encoder's control — blocks,
resources, schemas, preferences, metadata and scalars of unchecked types — with
cached per-field validators; the parts the encoder spells itself from values
that are valid by construction (a ``str`` as a text block, the JSON of a
structured value, ``resultType``, an ``isError`` error result) are not
validated again on every call. The test suite validates every shape against
the official JSON Schemas (``tests/mcp_schema.py``). Text UTF-8 cannot carry (a
lone surrogate) is refused in data the other side acts on, and sent as its
escape in text a person reads (an error; :func:`escaped` for a log or a
progress message, which the bridge spells).

This module is the public home of the MCP encoders and defines none. Each part
lives, with the decisions a reader should know about it, in its own module:

* ``_mcp_requests``: the server's requests (how a ``NamedTool`` choice and the
  elicitation key and context are carried);
* ``_mcp_answers``: the host's answers to them;
* ``_mcp_tools``: tool definitions and ``tools/call`` results (how MCP resources
  are returned);
* ``_mcp_output``: the ``outputSchema`` and ``structuredContent`` a tool's
  return annotation gives, as the official SDK's ``MCPServer`` makes them;
* ``_mcp_wire``: the eras and the check above.

It does not send anything, mint JSON-RPC ids, choose the era (the bridge passes
it), wrap requests for 2026-07-28 ``inputRequests``, or decode anything (see
:mod:`decoders.mcp`).
"""

from typing import TYPE_CHECKING, Any

from ._mcp_answers import elicit_result as elicit_result
from ._mcp_answers import sample_result as sample_result
from ._mcp_requests import elicitation_params as elicitation_params
from ._mcp_requests import sampling_params as sampling_params
from ._mcp_tools import tool_definition as tool_definition
from ._mcp_tools import tool_error as tool_error
from ._mcp_tools import tool_result as tool_result
from ._mcp_wire import ERAS as ERAS
from ._mcp_wire import Era as Era
from ._mcp_wire import escaped as escaped

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
    "ERAS",
    "Era",
    "ResultBlock",
    "elicit_result",
    "elicitation_params",
    "escaped",
    "sample_result",
    "sampling_params",
    "tool_definition",
    "tool_error",
    "tool_result",
]

"""MCP encoding of tools, server side: tool definitions and ``tools/call`` results.

Owns :func:`tool_definition` (the ``Tool`` object ``tools/list`` returns, with
the ``outputSchema`` the tool's return annotation gives, as the official SDK's
``MCPServer`` makes it: :mod:`encoders._mcp_output`) and what a call returns:
:func:`tool_result` (text, content blocks including MCP resources, and
structured data beside a text block, as the era allows) and
:func:`tool_error`; a result nested deeper than its place in a message
leaves (:data:`RESULT_DEPTH`), which the client could not read, is refused.
Every payload passes :func:`~encoders._mcp_wire.checked` before it is
returned: what is not valid by construction is validated against the era's
official model.

Tool results may contain MCP resources. Rather than inventing a second type, a
tool returns the official public models ``mcp_types.ResourceLink`` or
``mcp_types.EmbeddedResource`` (alongside runtime ``Text``/``Image``/``Audio``
blocks); a plain ``dict`` is always *data*, never mistaken for a block.

It does not validate arguments, run the tool or decide that a call failed
(``runtime`` and the bridge do), and encodes no sampling or elicitation.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final, TypeAlias, cast

from pydantic_core import PydanticSerializationError, to_jsonable_python

from runtime.codec import ELICITS_META_KEY, block_to_json
from runtime.errors import LocalProtocolError
from runtime.lowlevel import MAX_MESSAGE_DEPTH, nested_too_deep, nesting
from runtime.messages import Audio, Image, Text, ToolResult, ToolUse
from runtime.tools import Tool

from ._mcp_output import content_block_types, output_shape
from ._mcp_wire import Era, JSONObject, checked, escaped, plain_text, put, utf8

__all__ = ["ResultBlock", "tool_definition", "tool_error", "tool_result"]

if TYPE_CHECKING:
    import mcp_types

    ResultBlock: TypeAlias = (
        Text | Image | Audio | mcp_types.ResourceLink | mcp_types.EmbeddedResource
    )
    """What a tool may return as ``CallToolResult`` content (alone or in a list)."""
else:

    def __getattr__(name: str) -> Any:
        # The SDK's models are imported only when a tool's result needs them
        # (see content_block_types), so the alias is built on first use.
        if name == "ResultBlock":
            import mcp_types

            return (
                Text
                | Image
                | Audio
                | mcp_types.ResourceLink
                | mcp_types.EmbeddedResource
            )
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def tool_definition(tool: Tool[Any, Any], *, era: Era) -> JSONObject:
    """The MCP ``Tool`` object ``tools/list`` returns for ``tool``.

    ``inputSchema`` is the params model's JSON Schema. ``outputSchema`` is the
    one the tool's output type gives (:mod:`encoders._mcp_output`), except in
    2025-11-25 when that schema's root is not an object (then it is omitted,
    and so is ``structuredContent`` in :func:`tool_result`). A tool that
    declares forms names their keys in ``_meta["io.yieldmcp/elicits"]``.

    Raises:
        LocalProtocolError: the definition is not valid MCP in ``era``.
    """
    out: JSONObject = {"name": tool.name}
    put(out, "title", tool.title)
    put(out, "description", tool.description)
    out["inputSchema"] = tool.input_schema
    output = _output_schema(tool, era)
    if output is not None:
        out["outputSchema"] = copy.deepcopy(output)
    if tool.annotations is not None:
        out["annotations"] = dict(tool.annotations)
    if tool.task != "forbidden" and era != "2025-11-25":
        # The tasks extension's (SEP-2663); 2025-11-25's own experimental
        # tasks are not served, so that era is not told of task support.
        out["execution"] = {"taskSupport": tool.task}
    if tool.elicits:
        # The keys of its forms, so a host can check scripted answers before
        # the call (``yieldmcp call --answer``); a tool with none says nothing.
        out["_meta"] = {ELICITS_META_KEY: list(tool.elicits)}
    # What this function spells from values checked when the tool was made
    # (the schemas, by pydantic or against JSON Schema's metaschema) or from
    # constants is valid by construction; the author's annotations, and a
    # name or text that is not a str, are checked against the era's model.
    trusted = [
        key
        for key in ("name", "title", "description")
        if key in out and type(out[key]) is str
    ]
    trusted += ["inputSchema", "outputSchema", "execution", "_meta"]
    return checked(era, "Tool", out, f"tool {tool.name!r} definition", trusted=trusted)


def _output_schema(tool: Tool[Any, Any], era: str) -> JSONObject | None:
    schema = output_shape(tool.name, tool.output).schema
    if schema is None or (era == "2025-11-25" and schema.get("type") != "object"):
        return None
    return schema


def tool_result(value: Any, tool: Tool[Any, Any], *, era: Era) -> JSONObject:
    """The ``CallToolResult`` for ``value``, returned by ``tool``.

    * a ``str``: one text block;
    * ``None``: no content;
    * a :data:`ResultBlock` or a non-empty list/tuple of them: that content;
    * anything else (a pydantic model, a dict, a list, a number...): its JSON
      as one text block.

    ``structuredContent`` is what the tool's return annotation says
    (:mod:`encoders._mcp_output`): the value's JSON, or ``{"result": …}``
    for a wrapped type (a ``str`` and ``None`` too), or none for content
    blocks; with no annotation, data (not a ``str``) goes as it is whenever
    the era allows that value (any JSON in 2026-07-28, objects only in
    2025-11-25).

    Raises:
        LocalProtocolError: the value cannot be sent (not JSON-serialisable,
            content mixed with data, sampling-only blocks such as ``ToolUse``,
            nested deeper than :data:`RESULT_DEPTH`).
    """
    content, data, plain = _result_parts(value, tool.name)
    shape = output_shape(tool.name, tool.output)
    structured: Any = data
    if shape.content or (data is None and value is not None):
        structured = None  # content blocks
    elif shape.wrapped:
        structured = {"result": data}
    elif shape.schema is None and isinstance(value, str):
        structured = None  # no annotation: a str is text
    out: JSONObject = {"content": content}
    if structured is not None and (era == "2026-07-28" or isinstance(structured, dict)):
        out["structuredContent"] = structured
    elif _output_schema(tool, era) is not None:
        raise LocalProtocolError(
            f"tool {tool.name!r} declares an outputSchema but returned "
            f"{type(value).__name__}, which has no structured content"
        )
    if era == "2026-07-28":
        out["resultType"] = "complete"
    if not plain:
        # Blocks come from the tool: checked. Text and structured data are
        # spelled here, from a str and from JSON: valid by construction.
        checked(
            era, "CallToolResult", out, f"tool {tool.name!r} result",
            trusted=["structuredContent", "resultType"],
        )  # fmt: skip
    if nesting(out, RESULT_DEPTH + 1) > RESULT_DEPTH:
        raise LocalProtocolError(_too_deep(tool.name))
    return out


RESULT_DEPTH: Final = MAX_MESSAGE_DEPTH - 2
"""Levels a ``CallToolResult`` may nest, itself the first: it travels in a
JSON-RPC message's ``result``, or one level further down in a task's
(``tasks/get``), and a message nested past ``MAX_MESSAGE_DEPTH`` cannot be
read by the client, whose request for it would wait for ever."""


def _too_deep(tool_name: str) -> str:
    return nested_too_deep(f"the result of tool {tool_name!r}", RESULT_DEPTH)


def tool_error(message: str, *, era: Era) -> JSONObject:
    """A failed ``CallToolResult``: ``message`` as text with ``isError: true``.

    Valid by construction for a ``str`` message (checked otherwise); a lone
    surrogate in it (text decoded with ``errors="surrogateescape"``), which
    UTF-8 cannot carry, is sent as its escape (``\\udce9``).
    """
    if type(message) is str:
        message = escaped(message)
    out: JSONObject = {"content": [{"type": "text", "text": message}], "isError": True}
    if era == "2026-07-28":
        out["resultType"] = "complete"
    if type(message) is not str:
        checked(era, "CallToolResult", out, "tool error result")
    return out


def _result_parts(value: Any, tool_name: str) -> tuple[list[JSONObject], Any, bool]:
    """The content, the value as JSON (None for content blocks) and whether
    the content is plain text (spelled here, valid by construction) for what a
    tool returned."""
    if isinstance(value, str):
        return [{"type": "text", "text": _unicode(value, tool_name)}], value, True
    if value is None:
        return [], None, True
    blocks = _as_blocks(value, tool_name)
    if blocks is not None:
        for block in blocks:
            if isinstance(block, Text):
                _unicode(block.text, tool_name)
        if plain_text(blocks):
            return [{"type": "text", "text": b.text} for b in blocks], None, True
        return [_result_block(b) for b in blocks], None, False
    try:
        data = to_jsonable_python(value, by_alias=True)
        text = json.dumps(
            data, ensure_ascii=False, separators=(",", ":"), allow_nan=False
        )
    except (PydanticSerializationError, ValueError) as exc:
        if nesting(value, RESULT_DEPTH + 1) > RESULT_DEPTH:
            # pydantic's serialiser stops deeper still: "Maximum
            # serialization depth exceeded".
            raise LocalProtocolError(_too_deep(tool_name)) from None
        raise LocalProtocolError(
            f"tool {tool_name!r} returned a {type(value).__name__}, which has no "
            f"JSON form ({exc}); return a str, JSON data (dict, list, numbers), "
            f"a pydantic model or dataclass, or content blocks"
        ) from None
    # The text is the data's JSON: a str anywhere in the data is checked.
    return [{"type": "text", "text": _unicode(text, tool_name)}], data, True


def _unicode(text: str, tool_name: str) -> str:
    return utf8(text, f"tool {tool_name!r} returned text that")


def _as_blocks(value: Any, tool_name: str) -> list[Any] | None:
    if isinstance(value, content_block_types()):
        return [value]
    if isinstance(value, ToolUse | ToolResult):
        raise LocalProtocolError(
            f"tool {tool_name!r} returned a {type(value).__name__} block, which "
            f"belongs to sampling conversations, not to tool results"
        )
    if not isinstance(value, list | tuple) or not value:
        return None
    items = cast("Sequence[Any]", value)
    blocks = content_block_types()
    flags = [isinstance(v, blocks) for v in items]
    if all(flags):
        return list(items)
    if any(flags):
        raise LocalProtocolError(
            f"tool {tool_name!r} returned a list mixing content blocks with other "
            f"values; return only blocks (Text, Image, Audio, ResourceLink, "
            f"EmbeddedResource) or only data"
        )
    return None


def _result_block(block: ResultBlock) -> JSONObject:
    if isinstance(block, Text | Image | Audio):
        return block_to_json(block)
    return block.model_dump(mode="json", by_alias=True, exclude_none=True)

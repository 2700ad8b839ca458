"""Reading a server's ``CallToolResult``, client side.

Owns :class:`ToolCallResult` (content blocks, which may be MCP resources, with
their annotations; structured content; the error flag; the result's
``_meta``) and :func:`call_tool_result`, which accepts a complete result of
either era (a missing ``resultType`` reads as ``"complete"``) and refuses an
interim one.

It does not handle ``input_required`` or task results (the caller does, before
decoding) and reads no sampling or elicitation payload.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeAlias, cast, final

import attrs

from runtime.codec import block_from_json
from runtime.errors import RemoteProtocolError
from runtime.messages import Audio, Image, Text

from ._mcp_wire import JSONObject, json_object, plain_text_block, validate

__all__ = ["ResultBlock", "ToolCallResult", "call_tool_result"]

if TYPE_CHECKING:
    import mcp_types

    ResultBlock: TypeAlias = (
        Text | Image | Audio | mcp_types.ResourceLink | mcp_types.EmbeddedResource
    )
    """A content block of a ``CallToolResult``."""
else:

    def __getattr__(name: str) -> Any:
        # The SDK's models (a quarter of a server's start-up) are imported
        # when a result holds a resource, or when this alias is first used.
        if name == "ResultBlock":
            import mcp_types

            links, resources = mcp_types.ResourceLink, mcp_types.EmbeddedResource
            return Text | Image | Audio | links | resources
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@final
@attrs.frozen(kw_only=True)
class ToolCallResult:
    """A server's answer to ``tools/call`` (MCP ``CallToolResult``), client side.

    It lives here, not in ``runtime``, because its content may hold MCP
    resources (``mcp_types.ResourceLink``, ``mcp_types.EmbeddedResource``),
    which no other protocol has.
    """

    content: tuple[ResultBlock, ...] = ()
    structured_content: Any = None
    is_error: bool = False
    meta: Mapping[str, Any] | None = None
    """The result's ``_meta``, as the server sent it."""

    @property
    def text(self) -> str:
        """The concatenated text of the ``Text`` blocks."""
        return "".join(b.text for b in self.content if isinstance(b, Text))


def call_tool_result(result: object) -> ToolCallResult:
    """The outcome in a server's ``CallToolResult``.

    A missing ``resultType`` reads as ``"complete"`` (older servers); any other
    value (``"input_required"``, ``"task"``) must be handled by the caller before
    decoding, and is refused here.

    Raises:
        RemoteProtocolError: ``result`` is not a valid, complete tool result.
    """
    data = json_object(result, "tool result")
    if not plain_tool_result(data):
        # Only 2026-07-28 results carry resultType: try the era that fits first.
        validate("CallToolResult", data, "tool result", modern="resultType" in data)
    kind = data.get("resultType", "complete")
    if kind != "complete":
        raise RemoteProtocolError(
            f"expected a complete tool result, got resultType {kind!r}; interim "
            f"results are for the caller to handle before decoding"
        )
    return ToolCallResult(
        content=tuple(_result_block(b) for b in data["content"]),
        structured_content=data.get("structuredContent"),
        is_error=data.get("isError") is True,
        meta=data.get("_meta"),
    )


def plain_tool_result(data: JSONObject) -> bool:
    """A ``CallToolResult`` valid in both eras by construction: text blocks,
    maybe an object of structured content, an error flag, ``_meta``.
    Recognised without building either era's models (a fifth of a process's
    start-up); anything else is validated by them."""
    content: Any = data.get("content")
    return (
        data.keys() <= _PLAIN_RESULT_KEYS
        and data.get("resultType", "complete") == "complete"
        and type(data.get("structuredContent", {})) is dict
        and type(data.get("isError", False)) is bool
        and type(data.get("_meta", {})) is dict
        and type(content) is list
        and all(plain_text_block(block) for block in cast(list[Any], content))
    )


_PLAIN_RESULT_KEYS = frozenset(
    {"content", "structuredContent", "isError", "_meta", "resultType"}
)


def _result_block(block: JSONObject) -> ResultBlock:
    kind = block["type"]
    if kind == "resource_link":
        from mcp_types import ResourceLink

        return ResourceLink.model_validate(block)
    if kind == "resource":
        from mcp_types import EmbeddedResource

        return EmbeddedResource.model_validate(block)
    return cast("ResultBlock", block_from_json(block))

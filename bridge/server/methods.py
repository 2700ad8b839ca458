"""MCP method bodies shared by both eras: listing, reading, completing, calling.

Each function takes the :class:`~bridge.server.Server`, the request params and
the era, and returns the result JSON for that era. Era-specific envelopes
(``resultType``, ``ttlMs``...) are added by the modern dispatcher; live
server→client traffic is the business of :mod:`bridge.server.questions`.
"""

from __future__ import annotations

import base64
import difflib
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

import pydantic

from bridge.jsonrpc.messages import INVALID_PARAMS
from encoders import mcp as mcp_encode
from runtime import Message, Text, Tool
from runtime.errors import RequestError, call_failure
from runtime.messages import Audio, Image

from .failures import describe_failure as describe_failure

if TYPE_CHECKING:
    from .catalog import Prompt, Resource, ResourceTemplate
    from .offer import Offer

__all__ = [
    "arguments",
    "complete",
    "describe_failure",
    "list_prompts",
    "list_resources",
    "list_templates",
    "list_tools",
    "progress_token",
    "read_resource",
    "resolve_prompt",
    "resolve_tool",
    "uri_param",
]

log = logging.getLogger("yieldmcp")

RESOURCE_NOT_FOUND_LEGACY = -32002


def _str_param(params: Mapping[str, Any] | None, name: str) -> str:
    value = (params or {}).get(name)
    if not isinstance(value, str):
        raise RequestError(INVALID_PARAMS, f"params.{name} must be a string")
    return value


def progress_token(params: Mapping[str, Any] | None) -> str | int | None:
    """The caller's ``_meta.progressToken``, if it sent a valid one."""
    meta: Any = (params or {}).get("_meta")
    if not isinstance(meta, dict):
        return None
    token: Any = cast("dict[str, Any]", meta).get("progressToken")
    if isinstance(token, bool) or not isinstance(token, str | int):
        return None
    return token


def uri_param(params: Mapping[str, Any] | None) -> str:
    return _str_param(params, "uri")


def arguments(params: Mapping[str, Any]) -> Mapping[str, Any]:
    arguments: Any = params.get("arguments")
    if arguments is None:
        return {}
    if not isinstance(arguments, dict):
        raise RequestError(INVALID_PARAMS, "params.arguments must be an object")
    return cast("dict[str, Any]", arguments)


# --- tools --------------------------------------------------------------------------


def list_tools(server: Offer, params: Mapping[str, Any], era: str) -> dict[str, Any]:
    _no_cursor(params)
    return {
        "tools": [
            mcp_encode.tool_definition(t, era=_era(era)) for t in server.tools.values()
        ]
    }


def resolve_tool(server: Offer, params: Mapping[str, Any]) -> Tool[Any, Any]:
    """The tool named in ``params``.

    Raises:
        RequestError: -32602 for an unknown tool, or ``arguments`` that are not
            an object (checked here, before the tool runs: that is the request
            failing its schema, not the tool's input failing the tool's).
    """
    name = _str_param(params, "name")
    tool = server.tools.get(name)
    if tool is None:
        message = f"Unknown tool: {name}"
        # A typo is the usual cause: name the tool most like it, if one is.
        close = difflib.get_close_matches(name, list(server.tools), n=1)
        if close:
            message += f"; did you mean {close[0]}?"
        raise RequestError(INVALID_PARAMS, message, {"name": name})
    arguments(params)
    return tool


def resolve_prompt(server: Offer, params: Mapping[str, Any]) -> Prompt:
    """The prompt ``params`` names; -32602 for an unknown one."""
    name = _str_param(params, "name")
    prompt = server.prompts.get(name)
    if prompt is None:
        raise RequestError(INVALID_PARAMS, f"Unknown prompt: {name}", {"name": name})
    return prompt


def list_resources(
    server: Offer, params: Mapping[str, Any], era: str
) -> dict[str, Any]:
    _no_cursor(params)
    return {
        "resources": [
            _described({"uri": item.uri, "name": item.name}, item)
            for item in server.resources.values()
        ]
    }


def list_templates(
    server: Offer, params: Mapping[str, Any], era: str
) -> dict[str, Any]:
    _no_cursor(params)
    return {
        "resourceTemplates": [
            _described({"uriTemplate": item.uri_template, "name": item.name}, item)
            for item in server.templates
        ]
    }


def _described(
    entry: dict[str, Any], item: Resource | ResourceTemplate
) -> dict[str, Any]:
    """``entry`` with the item's title, description and MIME type, when set."""
    _put(entry, title=item.title, description=item.description, mimeType=item.mime_type)
    return entry


def read_resource(server: Offer, params: Mapping[str, Any], era: str) -> dict[str, Any]:
    uri = uri_param(params)
    item = server.resources.get(uri)
    if item is not None:
        return {"contents": _contents(uri, item.mime_type, _read(item.read))}
    for template in server.templates:
        variables = template.match(uri)
        if variables is not None:
            value = _read(template.read, variables)
            return {"contents": _contents(uri, template.mime_type, value)}
    code = INVALID_PARAMS if era == "2026-07-28" else RESOURCE_NOT_FOUND_LEGACY
    raise RequestError(code, f"Resource not found: {uri}", {"uri": uri})


def _read(read: Callable[..., Any], *args: Any) -> Any:
    """What a resource's own code gives; its ``SystemExit`` (a library's
    ``sys.exit()``) fails this read, as a tool's fails its call
    (:class:`~runtime.errors.ToolExited`), not the server."""
    try:
        return read(*args)
    except Exception:
        raise
    except BaseException as exc:
        raise call_failure(exc) from None


def _contents(uri: str, mime_type: str | None, value: Any) -> list[dict[str, Any]]:
    if isinstance(value, str):
        entry: dict[str, Any] = {"uri": uri, "text": value}
    elif isinstance(value, bytes):
        entry = {"uri": uri, "blob": base64.b64encode(value).decode()}
    elif isinstance(value, list):
        entries = cast("list[Mapping[str, Any]]", value)
        return [dict(v) for v in entries]
    else:
        kind = type(value).__name__
        raise TypeError(
            f"a resource reader returned {kind}; return str, bytes or a list"
        )
    if mime_type is not None:
        entry["mimeType"] = mime_type
    return [entry]


# --- prompts ------------------------------------------------------------------------


def list_prompts(server: Offer, params: Mapping[str, Any], era: str) -> dict[str, Any]:
    _no_cursor(params)
    out: list[dict[str, Any]] = []
    for item in server.prompts.values():
        entry: dict[str, Any] = {"name": item.name, "arguments": item.arguments()}
        _put(entry, title=item.title, description=item.description)
        out.append(entry)
    return {"prompts": out}


def prompt_result(value: Any, description: str | None) -> dict[str, Any]:
    """The ``GetPromptResult`` JSON for what a prompt body returned."""
    messages: list[dict[str, Any]] = []
    for role, block in _prompt_blocks(value):
        messages.append({"role": role, "content": _prompt_block(block)})
    out: dict[str, Any] = {"messages": messages}
    _put(out, description=description)
    return out


def _prompt_blocks(value: Any) -> list[tuple[str, Any]]:
    if isinstance(value, str):
        return [("user", Text(value))]
    pairs: list[tuple[str, Any]] = []
    for item in value:
        if isinstance(item, Message):
            pairs.extend((item.role, block) for block in item.content)
        else:
            role, block = item
            pairs.append((role, block))
    return pairs


def _prompt_block(block: Any) -> dict[str, Any]:
    if isinstance(block, Text | Image | Audio):
        from runtime import codec

        return codec.block_to_json(block)
    if isinstance(block, pydantic.BaseModel):
        return block.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dict(block)


# --- completion ---------------------------------------------------------------------


def complete(server: Offer, params: Mapping[str, Any], era: str) -> dict[str, Any]:
    ref: Any = params.get("ref")
    argument: Any = params.get("argument")
    if not isinstance(ref, dict) or not isinstance(argument, dict):
        raise RequestError(INVALID_PARAMS, "completion/complete needs ref and argument")
    ref = cast("dict[str, Any]", ref)
    argument = cast("dict[str, Any]", argument)
    target: Any = ref.get("name" if ref.get("type") == "ref/prompt" else "uri")
    name: Any = argument.get("name")
    value: Any = argument.get("value", "")
    if not all(isinstance(text, str) for text in (target, name, value)):
        raise RequestError(
            INVALID_PARAMS,
            "completion/complete: ref.name (or ref.uri), argument.name and "
            "argument.value must be strings",
        )
    completers: Mapping[str, Any] = {}
    if ref.get("type") == "ref/prompt" and target in server.prompts:
        completers = server.prompts[target].complete
    elif ref.get("type") == "ref/resource":
        for template in server.templates:
            if template.uri_template == target:
                completers = template.complete
    completer = completers.get(name)
    values: list[str] = list(completer(value)) if completer else []
    return {
        "completion": {
            "values": values[:100],
            "total": len(values),
            "hasMore": len(values) > 100,
        }
    }


# --- shared -------------------------------------------------------------------------


def _no_cursor(params: Mapping[str, Any]) -> None:
    if params.get("cursor") is not None:
        raise RequestError(
            INVALID_PARAMS, "invalid cursor: this server does not paginate"
        )


def _put(out: dict[str, Any], **values: Any) -> None:
    out.update({k: v for k, v in values.items() if v is not None})


def _era(era: str) -> mcp_encode.Era:
    return "2026-07-28" if era == "2026-07-28" else "2025-11-25"

"""The client's side of the 2026-07-28 HTTP headers (SEP-2243, SEP-2575). Sans-IO.

A modern POST repeats parts of its body in headers so that proxies can route
it without parsing JSON. The server checks them (``_ladder``); this module
builds them:

* ``MCP-Protocol-Version``: the ``_meta`` envelope's version (:func:`envelope_version`);
* ``Mcp-Method``: the JSON-RPC method, exactly;
* ``Mcp-Name``: ``params.name`` for ``tools/call`` and ``prompts/get``,
  ``params.uri`` for ``resources/read``, sent as-is;
* ``Mcp-Param-<H>``: each argument of a ``tools/call`` whose input-schema
  property is annotated ``"x-mcp-header": "<H>"``: booleans as ``true`` /
  ``false``, numbers in decimal, strings plain when header-safe and otherwise
  ``=?base64?…?=`` (``_ladder.encode_param``, the inverse of the server's
  ``decode_param``); a ``null`` or absent argument sends no header.

It also decides which tools a client must drop from a listing
(:func:`invalid_header_reason`): an ``x-mcp-header`` that is empty or not an
RFC 9110 token, sits on a property that is not a string, integer or boolean,
repeats another one case-insensitively, or is not reachable from the root
through ``properties`` alone.

It does no I/O, keeps no state, and never dereferences a ``$ref``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, Final, cast

from bridge.jsonrpc.messages import Message, Notification, Request
from bridge.transports.headers import (
    CLIENT_CAPABILITIES,
    PROTOCOL_VERSION,
    encode_param,
)

__all__ = [
    "HeaderMap",
    "envelope_version",
    "header_map",
    "invalid_header_reason",
    "modern_headers",
    "param_headers",
    "visible_ascii",
]


def visible_ascii(text: str) -> bool:
    """Whether ``text`` is one or more visible ASCII characters (0x21 to
    0x7E): what a value a server gives may be to go back in a header (a
    session id, a protocol version)."""
    return bool(text) and text.isascii() and text.isprintable() and " " not in text


HeaderMap = Mapping[tuple[str, ...], str]
"""Property path (a chain of ``properties`` keys) -> its ``x-mcp-header`` name."""

X_MCP_HEADER: Final = "x-mcp-header"
_NAMED: Final = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    # the tasks extension routes by task (SEP-2663)
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_PRIMITIVE: Final = frozenset({"string", "integer", "boolean"})
# JSON Schema 2020-12 applicators whose values are schemas. Crossing any of
# them leaves the pure ``properties`` chain; ``$ref`` is deliberately absent.
_ONE: Final = frozenset(
    {
        "items",
        "contains",
        "unevaluatedItems",
        "additionalProperties",
        "propertyNames",
        "unevaluatedProperties",
        "not",
        "if",
        "then",
        "else",
        "contentSchema",
    }
)
_LIST: Final = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_MAP: Final = frozenset(
    {"patternProperties", "dependentSchemas", "$defs", "definitions"}
)


def envelope_version(message: Message) -> str | None:
    """The protocol version of a request's 2026 ``_meta`` envelope, if it has one."""
    if not isinstance(message, Request | Notification) or message.params is None:
        return None
    meta: Any = message.params.get("_meta")
    if not isinstance(meta, Mapping):
        return None
    meta = cast(Mapping[str, Any], meta)
    version: Any = meta.get(PROTOCOL_VERSION)
    if isinstance(version, str) and CLIENT_CAPABILITIES in meta:
        return version
    return None


def modern_headers(
    message: Request | Notification, version: str, tools: Mapping[str, HeaderMap]
) -> dict[str, str]:
    """The 2026 headers of one POST; ``tools`` maps tool names to header maps."""
    headers = {"MCP-Protocol-Version": version, "Mcp-Method": message.method}
    params = message.params or {}
    field = _NAMED.get(message.method)
    value: Any = params.get(field) if field is not None else None
    if isinstance(value, str):
        headers["Mcp-Name"] = encode_param(value)
    arguments: Any = params.get("arguments")
    if message.method == "tools/call" and isinstance(arguments, Mapping):
        mapping = tools.get(value) if isinstance(value, str) else None
        if mapping:
            headers.update(param_headers(mapping, cast(Mapping[str, Any], arguments)))
    return headers


def param_headers(mapping: HeaderMap, arguments: Mapping[str, Any]) -> dict[str, str]:
    """The ``Mcp-Param-*`` headers mirroring ``arguments`` per ``mapping``."""
    headers: dict[str, str] = {}
    for path, name in mapping.items():
        text = _render(_value_at(arguments, path))
        if text is not None:
            headers[f"Mcp-Param-{name}"] = encode_param(text)
    return headers


def _render(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if not isinstance(value, int | float | str):
        return None  # null, absent, or not a scalar: no header
    try:
        return str(value)
    except ValueError:  # an int past Python's int-to-str digit limit
        return None


def _value_at(arguments: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = arguments
    for key in path:
        if not isinstance(node, Mapping):
            return None
        node = cast(Mapping[str, Any], node).get(key)
    return node


def header_map(input_schema: Any) -> dict[tuple[str, ...], str]:
    """Each annotated property's path and header name (for a valid schema)."""
    return {
        path: schema[X_MCP_HEADER]
        for path, schema in _positions(input_schema)
        if path and isinstance(schema.get(X_MCP_HEADER), str)
    }


def invalid_header_reason(input_schema: Any) -> str | None:
    """Why a tool's ``x-mcp-header`` annotations are invalid, or None if valid."""
    seen: dict[str, str] = {}
    for path, schema in _positions(input_schema):
        if X_MCP_HEADER not in schema:
            continue
        if not path:
            return f"{X_MCP_HEADER} is only allowed on properties (via 'properties')"
        where = ".".join(path)
        name: Any = schema[X_MCP_HEADER]
        if not isinstance(name, str) or _TOKEN.fullmatch(name) is None:
            return f"property {where!r}: {X_MCP_HEADER} must be a header token"
        kind: Any = schema.get("type")
        if kind not in _PRIMITIVE:
            return (
                f"property {where!r}: {X_MCP_HEADER} is only allowed on string, "
                f"integer and boolean properties, not {kind!r}"
            )
        other = seen.setdefault(name.lower(), where)
        if other != where:
            return f"property {where!r}: {X_MCP_HEADER} {name!r} repeats {other!r}"
    return None


def _positions(
    root: Any,
) -> Iterator[tuple[tuple[str, ...] | None, Mapping[str, Any]]]:
    """Every schema position: its ``properties`` path (None once off that chain)."""
    stack: list[tuple[tuple[str, ...] | None, Any]] = [((), root)]
    while stack:
        path, node = stack.pop()
        if not isinstance(node, Mapping):
            continue
        schema = cast(Mapping[str, Any], node)
        yield path, schema
        for keyword, value in schema.items():
            if keyword == "properties" and isinstance(value, Mapping):
                for name, sub in cast(Mapping[str, Any], value).items():
                    stack.append((None if path is None else (*path, name), sub))
            elif keyword in _ONE:
                stack.append((None, value))
            elif keyword in _LIST and isinstance(value, list):
                stack.extend((None, sub) for sub in cast(list[Any], value))
            elif keyword in _MAP and isinstance(value, Mapping):
                subs = cast(Mapping[str, Any], value).values()
                stack.extend((None, sub) for sub in subs)

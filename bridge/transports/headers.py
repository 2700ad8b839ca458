"""The 2026-07-28 HTTP header checks ("validation ladder"), sans-IO.

A modern POST repeats parts of its body in headers so that proxies can route
it without parsing JSON (SEP-2243, SEP-2575). Before a request reaches the MCP
handler, :func:`check` compares them, in this order; the first failure wins
(rows of the ladder in notes/conformance-fixtures.md §3):

1. the body is JSON (-32700; checked by the caller, which parses it);
2. ``params._meta`` has the envelope keys; if not, :func:`check` lets the
   request through, because the handler owns that rule and answers -32602;
3. ``MCP-Protocol-Version`` equals ``_meta`` ``protocolVersion`` (-32020);
4. that version is supported (-32022, with ``data.supported/requested``);
5. ``Mcp-Method`` equals ``method`` exactly (-32020);
6. ``Mcp-Name`` equals ``params.name`` / ``params.uri`` for ``tools/call``,
   ``prompts/get`` and ``resources/read`` (``params.taskId`` for the tasks
   extension's ``tasks/get``, ``tasks/update``, ``tasks/cancel``), surrounding
   whitespace ignored (-32020);
7. for a tool whose input schema marks a property ``"x-mcp-header": "H"``,
   header ``Mcp-Param-H`` carries that argument: plain, or
   ``=?base64?<strict base64 of UTF-8>?=`` (-32020).

:func:`http_status` maps an error code to the HTTP status of its response.
Headers are given as a mapping with lower-case names. This module does not
parse bodies, run handlers, or know the server's tools beyond the
``x-mcp-header`` map the caller looks up.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Mapping
from typing import Any, Final, cast

from bridge.jsonrpc.messages import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    Request,
)

__all__ = [
    "HEADER_MISMATCH",
    "MISSING_CAPABILITY",
    "UNSUPPORTED_VERSION",
    "check",
    "decode_param",
    "encode_param",
    "header_params",
    "http_status",
]

HEADER_MISMATCH: Final = -32020
MISSING_CAPABILITY: Final = -32021
UNSUPPORTED_VERSION: Final = -32022
PROTOCOL_VERSION: Final = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES: Final = "io.modelcontextprotocol/clientCapabilities"

_NAMED: Final = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    # the tasks extension routes by task (SEP-2663)
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}
_BASE64 = re.compile(r"^=\?base64\?(.*)\?=$", re.DOTALL)
_BAD_REQUEST = frozenset(
    {
        PARSE_ERROR,
        INVALID_REQUEST,
        INVALID_PARAMS,
        HEADER_MISMATCH,
        MISSING_CAPABILITY,
        UNSUPPORTED_VERSION,
    }
)
_METHOD_NOT_FOUND: Final = -32601

HeaderLookup = Callable[[str], Mapping[str, str]]
"""Tool name -> ``{property: header name}`` of its ``x-mcp-header`` properties."""


def http_status(code: int) -> int:
    """The HTTP status of a modern error response with JSON-RPC ``code``."""
    if code == _METHOD_NOT_FOUND:
        return 404
    return 400 if code in _BAD_REQUEST else 200


def _mismatch(message: str) -> ErrorData:
    return ErrorData(HEADER_MISMATCH, message)


def check(
    headers: Mapping[str, str],
    request: Request,
    supported: tuple[str, ...],
    header_params_of: HeaderLookup,
) -> ErrorData | None:
    """The error a modern request's headers earn, or None to hand it on."""
    params = request.params or {}
    meta: Any = params.get("_meta")
    if not isinstance(meta, Mapping) or not _has_envelope(
        cast(Mapping[str, Any], meta)
    ):
        return None  # row 2: the handler answers -32602
    version: Any = cast(Mapping[str, Any], meta)[PROTOCOL_VERSION]
    if headers.get("mcp-protocol-version") != version:
        return _mismatch(
            "MCP-Protocol-Version header does not match the request envelope's "
            "protocol version"
        )
    if version not in supported:
        return ErrorData(
            UNSUPPORTED_VERSION,
            "Unsupported protocol version",
            {"supported": list(supported), "requested": version},
        )
    if headers.get("mcp-method") != request.method:
        return _mismatch("Mcp-Method header does not match the request body's method")
    return _check_name(headers, request.method, params) or _check_params(
        headers, request.method, params, header_params_of
    )


def _has_envelope(meta: Mapping[str, Any]) -> bool:
    return PROTOCOL_VERSION in meta and CLIENT_CAPABILITIES in meta


def _check_name(
    headers: Mapping[str, str], method: str, params: Mapping[str, Any]
) -> ErrorData | None:
    field = _NAMED.get(method)
    if field is None:
        return None
    expected: Any = params.get(field)
    if not isinstance(expected, str):
        return None  # a malformed body: the handler answers -32602
    sent = headers.get("mcp-name")
    try:  # a name that is not header-safe travels as =?base64?...?=
        name = None if sent is None else decode_param(sent.strip(" \t"))
    except ValueError:
        name = None
    if name != expected:
        return _mismatch(
            f"Mcp-Name header does not match the request body's {field!r} parameter"
        )
    return None


def _check_params(
    headers: Mapping[str, str],
    method: str,
    params: Mapping[str, Any],
    header_params_of: HeaderLookup,
) -> ErrorData | None:
    name: Any = params.get("name")
    if method != "tools/call" or not isinstance(name, str):
        return None
    arguments: Any = params.get("arguments") or {}
    if not isinstance(arguments, Mapping):
        return None
    arguments = cast(Mapping[str, Any], arguments)
    for prop, header in header_params_of(name).items():
        if not _param_matches(
            headers.get(f"mcp-param-{header.lower()}"), arguments.get(prop)
        ):
            return _mismatch(
                f"Mcp-Param-{header} header does not match the {prop!r} argument"
            )
    return None


def _param_matches(sent: str | None, value: Any) -> bool:
    expected = _as_header_text(value)
    if sent is None or expected is None:
        return sent is None and value is None
    try:
        return decode_param(sent) == expected
    except ValueError:
        return False


def _as_header_text(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | str):
        return str(value)
    return None


def decode_param(value: str) -> str:
    """The text an ``Mcp-Param-*`` header carries (plain or strict base64).

    Raises:
        ValueError: a ``=?base64?…?=`` value that is not canonical base64 of
            UTF-8 text.
    """
    found = _BASE64.match(value)
    if found is None:
        return value
    try:
        return base64.b64decode(found[1], validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError) as exc:
        raise ValueError("malformed base64 in an Mcp-Param header") from exc


def encode_param(text: str) -> str:
    """How a client puts ``text`` in a header: plain if header-safe, else base64."""
    safe = all(" " <= c <= "~" for c in text) and text == text.strip(" \t")
    if safe and _BASE64.match(text) is None:
        return text
    return f"=?base64?{base64.b64encode(text.encode()).decode()}?="


def header_params(input_schema: Mapping[str, Any]) -> dict[str, str]:
    """``{property: header}`` for the ``x-mcp-header`` properties of a schema."""
    properties: Any = input_schema.get("properties")
    if not isinstance(properties, Mapping):
        return {}
    out: dict[str, str] = {}
    for prop, schema in cast(Mapping[str, Any], properties).items():
        if not isinstance(schema, Mapping):
            continue
        header: Any = cast(Mapping[str, Any], schema).get("x-mcp-header")
        if isinstance(header, str) and header:
            out[prop] = header
    return out

"""The client's 2026-07-28 headers (``_mirror``), checked against the server's ladder.

Hypothesis builds tools with ``x-mcp-header`` properties and arbitrary
arguments; whatever the client sends must pass the server's own header checks
(``_ladder.check``), so ``Mcp-Param-*`` values round-trip through its decoder.
The validity rules are checked case by case with the conformance suite's
invalid tools (``http-invalid-tool-headers``).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bridge.client.headers import (
    envelope_version,
    header_map,
    invalid_header_reason,
    modern_headers,
    param_headers,
)
from bridge.jsonrpc import Request
from bridge.transports import headers as _ladder

MODERN = "2026-07-28"
ENVELOPE: dict[str, Any] = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}
TOKEN_CHARS = (
    "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
)

kinds = st.sampled_from(["string", "integer", "boolean"])
values = {
    "string": st.text(),
    "integer": st.integers(min_value=-(10**30), max_value=10**30),
    "boolean": st.booleans(),
}


@st.composite
def tools_and_arguments(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    """A tool schema with annotated properties, and arguments for it."""
    names = draw(
        st.lists(
            st.text(TOKEN_CHARS, min_size=1, max_size=12),
            max_size=6,
            unique_by=str.lower,
        )
    )
    properties: dict[str, Any] = {"plain": {"type": "string"}}
    arguments: dict[str, Any] = {"plain": draw(st.text())}
    for index, name in enumerate(names):
        kind = draw(kinds)
        prop = f"p{index}"
        properties[prop] = {"type": kind, "x-mcp-header": name}
        choice = draw(st.sampled_from(["value", "null", "absent"]))
        if choice == "value":
            arguments[prop] = draw(values[kind])
        elif choice == "null":
            arguments[prop] = None
    return {"type": "object", "properties": properties}, arguments


def _call(arguments: dict[str, Any], name: str = "tool") -> Request:
    params = {"name": name, "arguments": arguments, "_meta": ENVELOPE}
    return Request(7, "tools/call", params)


@given(tools_and_arguments())
def test_the_server_accepts_every_header_set_the_client_builds(
    drawn: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    schema, arguments = drawn
    assert invalid_header_reason(schema) is None
    request = _call(arguments)
    sent = modern_headers(request, MODERN, {"tool": header_map(schema)})
    assert all(value.isascii() for value in sent.values())
    lowered = {name.lower(): value for name, value in sent.items()}
    lookup = {"tool": _ladder.header_params(schema)}
    assert _ladder.check(lowered, request, (MODERN,), lookup.__getitem__) is None


@given(st.text())
def test_a_string_travels_plain_exactly_when_it_is_header_safe(text: str) -> None:
    (value,) = param_headers({("s",): "S"}, {"s": text}).values()
    safe = text.isascii() and text.isprintable() and text == text.strip()
    looks_encoded = re.fullmatch(r"=\?base64\?.*\?=", text, re.DOTALL) is not None
    assert (value == text) == (safe and not looks_encoded)
    assert _ladder.decode_param(value) == text


@pytest.mark.parametrize(
    ("value", "sent"),
    [
        ("us-west1", "us-west1"),
        ("us west 1", "us west 1"),
        ("", ""),
        (42, "42"),
        (True, "true"),
        (False, "false"),
        (" padded ", "=?base64?IHBhZGRlZCA=?="),
        ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
        ("line1\r\nline2", "=?base64?bGluZTENCmxpbmUy?="),
    ],
)
def test_values_are_encoded_as_the_conformance_suite_expects(
    value: Any, sent: str
) -> None:
    assert param_headers({("v",): "V"}, {"v": value}) == {"Mcp-Param-V": sent}


def test_null_absent_and_unannotated_arguments_send_no_header() -> None:
    mapping = {("verbose",): "Verbose", ("debug",): "Debug"}
    assert param_headers(mapping, {"verbose": None, "query": "SELECT 1"}) == {}


@given(st.text(min_size=1), st.sampled_from(["resources/read", "prompts/get"]))
def test_any_name_travels_header_safe_and_the_server_matches_it(
    name: str, method: str
) -> None:
    field = "uri" if method == "resources/read" else "name"
    request = Request(1, method, {field: name, "_meta": ENVELOPE})
    sent = modern_headers(request, MODERN, {})
    assert all(value.isascii() for value in sent.values())
    lowered = {key.lower(): value for key, value in sent.items()}
    assert _ladder.check(lowered, request, (MODERN,), {}.__getitem__) is None
    wrong = Request(1, method, {field: name + "x", "_meta": ENVELOPE})
    assert _ladder.check(lowered, wrong, (MODERN,), {}.__getitem__) is not None


def test_the_standard_headers_name_the_method_and_target() -> None:
    read = Request(1, "resources/read", {"uri": "file:///a%20b.txt", "_meta": ENVELOPE})
    prompt = Request(2, "prompts/get", {"name": "test_prompt"})
    listing = Request(3, "tools/list", {"_meta": ENVELOPE})
    assert modern_headers(read, MODERN, {}) == {
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "resources/read",
        "Mcp-Name": "file:///a%20b.txt",
    }
    assert modern_headers(prompt, MODERN, {})["Mcp-Name"] == "test_prompt"
    assert "Mcp-Name" not in modern_headers(listing, MODERN, {})


def test_a_header_named_method_is_a_param_header_not_mcp_method() -> None:
    schema = {"properties": {"m": {"type": "string", "x-mcp-header": "Method"}}}
    request = _call({"m": "test-method"})
    sent = modern_headers(request, MODERN, {"tool": header_map(schema)})
    assert (sent["Mcp-Method"], sent["Mcp-Param-Method"]) == (
        "tools/call",
        "test-method",
    )


def test_the_envelope_version_needs_both_envelope_keys() -> None:
    assert envelope_version(Request(1, "tools/list", {"_meta": ENVELOPE})) == MODERN
    partial = {"io.modelcontextprotocol/protocolVersion": MODERN}
    assert envelope_version(Request(1, "tools/list", {"_meta": partial})) is None
    assert envelope_version(Request(1, "initialize", {})) is None


def _one(prop: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"value": prop}}


INVALID = {
    "empty": _one({"type": "string", "x-mcp-header": ""}),
    "object": _one({"type": "object", "x-mcp-header": "Data"}),
    "array": _one({"type": "array", "x-mcp-header": "Items"}),
    "null": _one({"type": "null", "x-mcp-header": "Nil"}),
    "number": _one({"type": "number", "x-mcp-header": "Score"}),
    "untyped": _one({"x-mcp-header": "Any"}),
    "space": _one({"type": "string", "x-mcp-header": "My Region"}),
    "colon": _one({"type": "string", "x-mcp-header": "Region:Primary"}),
    "non-ascii": _one({"type": "string", "x-mcp-header": "Région"}),
    "control": _one({"type": "string", "x-mcp-header": "Region\t1"}),
    "not a string": _one({"type": "string", "x-mcp-header": 7}),
    "same case": {
        "properties": {
            "a": {"type": "string", "x-mcp-header": "Region"},
            "b": {"type": "string", "x-mcp-header": "Region"},
        }
    },
    "other case": {
        "properties": {
            "a": {"type": "string", "x-mcp-header": "MyField"},
            "b": {"type": "string", "x-mcp-header": "myfield"},
        }
    },
    "off the properties chain": {
        "anyOf": [{"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}]
    },
    "on the root": {"type": "object", "x-mcp-header": "Root"},
}


@pytest.mark.parametrize("schema", INVALID.values(), ids=INVALID.keys())
def test_invalid_annotations_are_named(schema: dict[str, Any]) -> None:
    assert invalid_header_reason(schema) is not None


def test_valid_annotations_may_nest_through_properties() -> None:
    schema = {
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "where": {
                "type": "object",
                "properties": {"zone": {"type": "integer", "x-mcp-header": "Zone"}},
            },
            "profile": {"$ref": "http://localhost:1/never-fetched.json"},
        },
    }
    assert invalid_header_reason(schema) is None
    assert header_map(schema) == {("region",): "Region", ("where", "zone"): "Zone"}
    arguments = {"region": "eu", "where": {"zone": 3}}
    assert param_headers(header_map(schema), arguments) == {
        "Mcp-Param-Region": "eu",
        "Mcp-Param-Zone": "3",
    }

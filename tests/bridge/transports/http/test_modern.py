"""Streamable HTTP, 2026-07-28 rules, over real loopback HTTP with raw httpx.

Routing by header, the header ladder with its HTTP statuses (the JSON-RPC id
echoed in every error), JSON-or-SSE answers without server requests,
``subscriptions/listen``, and the methods the modern path refuses.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import trio
from pydantic import BaseModel, Field

from bridge.server import Server, prompt
from runtime import Context, Op, tool
from tests.bridge.http_kit import MODERN, Raw, served
from tests.fixtures import http_tools

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
}


class Region(BaseModel):
    region: str = Field("none", json_schema_extra={"x-mcp-header": "Region"})


@tool
def regional(params: Region, ctx: Context) -> str:
    """Echoes a header-mirrored argument."""
    return f"region={params.region}"


RAN: list[str] = []


@tool
def tally(ctx: Context) -> str:
    """Records that it ran."""
    RAN.append("tally")
    return "counted"


@tool
def progress(ctx: Context) -> Op[str]:
    """Reports progress, which turns the answer into an event stream."""
    for step in (1, 2):
        yield ctx.progress(step, 2)
    return "done"


def server() -> Server:
    return Server(
        [http_tools.echo, http_tools.ask_name, regional, progress, tally],
        name="modern-test",
    )


@pytest.fixture
async def raw() -> AsyncIterator[Raw]:
    async with served(server()) as url, httpx.AsyncClient(timeout=10) as http:
        yield Raw(http, url, era=MODERN)


def _body(raw: Raw, request_id: Any, method: str, **params: Any) -> dict[str, Any]:
    return raw.request(request_id, method, {**params, "_meta": dict(ENVELOPE)})


def _headers(method: str, name: str | None = None, **extra: str) -> dict[str, str]:
    out = {"mcp_method": method, **extra}
    if name is not None:
        out["mcp_name"] = name
    return out


async def test_discover_answers_as_single_line_json(raw: Raw) -> None:
    with trio.fail_after(10):
        response = await raw.post(
            _body(raw, 1, "server/discover"), **_headers("server/discover")
        )
    assert response.status_code == 200
    assert "mcp-session-id" not in response.headers
    assert MODERN in raw.checked_body(response)["result"]["supportedVersions"]


async def test_a_tool_call_with_matching_headers_completes(raw: Raw) -> None:
    body = _body(raw, "c1", "tools/call", name="echo", arguments={"text": "hi"})
    with trio.fail_after(10):
        response = await raw.post(body, **_headers("tools/call", "echo"))
    result = raw.checked_body(response)["result"]
    assert result["content"] == [{"type": "text", "text": "hi"}]
    assert result["resultType"] == "complete"


@pytest.mark.parametrize(
    ("headers", "status", "code"),
    [
        (_headers("prompts/list"), 400, -32020),
        ({}, 400, -32020),
        (_headers("TOOLS/LIST"), 400, -32020),
        (_headers("tools/list", mcp_protocol_version="2026-01-01"), 400, -32020),
    ],
)
async def test_header_mismatches_are_400_with_the_id_echoed(
    raw: Raw, headers: dict[str, str], status: int, code: int
) -> None:
    with trio.fail_after(10):
        response = await raw.post(_body(raw, 105, "tools/list"), **headers)
    assert response.status_code == status
    body = raw.checked_body(response)
    assert body["id"] == 105
    assert body["error"]["code"] == code


@pytest.mark.parametrize("name", ["echo", None, "", "TALLY", "tally, tally"])
async def test_a_tool_call_whose_mcp_name_differs_is_refused_unrun(
    raw: Raw, name: str | None
) -> None:
    RAN.clear()
    body = _body(raw, "n1", "tools/call", name="tally")
    with trio.fail_after(10):
        response = await raw.post(body, **_headers("tools/call", name))
        # The same request with the right header runs: the refusal was the header.
        ran_before = list(RAN)
        good = await raw.post(
            _body(raw, "n2", "tools/call", name="tally"),
            **_headers("tools/call", "tally"),
        )
    assert response.status_code == 400
    answer = raw.checked_body(response)
    assert answer["id"] == "n1"
    assert answer["error"]["code"] == -32020
    assert "Mcp-Name" in answer["error"]["message"]
    assert ran_before == []
    assert raw.checked_body(good)["result"]["content"][0]["text"] == "counted"
    assert RAN == ["tally"]


async def test_a_base64_mcp_name_is_decoded_before_it_is_compared(raw: Raw) -> None:
    uri = "mem://café"
    body = _body(raw, 13, "resources/read", uri=uri)
    encoded = "=?base64?bWVtOi8vY2Fmw6k=?="
    with trio.fail_after(10):
        response = await raw.post(body, **_headers("resources/read", encoded))
    error = raw.checked_body(response)["error"]
    assert error["code"] == -32602  # no such resource: the header matched


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("initialize", {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        }),
        ("tools/list", {}),
        ("tools/call", {"name": "tally", "_meta": {}}),
        ("tools/call", {"name": "tally", "_meta": {
            "io.modelcontextprotocol/clientCapabilities": {}
        }}),
    ],
)  # fmt: skip
async def test_a_modern_request_without_the_envelope_is_invalid_params(
    raw: Raw, method: str, params: dict[str, Any]
) -> None:
    RAN.clear()
    name = params.get("name")
    with trio.fail_after(10):
        response = await raw.post(
            raw.request(12, method, params), **_headers(method, name)
        )
    assert response.status_code == 400
    assert "mcp-session-id" not in response.headers
    answer = raw.checked_body(response)
    assert (answer["id"], answer["error"]["code"]) == (12, -32602)
    assert "io.modelcontextprotocol/protocolVersion" in answer["error"]["message"]
    assert RAN == []


async def test_an_unsupported_version_is_named_with_what_is_supported(raw: Raw) -> None:
    meta = {**ENVELOPE, "io.modelcontextprotocol/protocolVersion": "v999.0.0"}
    body = raw.request(301, "server/discover", {"_meta": meta})
    raw.version = "v999.0.0"
    with trio.fail_after(10):
        response = await raw.post(body, **_headers("server/discover"))
    assert response.status_code == 400
    error = raw.checked_body(response)["error"]
    assert error["code"] == -32022
    assert error["data"] == {"supported": [MODERN], "requested": "v999.0.0"}


async def test_a_missing_envelope_is_the_handlers_invalid_params(raw: Raw) -> None:
    body = raw.request(102, "server/discover", {"_meta": {}})
    with trio.fail_after(10):
        response = await raw.post(body, **_headers("server/discover"))
    assert response.status_code == 400
    assert raw.checked_body(response)["error"]["code"] == -32602


@pytest.mark.parametrize("method", ["initialize", "ping", "unknown/method"])
async def test_unknown_methods_are_404(raw: Raw, method: str) -> None:
    with trio.fail_after(10):
        response = await raw.post(_body(raw, 500, method), **_headers(method))
    assert response.status_code == 404
    body = raw.checked_body(response)
    assert (body["id"], body["error"]["code"]) == (500, -32601)


@pytest.mark.parametrize(
    ("header", "region", "ok"),
    [
        ("=?base64?SGVsbG8=?=", "Hello", True),
        ("=?base64?SGVsbG8?=", "Hello", False),
        ("SGVsbG8=", "SGVsbG8=", True),
        (None, "test-value", False),
    ],
)
async def test_param_headers_must_mirror_their_arguments(
    raw: Raw, header: str | None, region: str, ok: bool
) -> None:
    body = _body(raw, 7, "tools/call", name="regional", arguments={"region": region})
    extra = {} if header is None else {"mcp_param_region": header}
    with trio.fail_after(10):
        response = await raw.post(body, **_headers("tools/call", "regional", **extra))
    answer = raw.checked_body(response)
    if ok:
        assert answer["result"]["content"][0]["text"] == f"region={region}"
    else:
        assert (response.status_code, answer["error"]["code"]) == (400, -32020)


async def test_notifications_first_turn_the_answer_into_an_event_stream(
    raw: Raw,
) -> None:
    meta = {**ENVELOPE, "progressToken": "tok"}
    body = raw.request(9, "tools/call", {"name": "progress", "_meta": meta})
    with trio.fail_after(10):
        async with raw.stream("POST", body, **_headers("tools/call", "progress")) as (
            response,
            reader,
        ):
            assert response.headers["content-type"] == "text/event-stream"
            events = await reader.rest()
    messages = [raw.check(json.loads(e.data)) for e in events]
    assert [m.get("method") for m in messages] == [
        "notifications/progress",
        "notifications/progress",
        None,
    ]
    assert messages[-1]["result"]["content"][0]["text"] == "done"


async def test_a_question_becomes_input_required_never_a_request_frame(
    raw: Raw,
) -> None:
    body = _body(raw, 11, "tools/call", name="ask_name")
    with trio.fail_after(10):
        response = await raw.post(body, **_headers("tools/call", "ask_name"))
    result = raw.checked_body(response)["result"]
    assert result["resultType"] == "input_required"
    assert result["inputRequests"]["name"]["method"] == "elicitation/create"


async def test_notifications_are_accepted_and_dropped(raw: Raw) -> None:
    note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {}}
    with trio.fail_after(10):
        response = await raw.post(note, **_headers("notifications/cancelled"))
    assert (response.status_code, response.content) == (202, b"")


@pytest.mark.parametrize("method", ["GET", "DELETE"])
async def test_get_and_delete_are_not_allowed(raw: Raw, method: str) -> None:
    with trio.fail_after(10):
        response = await raw.http.request(method, raw.url, headers=raw.headers())
    assert response.status_code == 405


async def test_listen_acknowledges_tags_and_filters() -> None:
    served_server = server()
    async with served(served_server) as url, httpx.AsyncClient(timeout=10) as http:
        raw = Raw(http, url, era=MODERN)

        def listen(request_id: int, **wanted: bool) -> dict[str, Any]:
            return _body(raw, request_id, "subscriptions/listen", notifications=wanted)

        headers = _headers("subscriptions/listen")
        with trio.fail_after(10):
            async with (
                raw.stream("POST", listen(1, toolsListChanged=True), **headers) as (
                    _,
                    tools,
                ),
                raw.stream("POST", listen(2, promptsListChanged=True), **headers) as (
                    _,
                    prompts,
                ),
            ):
                acks = [await tools.next(), await prompts.next()]
                served_server.add(http_tools.added_later)
                tools_changed = await tools.next()

                @prompt(name="later", description="A prompt added later.")
                def later(ctx: Context) -> str:
                    return "later"

                served_server.add(later)
                prompts_changed = await prompts.next()
    assert acks[0] is not None
    assert acks[1] is not None
    ack = raw.check(json.loads(acks[0].data))
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"]["notifications"] == {"toolsListChanged": True}
    assert ack["params"]["_meta"] == {"io.modelcontextprotocol/subscriptionId": 1}
    assert tools_changed is not None
    assert prompts_changed is not None
    changed = [json.loads(e.data) for e in (tools_changed, prompts_changed)]
    assert [raw.check(c)["method"] for c in changed] == [
        "notifications/tools/list_changed",
        "notifications/prompts/list_changed",
    ]
    assert changed[1]["params"]["_meta"] == {
        "io.modelcontextprotocol/subscriptionId": 2
    }

"""No POST, however malformed, makes the HTTP endpoint fail or stop serving.

One server on real loopback HTTP takes every example: random bytes, random
JSON, and JSON-RPC-shaped bodies (random methods, params, ids, some with the
2026-07-28 ``_meta`` envelope), each posted to ``/mcp`` with random, valid and
invalid, ``Content-Type``, ``Accept``, ``MCP-Protocol-Version``,
``Mcp-Session-Id`` (sometimes a live session's), ``Mcp-Method`` and
``Mcp-Name`` headers. Every answer must have a status below 500 and arrive
whole (no dropped connection, no hang); a JSON body must be a JSON-RPC
response (an error or a result, with the request's id or none), and an event
stream must carry JSON-RPC messages ending with the response. Afterwards a
normal client still gets a session and a tool result, in both eras.

Hypothesis drives the examples from a worker thread; each example runs on the
test's trio loop (``trio.from_thread``), where the server lives.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import httpx
import pydantic_core
import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

from bridge.client import Client
from bridge.client.http import http_transport
from bridge.server import Server
from bridge.transports.headers import encode_param
from bridge.transports.http import HttpLimits
from bridge.transports.sse import SseParser
from tests.bridge.http_kit import JSON_HEADERS, LEGACY, MODERN, served
from tests.bridge.server.test_fuzz import json_values
from tests.fixtures import http_tools
from tests.mcp_schema import validate_message

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

LIVE = "<the live session>"  # replaced by a real session id when posting
PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
# Nothing here waits on the client: subscriptions/listen and tools that ask
# questions keep a stream open by design, which is not what this test is about.
METHODS = [
    "initialize",
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/progress",
    "ping",
    "server/discover",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/read",
    "resources/subscribe",
    "prompts/list",
    "prompts/get",
    "logging/setLevel",
    "completion/complete",
]
VERSIONS = [
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
    "2026-01-01",
    "garbage",
    "",
]

header_text = st.text(
    st.characters(min_codepoint=0x21, max_codepoint=0x7E), max_size=24
)
ids = st.one_of(
    st.integers(), st.text(max_size=8), st.none(), st.booleans(), st.floats()
)
methods = st.sampled_from(METHODS) | st.text(max_size=16)
versions = st.sampled_from(VERSIONS) | header_text
names = st.sampled_from(["echo", "chatty", "missing"]) | st.text(max_size=8)
meta = st.fixed_dictionaries(
    {},
    optional={
        PROTOCOL_VERSION: versions | json_values,
        CLIENT_CAPABILITIES: st.just({}) | json_values,
        "progressToken": ids,
    },
)
params = st.fixed_dictionaries(
    {},
    optional={
        "name": names,
        "arguments": st.fixed_dictionaries({"text": st.text(max_size=8)}) | json_values,
        "uri": st.text(max_size=16),
        "protocolVersion": versions,
        "capabilities": st.just({}) | json_values,
        "clientInfo": st.just({"name": "fuzz", "version": "1"}) | json_values,
        "level": st.sampled_from(["info", "debug", "nope"]),
        "_meta": meta,
    },
)
rpc_shaped = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.sampled_from(["2.0", "2.0", "1.0", 2]),
        "id": ids,
        "method": methods,
        "params": params | json_values,
        "result": json_values,
        "error": json_values,
    },
)


def encode(value: Any) -> bytes:
    return pydantic_core.to_json(value)


bodies = st.one_of(
    st.binary(max_size=200),
    json_values.map(encode),
    rpc_shaped.map(encode),
    rpc_shaped.map(encode),
    rpc_shaped.map(encode),
    st.just(b"[" * 5000 + b"]" * 5000),
    st.integers(min_value=2**63).map(
        lambda n: f'{{"jsonrpc":"2.0","id":{n},"method":"ping"}}'.encode()
    ),
)


HEADERS = [
    "content-type",
    "accept",
    "mcp-protocol-version",
    "mcp-session-id",
    "mcp-method",
    "mcp-name",
]


_OTHER = object()


@st.composite
def _header(draw: st.DrawFn, values: st.SearchStrategy[str], *common: str) -> Any:
    """A header value: most often one of ``common``; else none, or any other."""
    choice = draw(st.sampled_from([*common * 3, None, _OTHER]))
    return draw(values) if choice is _OTHER else choice


random_headers = st.fixed_dictionaries(
    {
        "content-type": _header(
            header_text, "application/json", "application/json; charset=utf-8"
        ),
        "accept": _header(
            header_text | st.just("text/html"),
            "application/json, text/event-stream",
            "*/*",
        ),
        "mcp-protocol-version": _header(versions, LEGACY, MODERN),
        "mcp-session-id": _header(header_text, LIVE),
        "mcp-method": _header(st.sampled_from(METHODS) | header_text),
        "mcp-name": _header(st.sampled_from(["echo", "chatty"]) | header_text),
    }
)
random_posts = st.tuples(random_headers, bodies)


@st.composite
def coherent_posts(draw: st.DrawFn) -> tuple[dict[str, Any], bytes]:
    """A well-formed request of either era; one time in four, a header changed."""
    method = draw(st.sampled_from(METHODS))
    modern = draw(st.booleans())
    version = MODERN if modern else LEGACY
    params: dict[str, Any] = {}
    name: str | None = None
    if method in ("tools/call", "prompts/get"):
        params["name"] = name = draw(names)
    if method == "tools/call":
        params["arguments"] = draw(
            st.fixed_dictionaries({"text": st.text(max_size=8)}) | json_values
        )
    if method == "resources/read":
        params["uri"] = name = draw(st.text(max_size=16))
    if method == "initialize":
        params["protocolVersion"] = draw(versions)
        params["capabilities"] = {}
        params["clientInfo"] = {"name": "fuzz", "version": "1"}
    if modern:
        params["_meta"] = {PROTOCOL_VERSION: version, CLIENT_CAPABILITIES: {}}
    body: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if not method.startswith("notifications/"):
        body["id"] = draw(st.integers(0, 2**31) | st.text(max_size=8))
    headers: dict[str, Any] = {**JSON_HEADERS, "mcp-protocol-version": version}
    if modern:
        headers["mcp-method"] = method
        if name is not None:
            headers["mcp-name"] = encode_param(name)
    else:
        headers["mcp-session-id"] = LIVE
    if draw(st.integers(0, 3)) == 0:
        changed = draw(st.sampled_from(HEADERS))
        headers[changed] = draw(st.none() | versions | header_text)
    return headers, encode(body)


posts = st.one_of(coherent_posts(), random_posts)


def check_message(message: Any) -> Mapping[str, Any]:
    """A JSON-RPC message from the server: a request, notification or response."""
    assert isinstance(message, dict), message
    assert message.get("jsonrpc") == "2.0", message
    if "method" in message:
        assert isinstance(message["method"], str), message
        return message
    assert ("result" in message) != ("error" in message), message
    if "error" in message:
        for era in (LEGACY, MODERN):  # an error response is the same in both
            validate_message(era, message)
    else:
        assert isinstance(message["result"], dict), message
    request_id = message.get("id")
    assert request_id is None or isinstance(request_id, int | str), message
    assert not isinstance(request_id, bool), message
    return message


def check_response(message: Any, sent: bytes) -> None:
    """A response to what was ``sent``: with its id, or with none."""
    check_message(message)
    assert "method" not in message, message
    if "id" in message:
        posted = json.loads(sent)
        assert isinstance(posted, dict), message
        assert message["id"] == posted.get("id"), message


async def post_one(
    http: httpx.AsyncClient, url: str, sent: dict[str, str], body: bytes
) -> None:
    """Post one example; check the answer."""
    with trio.fail_after(10):
        async with http.stream("POST", url, content=body, headers=sent) as response:
            content = await response.aread()
    assert response.status_code < 500, (response.status_code, content)
    kind = response.headers.get("content-type", "")
    if kind.startswith("application/json"):
        check_response(json.loads(content), body)
    elif kind.startswith("text/event-stream"):
        assert response.status_code == 200
        events = [e for e in SseParser().feed(content) if e.data]
        assert events, content  # a stream always ends with the response
        for event in events[:-1]:
            check_message(json.loads(event.data))
        check_response(json.loads(events[-1].data), body)
    else:
        assert not kind or kind.startswith("text/plain"), kind


async def open_session(http: httpx.AsyncClient, url: str) -> str:
    """A live 2025-11-25 session for the examples to aim at; its id."""
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": LEGACY,
            "capabilities": {},
            "clientInfo": {"name": "fuzz", "version": "1"},
        },
    }
    sent = {**JSON_HEADERS, "mcp-protocol-version": LEGACY}
    response = await http.post(url, content=encode(init), headers=sent)
    assert response.status_code == 200
    session_id = response.headers["mcp-session-id"]
    note = encode({"jsonrpc": "2.0", "method": "notifications/initialized"})
    sent["mcp-session-id"] = session_id
    assert (await http.post(url, content=note, headers=sent)).status_code == 202
    return session_id


async def a_session_still_works(url: str, era: str) -> None:
    async with (
        http_transport(url) as transport,
        Client.connect(transport, era=era) as client,  # type: ignore[arg-type]
    ):
        result = await client.call_tool("echo", {"text": "still here"})
    assert result.text == "still here"


async def test_no_post_breaks_the_endpoint() -> None:
    server = Server([http_tools.echo, http_tools.chatty], name="http-fuzz")
    # Sessions opened by examples stay (idle) for the whole test: no 503s.
    limits = HttpLimits(max_sessions=10_000)
    async with (
        served(server, limits=limits) as url,
        httpx.AsyncClient(timeout=10) as http,
    ):
        with trio.fail_after(10):
            live = await open_session(http, url)

        @given(posts)
        def examples(post: tuple[dict[str, Any], bytes]) -> None:
            chosen, body = post
            sent = {
                name: live if value == LIVE else value
                for name, value in chosen.items()
                if value is not None
            }
            trio.from_thread.run(post_one, http, url, sent, body)

        await trio.to_thread.run_sync(examples)
        with trio.fail_after(10):
            await a_session_still_works(url, "legacy")
            await a_session_still_works(url, "2026-07-28")

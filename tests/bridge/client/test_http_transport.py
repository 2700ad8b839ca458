"""Our client's Streamable HTTP transport against a scripted endpoint.

The endpoint (``http_mock``) records every HTTP request, so these tests check
what goes on the wire in each era: session and version headers, the
standalone stream, resumption after the server's ``retry:``, cancellation by
closing the stream, and how HTTP failures surface.
"""

from __future__ import annotations

import json
import re
import socket
from typing import Any

import pytest
import trio

from bridge.client import connect
from runtime.errors import (
    BrokenSessionError,
    PeerError,
    RemoteProtocolError,
    RequestTimeout,
)
from tests.bridge.client.http_mock import Hit, Reply, scripted

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
SESSION = "session-1"
INIT: dict[str, Any] = {
    "protocolVersion": LEGACY,
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "mock", "version": "1"},
}
DISCOVER: dict[str, Any] = {
    "resultType": "complete",
    "ttlMs": 0,
    "cacheScope": "private",
    "supportedVersions": [MODERN],
    "capabilities": {"tools": {}},
}
DONE = {"content": [{"type": "text", "text": "done"}]}


def result(hit: Hit, value: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": hit.body["id"], "result": value}


def log(text: str) -> dict[str, Any]:
    params = {"level": "info", "data": text}
    return {"jsonrpc": "2.0", "method": "notifications/message", "params": params}


async def lifecycle(hit: Hit, reply: Reply) -> bool:
    """Answer the handshake, notifications, a plain GET and DELETE; True if done."""
    if hit.verb == "DELETE":
        await reply.text(200)
    elif hit.verb == "GET" and "last-event-id" not in hit.headers:
        await reply.text(405, "no standalone stream")
    elif hit.method == "initialize":
        await reply.json(result(hit, INIT), mcp_session_id=SESSION)
    elif hit.method == "server/discover":
        await reply.json(result(hit, DISCOVER), mcp_session_id="ignored")
    elif hit.method == "logging/setLevel":
        await reply.json(result(hit, {}))
    elif hit.verb == "POST" and hit.method is not None and not hit.has_id:
        await reply.accepted()
    else:
        return False
    return True


async def test_a_legacy_session_carries_its_id_and_version_and_is_deleted() -> None:
    async def route(hit: Hit, reply: Reply) -> None:
        if not await lifecycle(hit, reply):
            await reply.json(result(hit, {"tools": []}), mcp_session_id=SESSION)

    with trio.fail_after(10):
        async with (
            scripted(route) as (url, mock),
            connect(url, era="legacy") as client,
        ):
            await client.list_tools()
    init, initialized, listen, listing, delete = mock.hits
    assert "mcp-session-id" not in init.headers
    assert "mcp-protocol-version" not in init.headers
    assert initialized.method == "notifications/initialized"
    assert (listen.verb, listen.headers["accept"]) == ("GET", "text/event-stream")
    for hit in (initialized, listen, listing, delete):
        assert hit.headers["mcp-session-id"] == SESSION
        assert hit.headers["mcp-protocol-version"] == LEGACY
    assert listing.headers["accept"] == "application/json, text/event-stream"
    assert listing.headers["content-type"] == "application/json"
    assert delete.verb == "DELETE"


async def test_a_delete_the_server_never_answers_holds_the_close_briefly() -> None:
    # Closing waited the transport's 30 s timeout, shielded: --timeout and
    # Ctrl-C came 30 s late. It waits CLOSE_TIMEOUT (2 s), as stdio does.
    async def route(hit: Hit, reply: Reply) -> None:
        if hit.verb == "DELETE":
            await trio.sleep_forever()
        if not await lifecycle(hit, reply):
            await reply.json(result(hit, {"tools": []}))

    with trio.fail_after(10):
        async with scripted(route) as (url, mock):
            gives_up = trio.current_time() + 1
            with trio.move_on_at(gives_up):  # the caller gives up on a call
                async with connect(url, era="legacy") as client:
                    await client.list_tools()
                    await trio.sleep_forever()
            closing = trio.current_time() - gives_up
    assert [hit.verb for hit in mock.hits][-1] == "DELETE"
    assert 1.5 < closing < 4


async def test_a_stream_ended_early_is_resumed_after_the_servers_retry() -> None:
    ended: list[float] = []
    calls: list[Hit] = []

    async def route(hit: Hit, reply: Reply) -> None:
        if await lifecycle(hit, reply):
            return
        if hit.method == "tools/list":  # the client reads it before the call
            await reply.json(result(hit, {"tools": []}))
        elif hit.method == "tools/call":
            calls.append(hit)
            await reply.open_sse(mcp_session_id=SESSION)
            await reply.event(id="e1", retry=300)  # priming, then close early
            await reply.event(log("before"), id="e2")
            ended.append(trio.current_time())
            await reply.end()
        else:  # GET + Last-Event-ID: the rest, then hold the stream open
            await reply.open_sse()
            await reply.event(log("after"), id="e3")
            await reply.event(result(calls[0], DONE), id="e4")
            await reply.wait_disconnect()

    logs: list[Any] = []
    with trio.fail_after(10):
        async with scripted(route) as (url, mock):

            def on_log(level: str, data: Any, logger: str | None) -> None:
                logs.append(data)

            async with connect(url, era="legacy", on_log=on_log) as client:
                answer = await client.call_tool("resumable")
    assert (answer.text, logs) == ("done", ["before", "after"])
    (resume,) = [h for h in mock.gets() if "last-event-id" in h.headers]
    assert resume.headers["last-event-id"] == "e2"
    assert resume.headers["mcp-session-id"] == SESSION
    assert resume.at - ended[0] >= 0.3  # the server's retry: 300 ms


@pytest.mark.parametrize("event_id", ["\u00e9", "a\x1b[31m\x07b", " e1"])
async def test_a_stream_whose_event_id_cannot_be_sent_back_fails_in_one_line(
    event_id: str,
) -> None:
    # httpx raised UnicodeEncodeError building Last-Event-ID (a traceback out
    # of `yieldmcp call`), and a control character went back to the server.
    async def route(hit: Hit, reply: Reply) -> None:
        if await lifecycle(hit, reply):
            return
        if hit.method == "tools/list":
            await reply.json(result(hit, {"tools": []}))
        else:
            await reply.open_sse(mcp_session_id=SESSION)
            await reply.raw(f"id: {event_id}\nretry: 10\ndata: \n\n".encode())
            await reply.end()

    with trio.fail_after(10):
        async with scripted(route) as (url, mock), connect(url, era="legacy") as client:
            with pytest.raises(RemoteProtocolError, match="not visible ASCII"):
                await client.call_tool("resumable")
    assert not [h for h in mock.gets() if "last-event-id" in h.headers]


async def test_an_empty_event_id_resets_where_a_stream_resumes() -> None:
    # An empty id was ignored: the stream resumed from the id before it, and
    # the events in between came twice.
    async def route(hit: Hit, reply: Reply) -> None:
        if await lifecycle(hit, reply):
            return
        if hit.method == "tools/list":
            await reply.json(result(hit, {"tools": []}))
        else:
            await reply.open_sse(mcp_session_id=SESSION)
            await reply.event(id="e1", retry=10)
            await reply.raw(b"id:\ndata: " + json.dumps(log("once")).encode() + b"\n\n")
            await reply.end()

    with trio.fail_after(10):
        async with scripted(route) as (url, mock), connect(url, era="legacy") as client:
            with pytest.raises(BrokenSessionError, match="cannot be resumed"):
                await client.call_tool("resumable")
    assert not [h for h in mock.gets() if "last-event-id" in h.headers]


@pytest.mark.parametrize("digits", [400, 5000], ids=["past-a-float", "past-int"])
async def test_a_retry_of_any_length_is_read_and_capped(digits: int) -> None:
    # 400 digits made an OverflowError (ms to seconds), 5000 a ValueError in
    # the SSE parser (int() refuses past 4300 digits): each a traceback.
    from bridge.client._http_inbox import MAX_RETRY
    from bridge.transports.sse import SseParser

    async def route(hit: Hit, reply: Reply) -> None:
        if await lifecycle(hit, reply):
            return
        if hit.method == "tools/list":
            await reply.json(result(hit, {"tools": []}))
        else:
            await reply.open_sse(mcp_session_id=SESSION)
            await reply.raw(b"id: e1\nretry: " + b"9" * digits + b"\ndata: \n\n")
            await reply.event(result(hit, DONE), id="e2")
            await reply.end()

    with trio.fail_after(10):
        async with scripted(route) as (url, _), connect(url, era="legacy") as client:
            assert (await client.call_tool("resumable")).text == "done"
    (event,) = SseParser().feed(b"retry: " + b"9" * digits + b"\ndata: \n\n")
    assert event.retry is not None
    assert event.retry / 1000 > MAX_RETRY == 30.0


@pytest.mark.parametrize(
    ("session_id", "version", "said"),
    [
        (
            "s\u00e9",
            "2025-11-25",
            "the server's Mcp-Session-Id 's\u00e9' is not visible",
        ),
        (SESSION, "2025-11-25\u00e9", "the server answered initialize with"),
    ],
    ids=["session-id", "version"],
)
async def test_header_values_a_server_gives_are_visible_ascii(
    session_id: str, version: str, said: str
) -> None:
    # Both go back in every request's headers: each was a UnicodeEncodeError
    # from httpx at the next request (a traceback at the terminal).
    from runtime.errors import RemoteProtocolError

    async def route(hit: Hit, reply: Reply) -> None:
        if hit.method == "initialize":
            answer = result(hit, {**INIT, "protocolVersion": version})
            await reply.json(answer, mcp_session_id=session_id)  # sent as UTF-8
        else:
            await lifecycle(hit, reply)

    with trio.fail_after(10), pytest.raises(ExceptionGroup) as caught:  # scripted's
        async with scripted(route) as (url, _), connect(url, era="legacy"):
            pass
    assert caught.group_contains(RemoteProtocolError, match=re.escape(said))


# The answers' POSTs are cancelled mid-request when the session ends: httpx's
# request bodies are then collected unfinished, which Python reports.
@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
async def test_a_server_that_asks_and_never_takes_the_answers_ends_the_session() -> (
    None
):
    # Each answer's POST holds a connection while the server does not take
    # it: 2,014 open sockets after 20 s, and growing, before.
    from bridge.client.http import MAX_ANSWERS_POSTING
    from runtime.errors import RemoteProtocolError

    async def route(hit: Hit, reply: Reply) -> None:
        if await lifecycle(hit, reply):
            return
        if hit.method == "tools/list":
            await reply.json(result(hit, {"tools": []}))
        elif hit.method == "tools/call":
            await reply.open_sse(mcp_session_id=SESSION)
            for n in range(2 * MAX_ANSWERS_POSTING):
                await reply.event({"jsonrpc": "2.0", "id": f"p{n}", "method": "ping"})
            await reply.wait_disconnect()
        else:  # our answers: never taken
            await reply.wait_disconnect()

    with trio.fail_after(30):
        async with scripted(route) as (url, _), connect(url, era="legacy") as client:
            with pytest.raises(RemoteProtocolError) as caught:
                await client.call_tool("asks")
    assert str(caught.value).startswith("the server does not read what it asks for")


async def test_a_response_on_the_standalone_stream_ends_the_call() -> None:
    standalone: list[Reply] = []

    async def route(hit: Hit, reply: Reply) -> None:
        if hit.verb == "GET":
            await reply.open_sse()
            await reply.event(id="g1")
            standalone.append(reply)
            await reply.wait_disconnect()
        elif await lifecycle(hit, reply):
            return
        else:  # the call's stream stays silent; its answer goes the other way
            await reply.open_sse()
            await reply.event(id="c1")
            await standalone[0].event(result(hit, DONE), id="g2")
            await reply.wait_disconnect()

    with trio.fail_after(10):
        async with scripted(route) as (url, _), connect(url, era="legacy") as client:
            assert (await client.call_tool("elsewhere")).text == "done"


async def test_a_legacy_timeout_stops_the_exchange_and_posts_a_cancellation() -> None:
    async def route(hit: Hit, reply: Reply) -> None:
        if not await lifecycle(hit, reply):
            await reply.open_sse()
            await reply.wait_disconnect()

    with trio.fail_after(10):
        async with (
            scripted(route) as (url, mock),
            connect(url, era="legacy") as client,
        ):
            with pytest.raises(RequestTimeout):
                await client.session.request("tools/call", {}, timeout=0.2)
    (call,) = mock.posts("tools/call")
    (cancel,) = mock.posts("notifications/cancelled")
    assert cancel.body["params"]["requestId"] == call.body["id"]


async def test_cancelling_a_modern_call_closes_its_stream_and_posts_nothing() -> None:
    arrived, gone = trio.Event(), trio.Event()

    async def route(hit: Hit, reply: Reply) -> None:
        if not await lifecycle(hit, reply):
            await reply.open_sse()
            await reply.event(log("working"))
            arrived.set()
            await reply.wait_disconnect()
            gone.set()

    with trio.fail_after(10):
        async with (
            scripted(route) as (url, mock),
            connect(url, era=MODERN) as client,
        ):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(client.call_tool, "slow")
                await arrived.wait()
                nursery.cancel_scope.cancel()
            await gone.wait()
    assert mock.posts("notifications/cancelled") == []
    assert [h.verb for h in mock.hits] == ["POST", "POST"]  # no GET, no DELETE


async def test_modern_posts_mirror_the_body_in_headers() -> None:
    tools = [
        {
            "name": "lookup",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "region": {"type": "string", "x-mcp-header": "Region"},
                    "note": {"type": "string", "x-mcp-header": "Note"},
                    "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
                    "query": {"type": "string"},
                },
            },
        },
        {
            "name": "broken",
            "inputSchema": {
                "properties": {"n": {"type": "number", "x-mcp-header": "N"}}
            },
        },
    ]

    async def route(hit: Hit, reply: Reply) -> None:
        if await lifecycle(hit, reply):
            return
        listing = {"resultType": "complete", "ttlMs": 0, "cacheScope": "private"}
        value = {**listing, "tools": tools} if hit.method == "tools/list" else DONE
        await reply.json(result(hit, value), mcp_session_id="ignored")

    arguments = {"region": "eu west", "note": " hi ", "verbose": None, "query": "q"}
    with trio.fail_after(10):
        async with (
            scripted(route) as (url, mock),
            connect(url, era=MODERN) as client,
        ):
            listed = [tool["name"] for tool in await client.list_tools()]
            await client.call_tool("lookup", arguments)
    assert listed == ["lookup"]  # "broken" has an x-mcp-header on a number
    (call,) = mock.posts("tools/call")
    meta = call.body["params"]["_meta"]
    assert call.headers["mcp-protocol-version"] == MODERN
    assert meta["io.modelcontextprotocol/protocolVersion"] == MODERN
    assert call.headers["mcp-method"] == "tools/call"
    assert call.headers["mcp-name"] == "lookup"
    params = {k: v for k, v in call.headers.items() if k.startswith("mcp-param-")}
    assert params == {
        "mcp-param-region": "eu west",
        "mcp-param-note": "=?base64?IGhpIA==?=",
    }
    assert all("mcp-session-id" not in hit.headers for hit in mock.hits)


async def test_an_unsupported_version_is_retried_with_one_the_server_lists() -> None:
    refused: list[Hit] = []

    async def route(hit: Hit, reply: Reply) -> None:
        if hit.method == "server/discover" and not refused:
            refused.append(hit)
            data = {"supported": [MODERN], "requested": MODERN}
            error = {"code": -32022, "message": "Unsupported", "data": data}
            await reply.json(
                {"jsonrpc": "2.0", "id": hit.body["id"], "error": error}, 400
            )
        elif not await lifecycle(hit, reply):
            await reply.json(result(hit, {"tools": []}))

    with trio.fail_after(10):
        async with (
            scripted(route) as (url, mock),
            connect(url, era=MODERN) as client,
        ):
            assert client.era == MODERN
    first, second = mock.posts("server/discover")
    assert first.body["id"] != second.body["id"]
    for hit in (first, second):
        meta = hit.body["params"]["_meta"]
        version = meta["io.modelcontextprotocol/protocolVersion"]
        assert hit.headers["mcp-protocol-version"] == version == MODERN


@pytest.mark.parametrize("echo_id", [True, False])
async def test_a_json_rpc_error_in_an_http_error_is_that_error(echo_id: bool) -> None:
    async def route(hit: Hit, reply: Reply) -> None:
        if not await lifecycle(hit, reply):
            error = {"code": -32020, "message": "header mismatch"}
            rid = hit.body["id"] if echo_id else None
            await reply.json({"jsonrpc": "2.0", "id": rid, "error": error}, 400)

    with trio.fail_after(10):
        async with scripted(route) as (url, _), connect(url, era=MODERN) as client:
            with pytest.raises(PeerError) as info:
                await client.list_tools()
    assert info.value.code == -32020


async def test_an_http_error_without_json_rpc_names_the_status() -> None:
    async def route(hit: Hit, reply: Reply) -> None:
        if not await lifecycle(hit, reply):
            await reply.text(503, "overloaded")

    with trio.fail_after(10):
        async with scripted(route) as (url, _), connect(url, era="legacy") as client:
            with pytest.raises(RemoteProtocolError) as info:
                await client.list_tools()
    assert "HTTP 503" in str(info.value)


def expiring() -> Any:
    """A route whose first session is unknown to every request after the
    handshake; the next ``initialize`` opens ``session-2``, which works."""
    sessions = iter([SESSION, "session-2"])

    async def route(hit: Hit, reply: Reply) -> None:
        if hit.method == "initialize":
            await reply.json(result(hit, INIT), mcp_session_id=next(sessions))
        elif hit.headers.get("mcp-session-id") == SESSION and hit.has_id:
            await reply.text(404, "unknown session")
        elif not await lifecycle(hit, reply):
            await reply.json(result(hit, {"tools": []}))

    return route


async def test_an_expired_session_is_renewed_and_the_request_sent_again() -> None:
    with trio.fail_after(10):
        async with (
            scripted(expiring()) as (url, mock),
            connect(url, era="legacy") as client,
        ):
            await client.list_tools()
            await client.list_tools()
    first, renewal = mock.posts("initialize")
    assert renewal.body["params"] == first.body["params"]
    assert "mcp-session-id" not in renewal.headers
    listings = mock.posts("tools/list")
    assert [h.headers["mcp-session-id"] for h in listings] == [
        SESSION,
        "session-2",
        "session-2",
    ]
    initialized = mock.posts("notifications/initialized")
    assert [h.headers["mcp-session-id"] for h in initialized] == [SESSION, "session-2"]
    assert renewal.at < initialized[1].at < listings[1].at


async def test_requests_refused_together_renew_the_session_once() -> None:
    with trio.fail_after(10):
        async with (
            scripted(expiring()) as (url, mock),
            connect(url, era="legacy") as client,
            trio.open_nursery() as nursery,
        ):
            for _ in range(5):
                nursery.start_soon(client.list_tools)
    assert len(mock.posts("initialize")) == 2
    renewed = [
        h for h in mock.posts("tools/list") if h.headers["mcp-session-id"] != SESSION
    ]
    assert len(renewed) == 5


@pytest.mark.parametrize("refusal", [(500, "down"), (404, "no"), (200, "not json-rpc")])
async def test_a_renewal_that_fails_is_a_broken_session(
    refusal: tuple[int, str],
) -> None:
    opened = False

    async def route(hit: Hit, reply: Reply) -> None:
        nonlocal opened
        if hit.method == "initialize" and opened:
            await reply.text(*refusal)
        elif hit.method == "initialize":
            opened = True
            await reply.json(result(hit, INIT), mcp_session_id=SESSION)
        elif not await lifecycle(hit, reply):
            await reply.text(404, "unknown session")

    with trio.fail_after(10):
        async with scripted(route) as (url, mock), connect(url, era="legacy") as client:
            with pytest.raises(BrokenSessionError) as info:
                await client.list_tools()
    assert f"session {SESSION} expired" in str(info.value)
    assert len(mock.posts("initialize")) == 2
    assert len(mock.posts("tools/list")) == 1  # never sent outside a session


async def test_a_renewal_that_changes_the_version_is_a_broken_session() -> None:
    older = {**INIT, "protocolVersion": "2025-06-18"}
    sessions = iter([SESSION, "session-2"])

    async def route(hit: Hit, reply: Reply) -> None:
        if hit.method == "initialize":
            session = next(sessions)
            answer = INIT if session == SESSION else older
            await reply.json(result(hit, answer), mcp_session_id=session)
        elif not await lifecycle(hit, reply):
            await reply.text(404, "unknown session")

    with trio.fail_after(10):
        async with scripted(route) as (url, _), connect(url, era="legacy") as client:
            with pytest.raises(BrokenSessionError) as info:
                await client.list_tools()
    assert "2025-06-18" in str(info.value)


async def test_a_404_that_persists_after_renewal_is_a_broken_session() -> None:
    async def route(hit: Hit, reply: Reply) -> None:
        if not await lifecycle(hit, reply):
            await reply.text(404, "unknown session")

    with trio.fail_after(10):
        async with scripted(route) as (url, mock), connect(url, era="legacy") as client:
            with pytest.raises(BrokenSessionError) as info:
                await client.list_tools()
    assert SESSION in str(info.value)
    assert len(mock.posts("tools/list")) == 2  # once, and once after renewal


def _unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize("era", ["legacy", MODERN])
async def test_an_unreachable_server_is_a_broken_session(era: Any) -> None:
    url = f"http://127.0.0.1:{_unused_port()}/mcp"
    with trio.fail_after(10), pytest.raises(BrokenSessionError) as info:
        async with connect(url, era=era):
            pass
    assert url in str(info.value)


# --- what cannot be read ------------------------------------------------------------


@pytest.mark.parametrize("era", ["legacy", MODERN])
@pytest.mark.parametrize("ends", [False, True], ids=["left-open", "ended"])
async def test_an_unreadable_event_on_a_request_s_stream_fails_it_at_once(
    era: str, ends: bool
) -> None:
    # The event may have been the response: the call waited for ever (or,
    # in 2025-11-25, resumed the stream again and again) instead of failing.
    async def route(hit: Hit, reply: Reply) -> None:
        if await lifecycle(hit, reply):
            return
        await reply.open_sse()
        await reply.event("", id="1-0", retry=50)
        await reply.event("this is not JSON", id="1-1")
        if ends:
            await reply.end()
        else:
            await reply.wait_disconnect()

    async with scripted(route) as (url, _mock), connect(url, era=era) as client:
        with trio.fail_after(10), pytest.raises(RemoteProtocolError) as failed:
            await client.request("tools/list")
    assert str(failed.value) == (
        f"the server's answer to tools/list at {url} holds a message that "
        f"cannot be read (Parse error: not valid JSON)"
    )


@pytest.mark.parametrize(
    ("body", "named"),
    [
        (b"this is not JSON", "its body cannot be read (Parse error: not valid JSON)"),
        (
            b"[1, 2]",
            "its body cannot be read (Invalid request: batches are not supported)",
        ),
        (b"", "its body is empty"),
    ],
    ids=["not-json", "batch", "empty"],
)
async def test_a_json_answer_that_is_not_the_response_says_what_it_holds(
    body: bytes, named: str
) -> None:
    async def route(hit: Hit, reply: Reply) -> None:
        if await lifecycle(hit, reply):
            return
        await reply._start(200, "application/json", {})  # pyright: ignore[reportPrivateUsage]
        await reply.raw(body)
        await reply.end()

    async with scripted(route) as (url, _mock), connect(url, era=MODERN) as client:
        with trio.fail_after(10), pytest.raises(RemoteProtocolError) as failed:
            await client.request("tools/list")
    assert str(failed.value) == (
        f"POST {url} (tools/list) answered HTTP 200 without the response to the "
        f"request: {named}"
    )


async def test_an_unreadable_event_on_the_standalone_stream_is_dropped_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # It answers no request: nothing fails, and the user is told once.
    async def route(hit: Hit, reply: Reply) -> None:
        if hit.verb == "GET" and "last-event-id" not in hit.headers:
            await reply.open_sse()
            await reply.event("this is not JSON", id="0-1")
            await reply.event("nor this", id="0-2")
            await reply.wait_disconnect()
        elif not await lifecycle(hit, reply):
            await reply.json(result(hit, {"tools": []}))

    async with scripted(route) as (url, _mock), connect(url, era="legacy") as client:
        with trio.fail_after(10):
            while not any("standalone" in r.getMessage() for r in caplog.records):
                await trio.sleep(0.01)
            listed = await client.request("tools/list")
    assert listed == {"tools": []}
    warned = [r for r in caplog.records if "cannot be read" in r.getMessage()]
    assert [r.getMessage() for r in warned] == [
        f"the server at {url} sent a message that cannot be read on its "
        f"standalone stream (Parse error: not valid JSON); it was dropped"
    ]

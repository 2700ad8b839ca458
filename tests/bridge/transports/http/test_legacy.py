"""Streamable HTTP, 2025-11-25 rules, over real loopback HTTP with raw httpx.

Sessions (ids, 400/404, DELETE), the ``MCP-Protocol-Version`` rules (400 for
a version the endpoint or the session does not speak, the negotiated version
when the header is absent), JSON-or-SSE answers, priming events,
mid-call requests on the call's stream, resumption with ``Last-Event-ID``,
SSE polling (``ctx.release_stream()``), the standalone GET stream, and the
request checks every POST passes (DNS rebinding, media types, sizes).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import trio
import trio.testing

from bridge.jsonrpc import Notification, dumps
from bridge.server import Server
from bridge.transports.http import HttpLimits
from bridge.transports.http.legacy_session import HttpSession
from tests.bridge.http_kit import Raw, SseReader, message_of, served
from tests.fixtures import http_tools

# Tests that abandon a stream mid-way (a "disconnect") leave httpx's inner
# async generators to the garbage collector, which trio reports.
pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]


WHEN_NEEDED = HttpLimits(stream_responses="when-needed")


def server() -> Server:
    tools = [
        http_tools.echo,
        http_tools.chatty,
        http_tools.ask_name,
        http_tools.wait_forever,
        http_tools.polls,
    ]
    return Server(tools, name="http-test")


@pytest.fixture
async def raw() -> AsyncIterator[Raw]:
    # These tests pin the JSON-or-SSE rule; the default (always SSE) is tested
    # at the end of this module.
    async with (
        served(server(), limits=WHEN_NEEDED) as url,
        httpx.AsyncClient(timeout=10) as http,
    ):
        yield Raw(http, url)


def _call(raw: Raw, request_id: Any, name: str, **arguments: Any) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments, "_meta": {"progressToken": "p"}}
    return raw.request(request_id, "tools/call", params)


async def _priming(reader: SseReader, retry: int = 1000) -> str:
    event = await reader.next()
    assert event is not None
    assert event.data == ""
    assert event.retry == retry
    assert event.id
    return event.id


# --- sessions ---------------------------------------------------------------------


async def test_initialize_opens_a_session_with_a_visible_ascii_id(raw: Raw) -> None:
    with trio.fail_after(10):
        await raw.initialize()
    assert raw.session_id is not None
    assert re.fullmatch(r"[\x21-\x7e]{32,}", raw.session_id)


async def test_requests_need_a_live_session(raw: Raw) -> None:
    with trio.fail_after(10):
        no_session = await raw.post(raw.request(1, "tools/list"))
        raw.session_id = "not-a-session"
        unknown = await raw.post(raw.request(1, "tools/list"))
    assert no_session.status_code == 400
    assert unknown.status_code == 404


async def test_delete_ends_the_session(raw: Raw) -> None:
    with trio.fail_after(10):
        await raw.initialize()
        deleted = await raw.http.delete(raw.url, headers=raw.headers())
        after = await raw.post(raw.request(2, "tools/list"))
        again = await raw.http.delete(raw.url, headers=raw.headers())
    assert deleted.status_code == 200
    assert after.status_code == 404
    assert again.status_code == 404


async def test_a_failed_initialize_leaves_no_session(raw: Raw) -> None:
    with trio.fail_after(10):
        response = await raw.post(raw.request(1, "initialize", {"capabilities": 3}))
    assert response.status_code == 200
    assert "error" in raw.checked_body(response)
    assert "mcp-session-id" not in response.headers or not response.json().get("result")


async def test_notifications_and_client_responses_are_accepted_with_202(
    raw: Raw,
) -> None:
    with trio.fail_after(10):
        await raw.initialize()
        note = await raw.post({"jsonrpc": "2.0", "method": "notifications/foo"})
        reply = await raw.post({"jsonrpc": "2.0", "id": 99, "result": {}})
    assert (note.status_code, reply.status_code) == (202, 202)
    assert note.content == b""


async def test_a_request_id_in_flight_cannot_be_reused(raw: Raw) -> None:
    with trio.fail_after(10):
        await raw.initialize()
        async with raw.stream("POST", _call(raw, 7, "wait_forever", tag="dup")) as (
            _,
            reader,
        ):
            await _priming(reader)
            await reader.next()  # the elicitation: the call is now waiting
            second = await raw.post(_call(raw, 7, "echo", text="x"))
    assert second.status_code == 400
    assert raw.checked_body(second)["error"]["code"] == -32600


async def test_a_request_posted_again_follows_its_call_from_the_start(
    raw: Raw,
) -> None:
    # A client that lost the POST's response before it saw any event posts the
    # request again (its id is unique in the session, so it is a retry): it
    # gets the same call's stream from its first event, not a refusal and not
    # a second call.
    with trio.fail_after(10):
        await raw.initialize()
        call = _call(raw, 8, "ask_name")
        async with raw.stream("POST", call) as (_, reader):
            await _priming(reader)
            first = message_of(await reader.next())
        async with raw.stream("POST", call) as (response, reader):
            assert response.status_code == 200
            await _priming(reader)
            again = message_of(await reader.next())
            assert again == first  # the same question, not a new call's
            answer = {"action": "accept", "content": {"name": "Ada"}}
            await raw.post({"jsonrpc": "2.0", "id": again["id"], "result": answer})
            rest = [raw.check(message_of(e)) for e in await reader.rest()]
    assert rest[-1]["id"] == 8
    assert rest[-1]["result"]["content"][0]["text"] == "hi Ada"


async def test_a_request_posted_again_after_its_answer_gets_the_same_events(
    raw: Raw,
) -> None:
    # The response went out but the client lost it with its connection: the
    # request posted again replays the call's stored events (the same ids),
    # and the tool does not run a second time (that would make new events).
    with trio.fail_after(10):
        await raw.initialize()
        call = _call(raw, 9, "chatty")
        async with raw.stream("POST", call) as (_, reader):
            first = [(e.id, e.data) for e in await reader.rest()]
        async with raw.stream("POST", call) as (response, reader):
            assert response.status_code == 200
            again = [(e.id, e.data) for e in await reader.rest()]
    assert len(first) == 8  # priming, 3 logs, 3 progress, the response
    assert again[1:] == first[1:]


# --- the MCP-Protocol-Version header -----------------------------------------------

ALL_VERSIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"]


def _unsupported(
    raw: Raw, response: httpx.Response, requested: str, supported: list[str]
) -> dict[str, Any]:
    """Check a 400 UnsupportedProtocolVersion answer; return its error."""
    assert response.status_code == 400
    assert "mcp-session-id" not in response.headers
    error = dict(raw.checked_body(response)["error"])
    assert error["code"] == -32022
    assert error["data"] == {"supported": supported, "requested": requested}
    for version in supported:
        assert version in error["message"]
    return error


async def test_an_unknown_version_header_is_refused_naming_the_supported_ones(
    raw: Raw,
) -> None:
    init = raw.request("init", "initialize", {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    })  # fmt: skip
    with trio.fail_after(10):
        refused = await raw.post(init, mcp_protocol_version="garbage")
        await raw.initialize()
        in_session = await raw.post(
            raw.request(2, "tools/list"), mcp_protocol_version="garbage"
        )
        note = await raw.post(
            {"jsonrpc": "2.0", "method": "notifications/foo"},
            mcp_protocol_version="2025-11-26",
        )
        sse = raw.headers(accept="text/event-stream", mcp_protocol_version="")
        get = await raw.http.get(raw.url, headers=sse)
        delete = await raw.http.delete(
            raw.url, headers=raw.headers(mcp_protocol_version="1.0")
        )
        still_open = await raw.post(raw.request(3, "tools/list"))
    _unsupported(raw, refused, "garbage", ALL_VERSIONS)
    assert refused.json()["id"] == "init"
    _unsupported(raw, in_session, "garbage", ALL_VERSIONS)
    assert in_session.json()["id"] == 2
    _unsupported(raw, note, "2025-11-26", ALL_VERSIONS)
    _unsupported(raw, get, "", ALL_VERSIONS)
    _unsupported(raw, delete, "1.0", ALL_VERSIONS)
    assert still_open.status_code == 200  # nothing above touched the session


async def test_a_session_accepts_any_supported_version_header(raw: Raw) -> None:
    # The official conformance suite (0.1.16, server-sse-multiple-streams and
    # server-sse-polling) sends 2025-03-26 inside a 2025-11-25 session.
    with trio.fail_after(10):
        await raw.initialize()
        older = await raw.post(
            raw.request(2, "tools/list"), mcp_protocol_version="2025-03-26"
        )
        note = await raw.post(
            {"jsonrpc": "2.0", "method": "notifications/foo"},
            mcp_protocol_version="2025-06-18",
        )
        unknown = await raw.post(
            raw.request(3, "tools/list"), mcp_protocol_version="2025-01-01"
        )
    assert older.status_code == 200
    assert "tools" in raw.checked_body(older)["result"]
    assert note.status_code == 202
    _unsupported(raw, unknown, "2025-01-01", ALL_VERSIONS)


async def test_without_the_header_a_session_keeps_its_negotiated_version(
    raw: Raw,
) -> None:
    with trio.fail_after(10):
        await raw.initialize()
        raw.version = None  # the header is missing; the session knows 2025-11-25
        async with raw.stream("POST", _call(raw, 1, "chatty")) as (_, reader):
            await _priming(reader)
            events = await reader.rest()
    assert message_of(events[-1])["result"]["content"][0]["text"] == "done"


async def test_without_the_header_an_old_session_gets_no_priming_event(
    raw: Raw,
) -> None:
    with trio.fail_after(10):
        await raw.initialize(version="2025-03-26")
        raw.version = None  # as a 2025-03-26 client does: it has no such header
        async with raw.stream("POST", _call(raw, 1, "chatty")) as (_, reader):
            events = await reader.rest()
    assert all(e.data for e in events)
    assert message_of(events[-1])["id"] == 1


# --- answers: JSON or SSE ---------------------------------------------------------


async def test_a_response_sent_first_comes_as_json(raw: Raw) -> None:
    with trio.fail_after(10):
        await raw.initialize()
        response = await raw.post(_call(raw, 1, "echo", text="hello"))
    assert response.status_code == 200
    assert response.headers["mcp-session-id"] == raw.session_id
    body = raw.checked_body(response)
    assert body["result"]["content"] == [{"type": "text", "text": "hello"}]


async def test_notifications_first_make_an_sse_stream_with_priming(raw: Raw) -> None:
    with trio.fail_after(10):
        await raw.initialize()
        async with raw.stream("POST", _call(raw, 1, "chatty")) as (response, reader):
            assert response.headers["content-type"] == "text/event-stream"
            assert response.headers["x-accel-buffering"] == "no"
            priming = await _priming(reader)
            events = await reader.rest()
    messages = [raw.check(message_of(e)) for e in events]
    assert [m.get("method") for m in messages] == [
        "notifications/message",
        "notifications/progress",
    ] * 3 + [None]
    assert messages[-1]["result"]["content"][0]["text"] == "done"
    ids = [priming, *(e.id for e in events)]
    assert len(set(ids)) == len(ids)


async def test_clients_older_than_2025_11_25_get_no_priming_event(raw: Raw) -> None:
    with trio.fail_after(10):
        await raw.initialize(version="2025-03-26")
        async with raw.stream("POST", _call(raw, 1, "chatty")) as (_, reader):
            events = await reader.rest()
    assert all(e.data for e in events)
    assert message_of(events[-1])["id"] == 1


async def test_a_mid_call_request_travels_on_the_call_stream(raw: Raw) -> None:
    with trio.fail_after(10):
        await raw.initialize()
        async with raw.stream("POST", _call(raw, 5, "ask_name")) as (_, reader):
            await _priming(reader)
            event = await reader.next()
            assert event is not None
            ask = raw.check(message_of(event))
            assert ask["method"] == "elicitation/create"
            answer = {"action": "accept", "content": {"name": "Ada"}}
            posted = await raw.post(
                {"jsonrpc": "2.0", "id": ask["id"], "result": answer}
            )
            assert posted.status_code == 202
            rest = [raw.check(message_of(e)) for e in await reader.rest()]
    assert rest[-1]["result"]["content"][0]["text"] == "hi Ada"


@pytest.mark.parametrize(
    "reply",
    [
        '{"jsonrpc":"2.0","id":ID,"result":{"action":"accept","j":'
        + "[" * 250
        + "]" * 250
        + "}}",
        '{"jsonrpc":"2.0","id":ID,"result":{"action":"decline"},'
        '"error":{"code":1,"message":"e"}}',
        '{"jsonrpc":"1.0","id":ID,"result":{"action":"decline"}}',
    ],
    ids=["too-deep", "result-and-error", "jsonrpc-1.0"],
)
async def test_an_unreadable_reply_fails_its_question_at_once(
    raw: Raw, reply: str
) -> None:
    # The POST was refused (400) and the question went on waiting for its
    # timeout (10 minutes), while over stdio the same reply fails it at once.
    with trio.fail_after(10):
        await raw.initialize()
        async with raw.stream("POST", _call(raw, 5, "ask_name")) as (_, reader):
            await _priming(reader)
            event = await reader.next()
            assert event is not None
            ask = raw.check(message_of(event))
            body = reply.replace("ID", str(ask["id"])).encode()
            posted = await raw.http.post(raw.url, content=body, headers=raw.headers())
            assert posted.status_code == 400
            rest = [raw.check(message_of(e)) for e in await reader.rest()]
    result = rest[-1]["result"]
    assert result["isError"] is True
    assert result["content"][0]["text"].startswith("The reply cannot be read: ")


# --- resumption -------------------------------------------------------------------


async def test_a_lost_stream_resumes_from_its_last_event_exactly_once(raw: Raw) -> None:
    with trio.fail_after(10):
        await raw.initialize()
        async with raw.stream("POST", _call(raw, 5, "ask_name")) as (_, reader):
            await _priming(reader)
            event = await reader.next()
            assert event is not None
            ask = message_of(event)
        # The client went away mid-call; that is not a cancellation.
        answer = {"action": "accept", "content": {"name": "Ada"}}
        await raw.post({"jsonrpc": "2.0", "id": ask["id"], "result": answer})
        async with raw.stream("GET", last_event_id=str(event.id)) as (response, reader):
            assert response.status_code == 200
            resumed = [raw.check(message_of(e)) for e in await reader.rest()]
    assert [m.get("params", {}).get("data") for m in resumed[:-1]] == [
        "got Ada",
        "finishing",
    ]
    assert resumed[-1]["id"] == 5
    assert resumed[-1]["result"]["content"][0]["text"] == "hi Ada"


async def test_resuming_from_the_priming_event_replays_the_whole_stream(
    raw: Raw,
) -> None:
    with trio.fail_after(10):
        await raw.initialize()
        async with raw.stream("POST", _call(raw, 1, "chatty")) as (_, reader):
            priming = await _priming(reader)
            first = await reader.rest()
        async with raw.stream("GET", last_event_id=priming) as (_, reader):
            again = await reader.rest()
    assert [e.id for e in again] == [e.id for e in first]


@pytest.mark.parametrize(
    "last",
    [
        "9-999",
        # Past int()'s 4300 digits (this was a 500, and a traceback logged).
        "1-" + "9" * 5000,
        "9" * 5000 + "-1",
    ],
    ids=["unknown", "long-seq", "long-stream"],
)
async def test_an_unknown_last_event_id_is_refused(raw: Raw, last: str) -> None:
    with trio.fail_after(10):
        await raw.initialize()
        async with raw.stream("GET", last_event_id=last) as (response, _):
            assert response.status_code == 400
            body = (await response.aread()).decode()
            assert "is not an event id of this server" in body or "9-999" in last
            assert len(body) < 500


async def test_a_released_stream_closes_mid_call_and_resumes_with_get(raw: Raw) -> None:
    with trio.fail_after(10):
        await raw.initialize()
        async with raw.stream("POST", _call(raw, 3, "polls")) as (_, reader):
            await _priming(reader)
            before = await reader.rest()
        assert [message_of(e)["params"]["data"] for e in before] == ["before"]
        async with raw.stream("GET", last_event_id=str(before[-1].id)) as (_, reader):
            after = [raw.check(message_of(e)) for e in await reader.rest()]
    assert after[0]["params"]["data"] == "after"
    assert after[1]["result"]["content"][0]["text"] == "polled"
    assert len(after) == 2


async def test_old_clients_are_never_released(raw: Raw) -> None:
    with trio.fail_after(10):
        await raw.initialize(version="2025-03-26")
        async with raw.stream("POST", _call(raw, 3, "polls")) as (_, reader):
            events = [message_of(e) for e in await reader.rest()]
    assert events[-1]["result"]["content"][0]["text"] == "polled"


# --- cancellation -----------------------------------------------------------------


async def test_delete_cancels_a_running_call_and_its_finally_runs(raw: Raw) -> None:
    with trio.fail_after(10):
        await raw.initialize()
        async with raw.stream("POST", _call(raw, 1, "wait_forever", tag="del")) as (
            _,
            reader,
        ):
            await _priming(reader)
            await reader.next()  # the elicitation: the tool is suspended
            assert "del" not in http_tools.CLEANED
            deleted = await raw.http.delete(raw.url, headers=raw.headers())
            assert deleted.status_code == 200
            # The stream ends with no response; at most the server withdraws
            # its own pending question.
            rest = [raw.check(message_of(e)) for e in await reader.rest()]
            assert [m["method"] for m in rest] in ([], ["notifications/cancelled"])
        await trio.testing.wait_all_tasks_blocked()
    assert "del" in http_tools.CLEANED


async def test_a_disconnect_does_not_cancel_the_call(raw: Raw) -> None:
    with trio.fail_after(10):
        await raw.initialize()
        async with raw.stream("POST", _call(raw, 1, "wait_forever", tag="dis")) as (
            _,
            reader,
        ):
            await _priming(reader)
            await reader.next()
        await trio.testing.wait_all_tasks_blocked()
        assert "dis" not in http_tools.CLEANED
        await raw.http.delete(raw.url, headers=raw.headers())
        await trio.testing.wait_all_tasks_blocked()
    assert "dis" in http_tools.CLEANED


# --- the standalone stream ----------------------------------------------------------


async def test_list_changes_reach_the_standalone_stream() -> None:
    served_server = server()
    async with (
        served(served_server, limits=WHEN_NEEDED) as url,
        httpx.AsyncClient(timeout=10) as http,
    ):
        raw = Raw(http, url)
        with trio.fail_after(10):
            await raw.initialize()
            async with raw.stream("GET") as (response, reader):
                assert response.status_code == 200
                await _priming(reader)
                async with raw.stream("GET") as (second, _):
                    assert second.status_code == 409
                served_server.add(http_tools.added_later)
                event = await reader.next()
    assert event is not None
    assert raw.check(message_of(event))["method"] == "notifications/tools/list_changed"


@pytest.mark.parametrize("version", ["2025-11-25", "2025-03-26"])
async def test_a_get_stream_sends_its_head_before_any_event(
    raw: Raw, version: str
) -> None:
    # A resumed stream with nothing new to send, and the standalone stream of
    # a client too old for a priming event, sent no head until the first
    # event or heartbeat (15 s): the client, and a proxy's timeout, saw
    # nothing. The head goes out once the stream is accepted.
    with trio.fail_after(10):
        await raw.initialize(version=version)
        last: str | None = None
        if version == "2025-11-25":
            async with raw.stream("GET") as (_, reader):
                last = await _priming(reader)
    opened: list[int] = []
    with trio.move_on_after(3):
        headers = {} if last is None else {"last_event_id": last}
        async with raw.stream("GET", **headers) as (response, _):
            opened.append(response.status_code)
    assert opened == [200]


# --- checks on every request --------------------------------------------------------


async def test_dns_rebinding_is_refused(raw: Raw) -> None:
    with trio.fail_after(10):
        body = raw.request(1, "initialize", {})
        evil_host = await raw.post(body, host="evil.example.com")
        evil_origin = await raw.post(body, origin="http://evil.example.com")
        other_local_app = await raw.post(body, origin="http://localhost:3000")
        port = httpx.URL(raw.url).port
        fine = await raw.post(body, origin=f"http://localhost:{port}")
    assert evil_host.status_code == 421
    assert evil_origin.status_code == 403
    assert other_local_app.status_code == 403
    assert fine.status_code == 200


async def test_allowed_origins_are_configurable() -> None:
    async with (
        served(
            server(), allowed_origins=["https://app.example"], limits=WHEN_NEEDED
        ) as url,
        httpx.AsyncClient(timeout=10) as http,
    ):
        raw = Raw(http, url)
        with trio.fail_after(10):
            response = await raw.post(
                raw.request(1, "initialize", {}), origin="https://app.example"
            )
    assert response.status_code == 200


async def test_bodies_over_the_limit_are_refused() -> None:
    limits = HttpLimits(max_body=1024, stream_responses="when-needed")
    async with served(server(), limits=limits) as url, httpx.AsyncClient() as http:
        raw = Raw(http, url)
        with trio.fail_after(10):
            big = await raw.post(_call(raw, 1, "echo", text="x" * 2000))
    assert big.status_code == 413


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"content-type": "text/plain"}, 415),
        ({"accept": "text/html"}, 406),
    ],
)
async def test_media_types_are_checked(
    raw: Raw, headers: dict[str, str], status: int
) -> None:
    with trio.fail_after(10):
        response = await raw.post(raw.request(1, "initialize", {}), **headers)
    assert response.status_code == status


async def test_malformed_json_rpc_is_answered_with_its_error(raw: Raw) -> None:
    with trio.fail_after(10):
        garbage = await raw.http.post(raw.url, content=b"{nope", headers=raw.headers())
        no_method = await raw.post({"jsonrpc": "2.0", "id": 4, "method": 5})
    assert garbage.status_code == 400
    assert raw.checked_body(garbage)["error"]["code"] == -32700
    assert no_method.status_code == 400
    assert raw.checked_body(no_method)["error"] == {
        "code": -32600,
        "message": no_method.json()["error"]["message"],
    }
    assert no_method.json()["id"] == 4


async def test_other_paths_and_methods_are_refused(raw: Raw) -> None:
    with trio.fail_after(10):
        elsewhere = await raw.http.post(raw.url.replace("/mcp", "/other"), json={})
        put = await raw.http.put(raw.url, json={})
        get_without_accept = await raw.http.get(
            raw.url, headers={"accept": "application/json"}
        )
    assert elsewhere.status_code == 404
    assert put.status_code == 405
    assert get_without_accept.status_code == 406


async def test_sessions_are_bounded() -> None:
    # Only sessions with calls in flight are never evicted to make room.
    limits = HttpLimits(max_sessions=1, stream_responses="when-needed")
    async with served(server(), limits=limits) as url, httpx.AsyncClient() as http:
        busy = Raw(http, url)
        with trio.fail_after(10):
            await busy.initialize()
            call = _call(busy, 1, "wait_forever", tag="bounded")
            async with busy.stream("POST", call) as (_, reader):
                await _priming(reader)
                await reader.next()  # the call is parked on its question
                second = await Raw(http, url).post(
                    Raw(http, url).request(1, "initialize", {})
                )
    assert second.status_code == 503


async def test_an_idle_session_expires_and_its_calls_are_cancelled() -> None:
    limits = HttpLimits(session_idle_timeout=0.3, stream_responses="when-needed")
    async with served(server(), limits=limits) as url, httpx.AsyncClient() as http:
        raw = Raw(http, url)
        with trio.fail_after(10):
            await raw.initialize()
            async with raw.stream(
                "POST", _call(raw, 1, "wait_forever", tag="idle")
            ) as (
                _,
                reader,
            ):
                await _priming(reader, retry=1000)
                await reader.next()
            await trio.sleep(1)  # idle time is the behaviour under test
            expired = await raw.post(raw.request(2, "tools/list"))
    assert expired.status_code == 404
    assert "idle" in http_tools.CLEANED


_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}


async def test_with_always_every_response_is_a_resumable_stream() -> None:
    always = HttpLimits(stream_responses="always")
    async with (
        served(server(), limits=always) as url,
        httpx.AsyncClient(timeout=10) as http,
    ):
        response = await Raw(http, url).post(_INITIALIZE)
        assert response.headers["content-type"].startswith("text/event-stream")
        body = response.text
    assert body.startswith("id: ")
    assert "retry: " in body.split("\n\n")[0]
    assert '"protocolVersion":"2025-11-25"' in body


async def test_by_default_a_response_that_comes_first_is_plain_json() -> None:
    # One write, and the connection carries the next request (issue 31).
    async with served(server()) as url, httpx.AsyncClient(timeout=10) as http:
        raw = Raw(http, url)
        raw.methods[1] = "initialize"
        response = await raw.post(_INITIALIZE)
        body = raw.checked_body(response)
    assert body["result"]["protocolVersion"] == "2025-11-25"


async def test_at_most_inbox_size_client_messages_wait_for_the_session() -> None:
    """Messages a POST hands over that need the session's own task (most
    notifications) wait for it; one more and the POST waits its turn."""
    http = HttpSession("s", server(), HttpLimits(inbox_size=2))
    initialized = dumps(Notification("notifications/initialized"))
    async with trio.open_nursery() as nursery:
        await nursery.start(http.run)
        with trio.fail_after(5):
            # Neither waits, so the session's task has not run yet.
            await http.deliver(initialized)
            await http.deliver(initialized)
            assert not http.connection.initialized
            await http.deliver(initialized)
            # The third waited for the session to handle what was queued.
            assert http.connection.initialized
        http.close()


async def test_plain_json_responses_are_not_kept_for_resumption() -> None:
    # A response sent as plain JSON has no event id, so no client can resume
    # it: the session's store lets it go, and it does not count against
    # session_bytes (20 calls of 1 KB each, in a session allowed 4 KB).
    limits = HttpLimits(session_bytes=4096)
    async with served(server(), limits=limits) as url, httpx.AsyncClient() as http:
        raw = Raw(http, url)
        with trio.fail_after(20):
            await raw.initialize()
            statuses = []
            for request_id in range(2, 22):
                call = raw.request(request_id, "tools/call", {
                    "name": "echo", "arguments": {"text": "x" * 1000}})  # fmt: skip
                statuses.append((await raw.post(call)).status_code)
    assert statuses == [200] * 20

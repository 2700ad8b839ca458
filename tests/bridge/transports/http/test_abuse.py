"""The HTTP endpoint under abuse: bounded sessions and bytes, no lockout,
no stalled or dead peer holding anything for long, notice bursts, leaks.

Every test talks to the real endpoint over loopback (``served``), with small
limits so that the behaviour shows in well under a second.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
from typing import Any

import httpx
import pytest
import trio

from bridge.server import Server
from bridge.server.limits import ServerLimits
from bridge.transports.http import HttpLimits
from bridge.transports.sse import SseParser
from tests.bridge.http_kit import MODERN, Raw, SseReader, message_of, served
from tests.fixtures import http_tools

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

TOOLS = [
    http_tools.echo,
    http_tools.wait_forever,
    http_tools.burst,
    http_tools.leaks,
    http_tools.quiet,
]


INITIALIZE = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "racer", "version": "1"},
}


def _limits(**options: Any) -> HttpLimits:
    # Answers that come first as plain JSON, as Raw.initialize expects.
    return HttpLimits(stream_responses="when-needed", **options)


def server(**options: Any) -> Server:
    return Server(TOOLS, name="abuse-test", **options)


def _call(raw: Raw, request_id: Any, name: str, **arguments: Any) -> dict[str, Any]:
    return raw.request(request_id, "tools/call", {"name": name, "arguments": arguments})


async def _parked(reader: SseReader) -> None:
    """Read a parked ``wait_forever`` call's stream up to its question."""
    while True:
        event = await reader.next()
        assert event is not None
        if event.data and message_of(event).get("method") == "elicitation/create":
            return


async def _result_text(reader: SseReader) -> str:
    while (event := await reader.next()) is not None:
        if event.data and "result" in (message := message_of(event)):
            return message["result"]["content"][0]["text"]
    raise AssertionError("the stream ended without a result")


# --- sessions: no lockout -----------------------------------------------------------


async def test_many_initializes_cannot_lock_a_well_behaved_client_out() -> None:
    limits = _limits(max_sessions=8)
    async with served(server(), limits=limits) as url, httpx.AsyncClient() as http:
        with trio.fail_after(30):
            for _ in range(40):  # an attacker opening sessions it never uses
                await Raw(http, url).initialize()
            client = Raw(http, url)
            await client.initialize()
            response = await client.post(_call(client, 1, "echo", text="hi"))
    assert response.status_code == 200
    assert '"hi"' in response.text


async def test_initializes_racing_at_the_cap_get_a_session_or_a_503(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A session being opened was in the table before it ran, and another
    # initialize evicted it: 500 and a traceback, for two in three requests.
    limits = _limits(max_sessions=4)
    statuses: list[int] = []
    async with served(server(), limits=limits) as url, httpx.AsyncClient() as http:

        async def opener() -> None:
            for _ in range(25):
                raw = Raw(http, url)
                answer = await raw.post(raw.request(1, "initialize", INITIALIZE))
                statuses.append(answer.status_code)
                if answer.status_code == 200:
                    raw.session_id = answer.headers["mcp-session-id"]
                    ping = await raw.post(raw.request(2, "ping"))
                    statuses.append(ping.status_code)

        with trio.fail_after(60):
            async with trio.open_nursery() as nursery:
                for _ in range(8):
                    nursery.start_soon(opener)
    # An evicted session's ping is a 404: it was ended, as the docs say.
    assert set(statuses) <= {200, 404, 503}, sorted(set(statuses))
    assert statuses.count(200) >= 100
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def test_a_new_session_is_not_the_next_evicted() -> None:
    # Unused sessions went first: an attacker whose sessions had each made one
    # request evicted every session a client opened, before its first call.
    limits = _limits(max_sessions=4)
    async with served(server(), limits=limits) as url, httpx.AsyncClient() as http:
        attacker = [Raw(http, url) for _ in range(4)]
        with trio.fail_after(30):
            for raw in attacker:
                await raw.initialize()
                assert (await raw.post(raw.request(2, "ping"))).is_success
            answered = 0
            for turn in range(10):
                client = Raw(http, url)
                await client.initialize()
                again = Raw(http, url)  # the attacker's next session
                await again.initialize()
                assert (await again.post(again.request(2, "ping"))).is_success
                call = await client.post(_call(client, turn, "echo", text="hi"))
                answered += call.status_code == 200
    assert answered == 10


async def test_a_session_that_makes_no_request_expires_in_seconds() -> None:
    limits = _limits(unused_session_timeout=0.3)
    async with served(server(), limits=limits) as url, httpx.AsyncClient() as http:
        unused, used = Raw(http, url), Raw(http, url)
        with trio.fail_after(10):
            await unused.initialize()
            await used.initialize()
            assert (await used.post(_call(used, 1, "echo", text="x"))).is_success
            await trio.sleep(1)  # the time limit is the behaviour under test
            gone = await unused.post(_call(unused, 1, "echo", text="x"))
            alive = await used.post(_call(used, 2, "echo", text="x"))
    assert gone.status_code == 404
    assert alive.status_code == 200


# --- what one session can make the server hold --------------------------------------


async def test_one_session_cannot_hold_more_bytes_than_its_cap() -> None:
    limits = _limits(session_bytes=800_000, max_body=600_000)
    big = "x" * 300_000
    async with served(server(), limits=limits) as url, httpx.AsyncClient() as http:
        raw = Raw(http, url)
        with trio.fail_after(20):
            await raw.initialize()
            async with (
                raw.stream("POST", _call(raw, 1, "wait_forever", tag=big)) as (_, a),
                raw.stream("POST", _call(raw, 2, "wait_forever", tag=big)) as (_, b),
            ):
                await _parked(a)
                await _parked(b)
                refused = await raw.post(_call(raw, 3, "wait_forever", tag=big))
                small = await raw.post(_call(raw, 4, "echo", text="still here"))
    assert refused.status_code == 429
    assert refused.json()["error"]["code"] == -32000
    assert "holds too much" in refused.json()["error"]["message"]
    assert small.status_code == 200


async def test_calls_in_flight_per_session_are_capped() -> None:
    limits = ServerLimits(max_calls_per_session=2)
    async with (
        served(server(limits=limits), limits=_limits()) as url,
        httpx.AsyncClient() as http,
    ):
        raw = Raw(http, url)
        with trio.fail_after(20):
            await raw.initialize()
            async with (
                raw.stream("POST", _call(raw, 1, "wait_forever", tag="c1")) as (_, a),
                raw.stream("POST", _call(raw, 2, "wait_forever", tag="c2")) as (_, b),
            ):
                await _parked(a)
                await _parked(b)
                third = await _answer(raw, _call(raw, 3, "wait_forever", tag="c3"))
    assert third["error"]["code"] == -32000
    assert "limit 2" in third["error"]["message"]


async def test_subscriptions_and_client_values_are_bounded() -> None:
    limits = ServerLimits(max_subscriptions=2, max_client_value=1000)
    async with (
        served(server(limits=limits), limits=_limits()) as url,
        httpx.AsyncClient() as http,
    ):
        raw = Raw(http, url)
        with trio.fail_after(20):
            huge_info = {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "x" * 5000, "version": "1"},
            }
            refused_info = await _answer(raw, raw.request(0, "initialize", huge_info))
            await raw.initialize()
            uris = ["a://1", "a://2", "a://3", "a://" + "x" * 2000]
            answers = [
                await _answer(raw, raw.request(n, "resources/subscribe", {"uri": uri}))
                for n, uri in enumerate(uris)
            ]
    assert "clientInfo is too large" in refused_info["error"]["message"]
    assert [a.get("result") for a in answers[:2]] == [{}, {}]
    assert answers[2]["error"]["code"] == -32000  # a third subscription
    assert "the uri is too large" in answers[3]["error"]["message"]


async def _answer(raw: Raw, body: dict[str, Any]) -> dict[str, Any]:
    """The JSON-RPC answer to ``body``, whether it comes as JSON or SSE."""
    response = await raw.post(body)
    if response.headers["content-type"] == "application/json":
        return response.json()
    events = SseParser().feed(response.content)
    return json.loads([e for e in events if e.data][-1].data)


# --- a client that goes away ends its calls -----------------------------------------


async def test_a_cancelled_call_frees_its_stream_and_its_id_at_once() -> None:
    async with served(server(), limits=_limits()) as url, httpx.AsyncClient() as http:
        raw = Raw(http, url)
        with trio.fail_after(10):
            await raw.initialize()
            async with raw.stream(
                "POST", _call(raw, 7, "wait_forever", tag="cancelled")
            ) as (_, reader):
                await _parked(reader)
                cancel = {
                    "jsonrpc": "2.0",
                    "method": "notifications/cancelled",
                    "params": {"requestId": 7},
                }
                assert (await raw.post(cancel)).status_code == 202
                rest = await reader.rest()  # the stream ends: nothing more comes
            again = await _answer(raw, _call(raw, 7, "echo", text="same id"))
    # The question is withdrawn, and no response comes: the stream just ends.
    assert [message_of(e)["method"] for e in rest if e.data] == [
        "notifications/cancelled"
    ]
    assert "cancelled" in http_tools.CLEANED
    assert again["result"]["content"][0]["text"] == "same id"


async def test_a_client_that_vanishes_mid_call_has_the_call_cancelled() -> None:
    # The client's connection closes (as when it is killed) and it never
    # resumes: within orphan_timeout the call is cancelled and its finally runs.
    limits = _limits(orphan_timeout=0.3)
    async with served(server(), limits=limits) as url, httpx.AsyncClient() as http:
        raw = Raw(http, url)
        with trio.fail_after(10):
            await raw.initialize()
            async with raw.stream(
                "POST", _call(raw, 1, "wait_forever", tag="vanished")
            ) as (_, reader):
                await _parked(reader)
            while "vanished" not in http_tools.CLEANED:
                await trio.sleep(0.05)
            after = await raw.post(_call(raw, 2, "echo", text="x"))
    assert after.status_code == 404  # the session ended with its client


async def test_a_client_waiting_on_its_post_is_not_taken_for_gone() -> None:
    # No GET stream (the client may open none) and a call that says nothing
    # for longer than orphan_timeout: the client's POST is open, waiting for
    # its answer. The session once ended under it ("the session ended", 404).
    limits = _limits(orphan_timeout=0.3)
    async with served(server(), limits=limits) as url, httpx.AsyncClient() as http:
        raw = Raw(http, url)
        with trio.fail_after(10):
            await raw.initialize()
            response = await raw.post(_call(raw, 1, "quiet", seconds=1.5))
    assert response.status_code == 200, response.text
    assert response.json()["result"]["content"][0]["text"] == "rested"


async def test_a_quiet_call_is_answered_as_a_stream_that_heartbeats() -> None:
    # A plain JSON answer held back for a call that says nothing would let no
    # byte through for as long as the call runs, and a proxy's idle timeout
    # (nginx's 60 s, say) would cut it. Past the heartbeat, the answer is an
    # SSE stream, and its comments keep the connection alive.
    limits = _limits(heartbeat=0.3)
    async with served(server(), limits=limits) as url, httpx.AsyncClient() as http:
        raw = Raw(http, url)
        with trio.fail_after(10):
            await raw.initialize()
            body = json.dumps(_call(raw, 1, "quiet", seconds=1.2))
            async with http.stream(
                "POST", url, content=body, headers=raw.headers()
            ) as response:
                kind = response.headers["content-type"]
                received = b"".join([chunk async for chunk in response.aiter_bytes()])
    assert kind.startswith("text/event-stream")
    assert received.count(b": keep-alive") >= 2, received
    assert b'"text":"rested"' in received.replace(b" ", b""), received


# --- notice bursts ------------------------------------------------------------------


async def test_a_burst_of_notices_beyond_the_event_store_completes_the_call(
    caplog: pytest.LogCaptureFixture,
) -> None:
    limits = _limits(event_capacity=64)
    async with served(server(), limits=limits) as url, httpx.AsyncClient() as http:
        raw = Raw(http, url)
        with trio.fail_after(30):
            await raw.initialize()
            async with raw.stream("POST", _call(raw, 1, "burst", count=3000)) as (
                response,
                reader,
            ):
                status = response.status_code
                text = await _result_text(reader)
    assert status == 200
    assert text == "sent 3000"
    assert "notices dropped" in caplog.text


# --- stalled and dead peers ---------------------------------------------------------


async def test_a_stalled_request_body_times_out() -> None:
    limits = _limits(body_timeout=0.3)
    async with served(server(), limits=limits) as url:
        port = httpx.URL(url).port
        assert port is not None
        with trio.fail_after(10):
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            head = (
                "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                "Content-Type: application/json\r\nAccept: application/json\r\n"
                "Content-Length: 100\r\n\r\n{"
            )
            await stream.send_all(head.encode())
            reply = await stream.receive_some(4096)
            await stream.aclose()
    assert reply.startswith(b"HTTP/1.1 408")


def _post_head(length: int, sent: str) -> bytes:
    return (
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        "Content-Type: application/json\r\nAccept: application/json\r\n"
        f"Connection: close\r\nContent-Length: {length}\r\n\r\n{sent}"
    ).encode()


async def _until_closed(stream: trio.SocketStream) -> bytes:
    out = b""
    with contextlib.suppress(trio.BrokenResourceError):
        while chunk := await stream.receive_some(65536):
            out += chunk
    return out


async def _holding(port: int, count: int, sent: bytes) -> list[trio.SocketStream]:
    """``count`` connections that each sent ``sent`` (a body's start) and
    hold it."""
    streams = []
    for _ in range(count):
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        await stream.send_all(sent)
        streams.append(stream)
    return streams


async def test_bodies_arriving_at_once_are_bounded_on_all_connections() -> None:
    # A body is read before its session is known, so session_bytes could not
    # count it: a thousand connections each declaring 4 MiB and sending all
    # but a byte held 4 GB, with no session and no token.
    limits = _limits(max_body=1000, bodies_bytes=2500)
    async with served(server(), limits=limits) as url:
        port = httpx.URL(url).port
        assert port is not None
        with trio.fail_after(10):
            # 2 x 999 held: within the 2500
            slow = await _holding(port, 2, _post_head(1000, "{" + " " * 998))
            await trio.sleep(0.2)  # (their bytes are read)
            third = await trio.open_tcp_stream("127.0.0.1", port)
            await third.send_all(_post_head(1000, "{" + " " * 998))
            refused = await _until_closed(third)  # 2,997 held: past it
            small = await trio.open_tcp_stream("127.0.0.1", port)
            await small.send_all(_post_head(400, "{" + " " * 398 + "}"))
            answered = await _until_closed(small)  # 2,398: it still fits
            for stream in slow:
                await stream.aclose()
            await trio.sleep(0.2)  # (their reads end)
            again = await trio.open_tcp_stream("127.0.0.1", port)
            await again.send_all(_post_head(1000, "{" + " " * 998 + "}"))
            after = await _until_closed(again)
    assert refused.startswith(b"HTTP/1.1 503"), refused
    assert b"\r\nretry-after: 1\r\n" in refused.lower()
    assert refused.endswith(b"too many request bodies arriving at once")
    assert answered.startswith(b"HTTP/1.1 400"), answered  # read: not JSON-RPC
    assert after.startswith(b"HTTP/1.1 400"), after  # the budget came back


async def test_bodies_declared_large_and_not_sent_lock_no_one_out() -> None:
    # 16 connections declaring 4 MiB and sending a byte each (3 KB in all)
    # took the whole budget at once: every other POST got 503 for the body
    # timeout, and the attacker could start again.
    limits = _limits(max_body=1000, bodies_bytes=2500)
    async with served(server(), limits=limits) as url:
        port = httpx.URL(url).port
        assert port is not None
        with trio.fail_after(10):
            idle = await _holding(port, 16, _post_head(1000, "{"))
            await trio.sleep(0.2)  # (their heads and bytes are read)
            other = await trio.open_tcp_stream("127.0.0.1", port)
            await other.send_all(_post_head(1000, "{" + " " * 998 + "}"))
            answered = await _until_closed(other)
            for stream in idle:
                await stream.aclose()
    assert answered.startswith(b"HTTP/1.1 400"), answered  # read: not JSON-RPC


def _quiet_call(raw: Raw, seconds: float, junk: int) -> tuple[str, dict[str, str]]:
    """A 2026-07-28 ``quiet`` call carrying ``junk`` empty objects: about 99
    bytes of memory each once read, 3 on the wire."""
    envelope = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "junk": [{}] * junk,
    }
    params = {"name": "quiet", "arguments": {"seconds": seconds}, "_meta": envelope}
    body = json.dumps(raw.request(1, "tools/call", params), separators=(",", ":"))
    return body, raw.headers(mcp_method="tools/call", mcp_name="quiet")


async def test_the_memory_of_requests_being_answered_is_bounded() -> None:
    # bodies_bytes counted bytes while they came, and gave them back once
    # read: 10 calls of 4 MiB of {}, each holding its parsed message while it
    # ran, took the server from 44 to 1,172 MiB, any client, no token.
    limits = _limits(requests_memory=2 * 1024 * 1024)
    async with served(server(), limits=limits) as url, httpx.AsyncClient() as http:
        raw = Raw(http, url, era=MODERN)
        held, headers = _quiet_call(raw, 1.5, 20_000)  # ~1.9 MiB once read
        brief, _ = _quiet_call(raw, 0.01, 20_000)
        huge, _ = _quiet_call(raw, 0.01, 30_000)  # ~2.8 MiB: never fits
        junk = held.replace('"jsonrpc"', '"jsonrpx"')  # refused once read
        with trio.fail_after(20):
            async with trio.open_nursery() as nursery:

                async def hold() -> None:
                    answer = await http.post(url, content=held, headers=headers)
                    assert b"rested" in answer.content

                nursery.start_soon(hold)
                await trio.sleep(0.7)  # (read, and its step running)
                beside = await http.post(url, content=brief, headers=headers)
                too_big = await http.post(url, content=huge, headers=headers)
            refused = [await http.post(url, content=junk, headers=headers)]
            refused += [await http.post(url, content=junk, headers=headers)]
            after = await http.post(url, content=brief, headers=headers)
    assert beside.status_code == 503, beside.text
    assert beside.headers["retry-after"] == "1"
    assert beside.text.endswith(
        "the requests being answered take the memory set for them"
    )
    assert too_big.status_code == 413, too_big.text
    assert re.fullmatch(
        r"Payload Too Large: read, this request would take about 3 MiB of memory, "
        r"more than the server's requests_memory \(2 MiB\)",
        too_big.text,
    ), too_big.text
    assert [r.status_code for r in refused] == [400, 400]
    assert after.status_code == 200  # all was given back
    assert b"rested" in after.content


async def _raw_lines(response: httpx.Response) -> bytes:
    """Everything the stream sends until it ends."""
    return b"".join([chunk async for chunk in response.aiter_raw()])


async def test_an_idle_listen_stream_gets_heartbeats_and_a_maximum_lifetime() -> None:
    limits = _limits(heartbeat=0.1, max_stream_seconds=0.6)
    async with served(server(), limits=limits) as url, httpx.AsyncClient() as http:
        raw = Raw(http, url, era=MODERN)
        envelope = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        params = {"notifications": {"toolsListChanged": True}, "_meta": envelope}
        body = raw.request(1, "subscriptions/listen", params)
        with trio.fail_after(10):
            async with http.stream(
                "POST",
                url,
                content=json.dumps(body),
                headers=raw.headers(mcp_method="subscriptions/listen"),
            ) as response:
                sent = await _raw_lines(response)  # ends on its own
    assert b"notifications/subscriptions/acknowledged" in sent
    assert sent.count(b": keep-alive") >= 2


async def test_a_quiet_2026_call_is_answered_as_a_stream_that_heartbeats() -> None:
    # The same as the 2025-11-25 test above: no byte for as long as a call is
    # quiet would let a proxy's idle timeout cut it.
    limits = _limits(heartbeat=0.3)
    async with served(server(), limits=limits) as url, httpx.AsyncClient() as http:
        raw = Raw(http, url, era=MODERN)
        envelope = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        params = {"name": "quiet", "arguments": {"seconds": 1.2}, "_meta": envelope}
        body = raw.request(1, "tools/call", params)
        headers = raw.headers(mcp_method="tools/call", mcp_name="quiet")
        with trio.fail_after(10):
            async with http.stream(
                "POST", url, content=json.dumps(body), headers=headers
            ) as response:
                kind = response.headers["content-type"]
                sent = await _raw_lines(response)
    assert kind.startswith("text/event-stream")
    assert sent.count(b": keep-alive") >= 2, sent
    assert b'"text":"rested"' in sent.replace(b" ", b""), sent


async def test_an_idle_get_stream_gets_heartbeats_and_a_maximum_lifetime() -> None:
    limits = _limits(heartbeat=0.1, max_stream_seconds=0.6)
    async with served(server(), limits=limits) as url, httpx.AsyncClient() as http:
        raw = Raw(http, url)
        with trio.fail_after(10):
            await raw.initialize()
            headers = raw.headers(accept="text/event-stream")
            del headers["content-type"]
            async with http.stream("GET", url, headers=headers) as response:
                sent = await _raw_lines(response)  # ends on its own
    assert sent.count(b": keep-alive") >= 2


# --- what a failure tells the client -------------------------------------------------


@pytest.mark.parametrize("debug", [False, True])
async def test_an_unexpected_exception_reaches_the_log_not_the_client(
    debug: bool, caplog: pytest.LogCaptureFixture
) -> None:
    async with (
        served(server(debug=debug), limits=_limits()) as url,
        httpx.AsyncClient() as http,
    ):
        raw = Raw(http, url)
        with trio.fail_after(10), caplog.at_level(logging.ERROR, "yieldmcp"):
            await raw.initialize()
            answer = await _answer(raw, _call(raw, 1, "leaks"))
    result = answer["result"]
    text = result["content"][0]["text"]
    assert result["isError"] is True
    error_id = re.search(r"error id ([0-9a-f]+)", text)
    assert error_id is not None
    logged = [r for r in caplog.records if error_id[1] in r.getMessage()]
    assert logged
    assert logged[0].exc_info is not None  # the traceback, under the same id
    assert ("hunter2" in text) is debug
    assert ("secrets.py" in text) is debug

"""The HTTP/1.1 server under ``serve --http``: its clocks, caps and backlog.

Every test speaks raw HTTP/1.1 over a real loopback socket to the real
endpoint (``served``), with small limits so that each behaviour shows within
a second or two: a stalled request head, a stalled body, the connection cap
and its one warning, the listen backlog, keep-alive and its idle timeout, and
a ``subscriptions/listen`` stream whose peer went away.
"""

from __future__ import annotations

import functools
import json
import logging
import shutil
import signal
import subprocess
import sys
from typing import Any

import httpx
import pytest
import trio

from bridge.server import Server
from bridge.transports.http import HttpLimits
from bridge.transports.http.serving import (
    ConnectionSettings,
    Listener,
    serve_app,
    times_body,
)
from bridge.transports.http.serving.clock import Clock, tick_for
from tests.bridge.http_kit import MODERN, served
from tests.fixtures import http_tools
from tests.helpers import ROOT

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}


def _server() -> Server:
    return Server([http_tools.echo], name="http-server-test")


def _port(url: str) -> int:
    port = httpx.URL(url).port
    assert port is not None
    return port


def _post(body: dict[str, Any], *extra: str) -> bytes:
    data = json.dumps(body).encode()
    head = [
        "POST /mcp HTTP/1.1",
        "Host: 127.0.0.1",
        "Content-Type: application/json",
        "Accept: application/json, text/event-stream",
        f"MCP-Protocol-Version: {MODERN}",
        f"Content-Length: {len(data)}",
        *extra,
    ]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + data


def _list(request_id: int = 1) -> bytes:
    return _post(
        {"jsonrpc": "2.0", "id": request_id, "method": "tools/list",
         "params": {"_meta": ENVELOPE}},
        "Mcp-Method: tools/list",
    )  # fmt: skip


async def _read_response(
    stream: trio.SocketStream, *, head_only: bool = False
) -> bytes:
    """One whole ``content-length`` response (head and body); with
    ``head_only`` (a HEAD's response), its head, and nothing may follow."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = await stream.receive_some(65536)
        assert chunk, f"the server closed mid-response: {data!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    if head_only:
        assert body == b"", body
        return head + b"\r\n\r\n"
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        body += await stream.receive_some(65536)
    return head + b"\r\n\r\n" + body


async def _until_closed(stream: trio.SocketStream) -> bytes:
    """Everything the server sends until it closes the connection."""
    out = b""
    while chunk := await stream.receive_some(65536):
        out += chunk
    return out


async def test_a_stalled_request_head_gets_408_and_the_connection_closes() -> None:
    limits = HttpLimits(header_timeout=0.3)
    async with served(_server(), limits=limits) as url:
        with trio.fail_after(10):
            stream = await trio.open_tcp_stream("127.0.0.1", _port(url))
            await stream.send_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            reply = await _until_closed(stream)
    assert reply.startswith(b"HTTP/1.1 408")


async def test_a_connection_that_sends_nothing_is_closed() -> None:
    limits = HttpLimits(header_timeout=0.3)
    async with served(_server(), limits=limits) as url:
        with trio.fail_after(10):
            stream = await trio.open_tcp_stream("127.0.0.1", _port(url))
            reply = await _until_closed(stream)
    assert reply == b""


async def test_a_stalled_body_gets_408_on_the_lean_server() -> None:
    limits = HttpLimits(body_timeout=0.3)
    async with served(_server(), limits=limits) as url:
        with trio.fail_after(10):
            stream = await trio.open_tcp_stream("127.0.0.1", _port(url))
            request = _list()
            await stream.send_all(request[:-5])  # the body's end never comes
            reply = await _until_closed(stream)
    assert reply.startswith(b"HTTP/1.1 408")


async def test_an_oversized_request_head_is_refused() -> None:
    limits = HttpLimits(max_header_bytes=1024)
    async with served(_server(), limits=limits) as url:
        with trio.fail_after(10):
            stream = await trio.open_tcp_stream("127.0.0.1", _port(url))
            await stream.send_all(
                _list().replace(b"Host:", b"X-Big: " + b"a" * 4096 + b"\r\nHost:")
            )
            reply = await _until_closed(stream)
    assert reply.startswith(b"HTTP/1.1 431")


async def test_head_gets_the_head_of_what_get_would_get_and_no_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # HEAD is answered as GET; its body was handed to h11, which refuses it
    # for HEAD: an empty reply and a 25-line traceback logged per request.
    async with served(_server()) as url:
        with trio.fail_after(10):
            stream = await trio.open_tcp_stream("127.0.0.1", _port(url))
            heads = []
            for path in (b"/mcp", b"/nowhere"):
                await stream.send_all(
                    b"HEAD %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" % path
                )
                head = await _read_response(stream, head_only=True)
                assert head.endswith(b"\r\n\r\n")  # and no body follows
                heads.append(head)
            await stream.send_all(_list())  # and the connection goes on
            after = await _read_response(stream)
    assert heads[0].startswith(b"HTTP/1.1 405"), heads[0]
    assert heads[1].startswith(b"HTTP/1.1 404"), heads[1]
    assert after.startswith(b"HTTP/1.1 200")
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


async def test_a_malformed_chunked_body_gets_400_not_a_silent_close() -> None:
    async with served(_server()) as url:
        with trio.fail_after(10):
            stream = await trio.open_tcp_stream("127.0.0.1", _port(url))
            head = (
                _list()
                .split(b"\r\n\r\n")[0]
                .replace(b"Content-Length: ", b"Transfer-Encoding: chunked\r\nX-Was: ")
            )
            await stream.send_all(head + b"\r\n\r\nzz\r\n{}\r\n0\r\n\r\n")
            reply = await _until_closed(stream)
    assert reply.startswith(b"HTTP/1.1 400"), reply


async def test_content_length_and_chunked_together_get_400_and_a_close() -> None:
    # h11 framed it by Transfer-Encoding and kept the connection: a proxy in
    # front framing by Content-Length would see another request boundary.
    async with served(_server()) as url:
        with trio.fail_after(10):
            stream = await trio.open_tcp_stream("127.0.0.1", _port(url))
            body = _list().split(b"\r\n\r\n", 1)[1]
            chunked = f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n"
            head = _list().split(b"\r\n\r\n")[0]
            smuggled = b"GET /smuggled HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
            await stream.send_all(
                head + b"\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked + smuggled
            )
            reply = await _until_closed(stream)
    assert reply.startswith(b"HTTP/1.1 400"), reply
    assert b"connection: close" in reply.lower()
    assert reply.count(b"HTTP/1.1") == 1  # nothing more was answered
    assert reply.endswith(b"both Content-Length and Transfer-Encoding")


async def test_keep_alive_serves_several_requests_then_closes_when_idle() -> None:
    limits = HttpLimits(keepalive_timeout=0.3)
    async with served(_server(), limits=limits) as url:
        with trio.fail_after(10):
            stream = await trio.open_tcp_stream("127.0.0.1", _port(url))
            replies = []
            for request_id in (1, 2, 3):
                await stream.send_all(_list(request_id))
                replies.append(await _read_response(stream))
            rest = await _until_closed(stream)  # the idle timeout closes it
    assert all(reply.startswith(b"HTTP/1.1 200") for reply in replies), replies
    assert [json.loads(r.partition(b"\r\n\r\n")[2])["id"] for r in replies] == [1, 2, 3]
    assert rest == b""


async def test_over_the_connection_cap_a_client_gets_503_and_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, "yieldmcp.http")
    limits = HttpLimits(max_connections=2)
    async with served(_server(), limits=limits) as url:
        port = _port(url)
        with trio.fail_after(10):
            held = [await trio.open_tcp_stream("127.0.0.1", port) for _ in range(2)]
            await trio.sleep(0.2)  # both accepted
            refused = []
            for _ in range(3):
                extra = await trio.open_tcp_stream("127.0.0.1", port)
                await extra.send_all(_list())
                refused.append(await _until_closed(extra))
            await held[0].aclose()
            await trio.sleep(0.2)  # its slot is free again
            again = await trio.open_tcp_stream("127.0.0.1", port)
            await again.send_all(_list())
            served_again = await _read_response(again)
    assert all(reply.startswith(b"HTTP/1.1 503") for reply in refused)
    assert all(b"retry-after: 1" in reply.lower() for reply in refused)
    assert served_again.startswith(b"HTTP/1.1 200")
    warnings = [r for r in caplog.records if "connection cap" in r.getMessage()]
    assert len(warnings) == 1
    assert warnings[0].exc_info is None  # one line, no traceback


async def test_the_listen_backlog_is_at_least_1024() -> None:
    ss = shutil.which("ss")
    if ss is None:
        pytest.skip("`ss` (iproute2) is not installed: cannot read the backlog")
    with open("/proc/sys/net/core/somaxconn") as f:
        somaxconn = int(f.read())
    async with served(_server()) as url:
        port = _port(url)
        listing = subprocess.run(
            [ss, "-Hltn", f"sport = :{port}"], capture_output=True, text=True,
            check=True,
        ).stdout  # fmt: skip
    # For a listening socket, ss's Send-Q column is its backlog.
    backlog = int(listing.split()[2])
    assert backlog == min(4096, somaxconn)
    assert backlog >= min(1024, somaxconn)


async def test_a_listen_stream_whose_peer_went_away_is_ended() -> None:
    server = _server()
    async with served(server, limits=HttpLimits(heartbeat=0.2)) as url:
        with trio.fail_after(10):
            stream = await trio.open_tcp_stream("127.0.0.1", _port(url))
            body = {
                "jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen",
                "params": {"notifications": {"toolsListChanged": True},
                           "_meta": ENVELOPE},
            }  # fmt: skip
            await stream.send_all(_post(body, "Mcp-Method: subscriptions/listen"))
            first = await stream.receive_some(65536)
            assert b"acknowledged" in first
            assert len(server._listeners) == 1  # pyright: ignore[reportPrivateUsage]
            await stream.aclose()  # the client dies
            while server._listeners:  # pyright: ignore[reportPrivateUsage]
                await trio.sleep(0.05)


async def test_a_peer_that_stops_reading_has_its_connection_and_app_ended() -> None:
    # The write deadline: a response the peer does not read stalls once the
    # socket buffers fill; after ``write_timeout`` the connection closes and
    # the app serving it is cancelled (not left writing forever).
    ended = trio.Event()

    async def endless(scope: Any, receive: Any, send: Any) -> None:
        try:
            start = {"type": "http.response.start", "status": 200, "headers": []}
            await send(start)
            chunk = {"type": "http.response.body", "body": b"x" * 65536,
                     "more_body": True}  # fmt: skip
            while True:
                await send(chunk)
        finally:
            ended.set()

    settings = ConnectionSettings(write_timeout=0.3)
    async with trio.open_nursery() as nursery:
        start = functools.partial(serve_app, endless, "127.0.0.1", 0, settings=settings)
        listener: Listener = await nursery.start(start)
        with trio.fail_after(20):
            stream = await trio.open_tcp_stream("127.0.0.1", listener.port)
            await stream.send_all(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            await ended.wait()  # never reading a byte
            while listener.open:
                await trio.sleep(0.05)
        await stream.aclose()
        nursery.cancel_scope.cancel()


async def test_the_server_times_a_body_the_app_reads_without_a_timer() -> None:
    # An app that waits on ``receive()`` with no timer of its own (as the MCP
    # endpoint does when the scope says the server times bodies) still sees a
    # stalled body end: the client gets 408 and the connection closes.
    waited = trio.Event()

    async def reader(scope: Any, receive: Any, send: Any) -> None:
        assert times_body(scope, 0.3)
        waited.set()
        while (await receive()).get("more_body", False):
            pass

    settings = ConnectionSettings(body_timeout=0.3)
    async with trio.open_nursery() as nursery:
        start = functools.partial(serve_app, reader, "127.0.0.1", 0, settings=settings)
        listener: Listener = await nursery.start(start)
        with trio.fail_after(20):
            stream = await trio.open_tcp_stream("127.0.0.1", listener.port)
            head = b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{"
            await stream.send_all(head)
            reply = await _until_closed(stream)
        nursery.cancel_scope.cancel()
    assert waited.is_set()
    assert reply.startswith(b"HTTP/1.1 408"), reply


class _Timed:
    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.expired = 0

    def expire(self) -> None:
        self.expired += 1


def test_the_clock_expires_only_connections_past_their_deadline_once() -> None:
    clock = Clock(tick=0.25)
    due, later, none = _Timed(1.0), _Timed(2.0), _Timed(float("inf"))
    clock.timed.update((due, later, none))
    clock.expire_due(1.5)
    clock.expire_due(1.6)
    assert (due.expired, later.expired, none.expired) == (1, 0, 0)
    clock.expire_due(2.0)
    assert (due.expired, later.expired, none.expired) == (1, 1, 0)


def test_the_clock_ticks_at_a_quarter_of_the_shortest_timeout_at_most_1s() -> None:
    assert tick_for(10.0, 30.0, 10.0) == 1.0
    assert tick_for(0.3, 10.0) == pytest.approx(0.075)


async def test_ctrl_c_stops_serve_http_quietly_with_exit_130() -> None:
    process = await trio.lowlevel.open_process(
        [sys.executable, "-m", "bridge.cli", "-v", "serve",
         str(ROOT / "examples" / "conformance_server.py"), "--http", "0"],
        stderr=subprocess.PIPE,
    )  # fmt: skip
    assert process.stderr is not None
    log = b""
    with trio.fail_after(60):
        while b"serving MCP at" not in log:
            chunk = await process.stderr.receive_some(4096)
            assert chunk, log
            log += chunk
        process.send_signal(signal.SIGINT)
        while chunk := await process.stderr.receive_some(4096):
            log += chunk
        code = await process.wait()
    assert code == 130
    assert b"Traceback" not in log

"""bridge.transports.stdio: frames over pipes keep whole, in order, either way;
a served process's stdout carries nothing but them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trio

from bridge.client import connect
from bridge.jsonrpc import Notification, parse
from bridge.jsonrpc.session import Session
from bridge.server import Server
from bridge.transports.stdio import StreamTransport
from tests.bridge.wire import _ClientSide
from tests.fixtures import slow_tools
from tests.helpers import ROOT, STARTUP

SERVE = [sys.executable, "-m", "bridge.cli", "serve"]
NOISY = str(ROOT / "tests/fixtures/noisy_tools.py")
QUIET = str(ROOT / "tests/fixtures/slow_tools.py")


@pytest.fixture
async def pipes() -> AsyncIterator[tuple[StreamTransport, StreamTransport]]:
    a_read, a_write = os.pipe()
    b_read, b_write = os.pipe()
    left = StreamTransport(
        trio.lowlevel.FdStream(a_read), trio.lowlevel.FdStream(b_write)
    )
    right = StreamTransport(
        trio.lowlevel.FdStream(b_read), trio.lowlevel.FdStream(a_write)
    )
    yield left, right
    for end in (left, right):
        await end.aclose()


def _note(n: int, size: int) -> Notification:
    return Notification("n", {"n": n, "pad": "x" * size})


async def test_frames_larger_than_the_pipe_stay_whole_and_in_order(
    pipes: tuple[StreamTransport, StreamTransport],
) -> None:
    left, right = pipes
    sizes = [10, 300_000, 10, 70_000, 10]  # a pipe holds 64 KiB
    received: list[int] = []
    done = trio.Event()

    async def read_all() -> None:
        while len(received) < len(sizes):
            message = parse(await right.receive())
            assert isinstance(message, Notification)
            assert message.params is not None
            assert len(message.params["pad"]) == sizes[message.params["n"]]
            received.append(message.params["n"])
        done.set()

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(left.pump)
            for n, size in enumerate(sizes[:3]):
                left.send_nowait(_note(n, size))  # queued behind the big one
            nursery.start_soon(read_all)
            await left.send(_note(3, sizes[3]))  # waits until it is out
            left.send_nowait(_note(4, sizes[4]))
            await done.wait()
            nursery.cancel_scope.cancel()
    assert received == [0, 1, 2, 3, 4]


async def test_sending_on_a_closed_stream_says_so(
    pipes: tuple[StreamTransport, StreamTransport],
) -> None:
    left, _right = pipes
    await left.aclose()
    with pytest.raises(trio.ClosedResourceError):
        left.send_nowait(_note(0, 1))
    with pytest.raises(trio.ClosedResourceError):
        await left.send(_note(0, 1))


async def test_a_live_call_over_pipes_is_answered_with_no_task(
    pipes: tuple[StreamTransport, StreamTransport],
) -> None:
    server_end, client_end = pipes
    server = Session(server_end, Server([slow_tools.quick]).connection())
    client = Session(client_end, _ClientSide(None))
    async with trio.open_nursery() as nursery:
        await nursery.start(server.run)
        await nursery.start(client.run)
        with trio.fail_after(5):
            await client.request(
                "initialize",
                {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {}},
            )
            result = await client.request(
                "tools/call", {"name": "quick", "arguments": {}}
            )
        assert result == {
            "content": [{"type": "text", "text": "quick"}],
            "structuredContent": {"result": "quick"},  # -> str, as the SDK
        }
        assert server.immediate
        assert server._nursery is not None
        # Only the writer task: the call needed none of its own.
        assert [t.name for t in server._nursery.child_tasks] == [
            "bridge.transports.stdio.StreamTransport.pump"
        ]
        nursery.cancel_scope.cancel()


# --- a real `yieldmcp serve` process ----------------------------------------------


def _frame(message: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n"


HANDSHAKE = [
    _frame(
        {
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "0"},
            },
        }
    ),
    _frame({"method": "notifications/initialized"}),
]


async def _talk(target: str, frames: list[bytes], last_id: int) -> tuple[bytes, bytes]:
    """Serve ``target`` over stdio, write ``frames``, read until the answer to
    ``last_id`` is out, then close stdin: everything on stdout, and on stderr."""
    process = await trio.lowlevel.open_process(
        [*SERVE, target],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    assert process.stdin is not None
    assert process.stdout is not None
    assert process.stderr is not None
    stdin, stdout, stderr = process.stdin, process.stdout, process.stderr
    out, err = bytearray(), bytearray()
    answered = f'"id":{last_id}'.encode()

    async def drain_stderr() -> None:
        while chunk := await stderr.receive_some():
            err.extend(chunk)

    async def write() -> None:
        for frame in frames:
            await stdin.send_all(frame)

    try:
        with trio.fail_after(60):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(drain_stderr)
                nursery.start_soon(write)
                # Until a whole line holds the answer (spaces or not, say).
                while not any(
                    answered in line.replace(b" ", b"")
                    for line in out.split(b"\n")[:-1]
                ):
                    chunk = await stdout.receive_some()
                    assert chunk, f"stdout closed early: {bytes(out)!r} {bytes(err)!r}"
                    out.extend(chunk)
                await stdin.aclose()
                while chunk := await stdout.receive_some():
                    out.extend(chunk)
            assert await process.wait() == 0, bytes(err)
    finally:
        with trio.CancelScope(shield=True):
            if process.returncode is None:
                process.kill()
                await process.wait()
    return bytes(out), bytes(err)


def _messages(stdout: bytes) -> list[dict[str, Any]]:
    """Every stdout line, each of which must be one JSON-RPC 2.0 message."""
    assert stdout.endswith(b"\n"), stdout[-200:]
    messages: list[dict[str, Any]] = []
    for line in stdout.split(b"\n")[:-1]:
        message: dict[str, Any] = json.loads(line)  # fails on anything printed
        assert isinstance(message, dict), line
        assert message["jsonrpc"] == "2.0", line
        messages.append(message)
    return messages


NOISE = [
    "noisy: print at import",
    "noisy: sys.stdout.write at import, no newline",
    "noisy: print in the tool hi",
    "noisy: print without a newline",
    "noisy: os.write(1) in the tool",
    "noisy: a child process prints",
]


async def test_what_the_served_code_prints_goes_to_stderr_not_between_frames() -> None:
    call = {"name": "shout", "arguments": {"word": "hi"}}
    stdout, stderr = await _talk(
        NOISY,
        [*HANDSHAKE, _frame({"id": 2, "method": "tools/call", "params": call})],
        last_id=2,
    )
    assert b"noisy" not in stdout
    messages = _messages(stdout)
    assert [m.get("id") for m in messages] == [1, 2]
    assert messages[1]["result"]["content"] == [{"type": "text", "text": "HI"}]
    for noise in NOISE:
        assert noise in stderr.decode(), stderr


async def test_our_client_calls_a_tool_that_prints() -> None:
    with trio.fail_after(120):
        async with connect(
            [*SERVE, NOISY], cwd=str(ROOT), era="legacy", connect_timeout=STARTUP
        ) as client:
            (tool,) = await client.list_tools()
            assert tool["name"] == "shout"
            first = await client.call_tool("shout", {"word": "hi"})
            again = await client.call_tool("shout", {"word": "again"})
    assert (first.text, again.text) == ("HI", "AGAIN")


async def test_an_oversized_line_is_answered_and_the_next_request_still_is() -> None:
    limit = 16 * 1024 * 1024  # the default max_message
    huge = _frame(
        {"id": 2, "method": "tools/list", "params": {"pad": "x" * (limit + 1)}}
    )
    stdout, _stderr = await _talk(
        QUIET,
        [*HANDSHAKE, huge, _frame({"id": 3, "method": "tools/list"})],
        last_id=3,
    )
    initialized, refused, listed = _messages(stdout)
    assert initialized["id"] == 1
    # No id: the line was never read, and MCP's schemas refuse a null id.
    assert refused == {
        "jsonrpc": "2.0",
        "error": {"code": -32600, "message": "Invalid request: message too large"},
    }
    assert listed["id"] == 3
    assert "quick" in [tool["name"] for tool in listed["result"]["tools"]]


def test_a_host_that_stops_reading_stdout_stops_the_server_reading_stdin() -> None:
    # A host writes requests and never reads the replies. The server must stop
    # reading once its queued replies pass the bound, so the host's writes
    # block (the pipe fills) instead of the server queueing without end.
    served = ROOT / "tests/fixtures/load_tools.py"
    ping = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode() + b"\n"
    process = subprocess.Popen(
        [sys.executable, "-m", "bridge.cli", "serve", str(served)],
        cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    assert process.stdin is not None
    written = 0
    limit = 64 * 1024 * 1024  # without backpressure the server takes it all
    fd = process.stdin.fileno()
    os.set_blocking(fd, False)
    pending = b""
    try:
        stalled_since: float | None = None
        give_up = time.monotonic() + 90
        while written < limit and time.monotonic() < give_up:
            pending = pending or ping * 4096
            try:
                sent = os.write(fd, pending)  # whole lines only, in the end
                written += sent
                pending = pending[sent:]
                stalled_since = None
            except BlockingIOError:
                now = time.monotonic()
                stalled_since = stalled_since or now
                if now - stalled_since > 3 and written > 1024 * 1024:
                    break  # the server stopped reading: backpressure
                time.sleep(0.01)
        rss_mib = _rss_mib(process.pid)
    finally:
        process.kill()
        process.wait(timeout=10)
        process.stdin.close()
        if process.stdout is not None:
            process.stdout.close()
    assert written < 32 * 1024 * 1024, f"the server read {written} bytes"
    assert rss_mib < 200


def _rss_mib(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    line = next(row for row in status.splitlines() if row.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024

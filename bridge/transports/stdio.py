"""Newline-delimited JSON-RPC over byte streams: our stdio, or a child process.

The server side reads stdin and writes stdout, and stdout carries nothing but
MCP messages: :func:`reserve_stdout_for_mcp` keeps the real stdout for the
transport and sends whatever else the process writes there (``print``, logs,
child processes) to stderr. The client side spawns a command and talks to its
pipes.

Frames never interleave and keep their order. A frame is written at once when
nothing is queued before it and the pipe takes it (a non-blocking ``write``);
otherwise it is queued: :meth:`StreamTransport.send` then writes the queue until
its frame is out (backpressure), :meth:`StreamTransport.send_nowait` leaves it
to the session's writer task (:meth:`StreamTransport.pump`). With
``max_queued``, a transport holding more than that many bytes for a peer that
is not reading stops reading until the queue drains (backpressure: a host that
stops reading a server's stdout cannot make it queue replies without bound).
The replies the session is still computing count too, each as large as the
replies written so far on average (at least :data:`REPLY_FLOOR`): a host that
floods requests faster than they are answered is stopped before their
replies exist, not after (:meth:`StreamTransport.count_replies_in_flight`).
Reads go straight
to the pipe too, waiting only when it is empty. On pipes (file descriptors) a
frame thus costs no scheduling of its own; other streams go through their
``send_all`` / ``receive_some``.

The client side (``client=True``) does not wait for room: a server
that asks more than it reads (more than ``max_queued`` bytes of answers wait
for it) ends the session with a :class:`~runtime.errors.RemoteProtocolError`,
since waiting could hold both sides, each for the other to read. An answer
of its own over ``max_queued`` bytes (a model's answer of 20 MB) is not sent:
the server's request gets a ``-32603`` that says how large it was, which
the tool that asked can report, rather than the session ending as if the
server did not read.

A line longer than ``max_message`` is never buffered whole. The server side
answers it with ``-32600`` and reads on; the client side
(``client=True``) cannot tell whose reply it was, so the session ends
with a :class:`~runtime.errors.RemoteProtocolError` saying why, and every
request waiting on the server fails with it rather than wait for ever.
"""

from __future__ import annotations

import errno
import logging
import os
import sys
from collections.abc import Callable
from typing import Final, final

import trio

from bridge.jsonrpc.messages import (
    INTERNAL_ERROR,
    ErrorData,
    ErrorResponse,
    Message,
    Request,
    RequestId,
    Response,
    dumps,
)
from runtime.errors import LocalProtocolError, RemoteProtocolError

from .framing import MAX_MESSAGE, OVERSIZED, LineBuffer

__all__ = [
    "REPLY_FLOOR",
    "StreamTransport",
    "reserve_stdout_for_mcp",
    "stdio_transport",
]

log = logging.getLogger("yieldmcp.stdio")

_OVERSIZED_ERROR = (
    dumps(ErrorResponse(None, ErrorData(-32600, "Invalid request: message too large")))
    + b"\n"
)
_CHUNK = 65536
REPLY_FLOOR: Final = 4096
"""The least a reply still being computed counts for against ``max_queued``:
what a request taken on holds (its task, its parsed params) even when its
reply will be small."""


@final
class StreamTransport:
    """JSON-RPC frames, one per line, over a receive stream and a send stream."""

    def __init__(
        self,
        receive_stream: trio.abc.ReceiveStream,
        send_stream: trio.abc.SendStream,
        *,
        max_message: int = MAX_MESSAGE,
        max_queued: int | None = None,
        client: bool = False,
    ) -> None:
        self._receive_stream = receive_stream
        self._send_stream = send_stream
        # A pipe's descriptor (-1 once closed), for reads and writes that need
        # no scheduling when they can be done at once.
        self._read_fd: Callable[[], int] | None = getattr(
            receive_stream, "fileno", None
        )
        self._write_fd: Callable[[], int] | None = getattr(send_stream, "fileno", None)
        self._lines = LineBuffer(max_message)
        # The client side: a server's oversized line or unread answers end
        # the session (a server answers the first and waits out the second).
        self._client = client
        self._ready: list[bytes] = []
        self._lock = trio.Lock()
        self._queue: list[bytes] = []
        self._queued = trio.Event()
        self._broken = False
        self._max_queued = max_queued
        self._queued_bytes = 0  # in the queue or being written by flush
        self._room_changed = trio.Event()  # set while the reader waits for room
        self._waiting_for_room = False
        self._replies_in_flight: Callable[[], int] | None = None
        self._reply_bytes = 0  # written (or queued) replies: their sizes' sum
        self._replies = 0

    # --- receiving -------------------------------------------------------------------

    async def receive(self) -> bytes:
        if self._max_queued is not None and self._client:
            # Each reply being made counts as REPLY_FLOOR, not as the average:
            # a client's answers may be large (images) and rightly many at once.
            held = self.held(per_reply=REPLY_FLOOR)
            if held > self._max_queued:
                raise RemoteProtocolError(
                    f"the server does not read what it asks for: {held:,} bytes "
                    f"of answers wait for it (the client holds at most "
                    f"{self._max_queued:,}, its max_message)"
                )
        elif self._max_queued is not None:
            await self._room(self._max_queued)
        while not self._ready:
            data = await self._read()
            if not data:
                raise trio.EndOfChannel
            for line in self._lines.feed(data):
                if line == OVERSIZED and self._client:
                    raise RemoteProtocolError(
                        f"the server sent a message over {self._lines.max_line:,} "
                        f"bytes (the client's max_message)"
                    )
                if line == OVERSIZED:
                    await self._write(_OVERSIZED_ERROR)
                else:
                    self._ready.append(line)
        return self._ready.pop(0)

    def count_replies_in_flight(self, count: Callable[[], int]) -> None:
        """``count()`` says how many replies the session is computing (requests
        taken on and not answered, less those waiting on the peer, whose
        answers must still be read); with ``max_queued``, they count against
        it."""
        self._replies_in_flight = count

    def request_over(self, request_id: RequestId) -> None:
        """A request taken on is over (the session's ``Incoming`` says so):
        one reply fewer in flight."""
        self._room_may_have_changed()

    def held(self, *, per_reply: int | None = None) -> int:
        """Bytes held for the peer: queued, and replies still being computed,
        each counted as ``per_reply`` or else as the replies written so far
        on average (at least :data:`REPLY_FLOOR`)."""
        held = self._queued_bytes
        count = self._replies_in_flight
        if count is not None:
            computing = count()
            if computing:
                if per_reply is None:
                    average = self._reply_bytes // self._replies if self._replies else 0
                    per_reply = max(REPLY_FLOOR, average)
                held += computing * per_reply
        return held

    async def _room(self, limit: int) -> None:
        """Wait until at most ``limit`` bytes are held (:meth:`held`)."""
        while not self._broken and self.held() > limit:
            self._room_changed = trio.Event()
            self._waiting_for_room = True
            try:
                await self._room_changed.wait()
            finally:
                self._waiting_for_room = False

    def _room_may_have_changed(self) -> None:
        if self._waiting_for_room:
            self._room_changed.set()

    async def _read(self) -> bytes:
        read_fd = self._read_fd
        if read_fd is None:
            return bytes(await self._receive_stream.receive_some(_CHUNK))
        await trio.lowlevel.checkpoint_if_cancelled()
        while True:
            fd = read_fd()
            try:
                return os.read(fd, _CHUNK)
            except BlockingIOError:
                await trio.lowlevel.wait_readable(fd)
            except OSError as exc:
                raise _stream_error(exc) from None

    # --- sending ---------------------------------------------------------------------

    def send_nowait(
        self, message: Message, *, related: RequestId | None = None
    ) -> None:
        """Write ``message`` now if the pipe takes it, else queue it for
        :meth:`pump` (raises once the stream is closed or broken)."""
        if self._send_or_queue(self._frame(message)):
            self._queued.set()

    async def send(self, message: Message, *, related: RequestId | None = None) -> None:
        await trio.lowlevel.checkpoint_if_cancelled()
        await self._write(self._frame(message))

    def _frame(self, message: Message) -> bytes:
        """``message``'s line, counting replies (an oversized answer of the
        client's own becomes an error for its request: see the module doc)."""
        data = dumps(message)
        limit = self._max_queued if self._client else None
        if isinstance(message, Request) and limit is not None and len(data) > limit:
            raise LocalProtocolError(
                f"the {message.method} request is {len(data):,} bytes, more "
                f"than the client sends ({limit:,}, its max_message)"
            )
        if not isinstance(message, Response | ErrorResponse):
            return data + b"\n"
        if limit is not None and len(data) > limit:
            text = (
                f"the client's answer is {len(data):,} bytes, more than it "
                f"sends ({limit:,}, its max_message)"
            )
            log.warning("not sent: %s", text)
            data = dumps(ErrorResponse(message.id, ErrorData(INTERNAL_ERROR, text)))
        self._reply_bytes += len(data) + 1
        self._replies += 1
        return data + b"\n"

    async def _write(self, data: bytes) -> None:
        if self._send_or_queue(data):
            await self.flush()

    def _send_or_queue(self, data: bytes) -> bool:
        """Write what the pipe takes now; queue the rest (True if any is left)."""
        if self._broken:
            raise trio.BrokenResourceError("the stream broke while writing")
        if self._waiting_for_room:  # a reply, or a question to the peer
            self._room_changed.set()
        write_fd = self._write_fd
        if write_fd is not None and not self._queue and not self._lock.locked():
            try:
                written = os.write(write_fd(), data)
            except BlockingIOError:
                written = 0
            except OSError as exc:
                self._broken = exc.errno != errno.EBADF
                raise _stream_error(exc) from None
            if written == len(data):
                return False
            data = data[written:]
        self._queue.append(data)
        self._queued_bytes += len(data)
        return True

    async def flush(self) -> None:
        """Write everything queued so far."""
        async with self._lock:
            while self._queue:
                chunk = b"".join(self._queue)
                self._queue.clear()
                try:
                    await self._send_stream.send_all(chunk)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    self._broken = True
                    self._room_may_have_changed()
                    raise
                finally:
                    self._queued_bytes -= len(chunk)
                self._room_may_have_changed()

    async def pump(self) -> None:
        """Write what :meth:`send_nowait` queues, until the stream breaks."""
        while not self._broken:
            await self._queued.wait()
            self._queued = trio.Event()
            try:
                await self.flush()
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return  # whoever sends next hears of it

    async def aclose(self) -> None:
        await self._send_stream.aclose()


def _stream_error(exc: OSError) -> trio.BrokenResourceError | trio.ClosedResourceError:
    if exc.errno == errno.EBADF:
        return trio.ClosedResourceError("the stream was already closed")
    return trio.BrokenResourceError(f"the stream broke: {exc}")


_mcp_stdout: int | None = None
"""This process's real stdout, once :func:`reserve_stdout_for_mcp` kept it."""


def reserve_stdout_for_mcp() -> int:
    """Keep this process's stdout for MCP alone; from now on, prints go to stderr.

    Returns a descriptor of the real stdout (made on the first call, the same
    one on later calls). Descriptor 1 then points at stderr, and so does
    :data:`sys.stdout`: what a tool or the module being served prints with
    ``print``, writes to ``sys.stdout`` (or to descriptor 1, or a child process
    inherits) lands on stderr instead of between the frames. Call it before
    importing the code to serve. Nothing is restored: a stdio server's stdout
    stays MCP's until exit.
    """
    global _mcp_stdout
    if _mcp_stdout is None:
        sys.stdout.flush()
        _mcp_stdout = os.dup(1)
        os.dup2(2, 1)
        sys.stdout = sys.stderr
    return _mcp_stdout


def stdio_transport(
    *, max_message: int = MAX_MESSAGE, max_queued: int | None = None
) -> StreamTransport:
    """A transport over this process's stdin and its stdout, kept for MCP alone
    (see :func:`reserve_stdout_for_mcp`: prints go to stderr); with
    ``max_queued``, it stops reading stdin while more than that many bytes wait
    for the host to read stdout."""
    return StreamTransport(
        trio.lowlevel.FdStream(os.dup(0)),
        trio.lowlevel.FdStream(os.dup(reserve_stdout_for_mcp())),
        max_message=max_message,
        max_queued=max_queued,
    )

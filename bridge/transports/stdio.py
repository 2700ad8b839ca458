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
Reads go straight
to the pipe too, waiting only when it is empty. On pipes (file descriptors) a
frame thus costs no scheduling of its own; other streams go through their
``send_all`` / ``receive_some``.
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable
from typing import final

import trio

from bridge.jsonrpc.messages import ErrorData, ErrorResponse, Message, RequestId, dumps

from .framing import OVERSIZED, LineBuffer

__all__ = ["StreamTransport", "reserve_stdout_for_mcp", "stdio_transport"]

_OVERSIZED_ERROR = dumps(
    ErrorResponse(None, ErrorData(-32600, "Invalid request: message too large"))
)
_CHUNK = 65536


@final
class StreamTransport:
    """JSON-RPC frames, one per line, over a receive stream and a send stream."""

    def __init__(
        self,
        receive_stream: trio.abc.ReceiveStream,
        send_stream: trio.abc.SendStream,
        *,
        max_message: int = 16 * 1024 * 1024,
        max_queued: int | None = None,
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
        self._ready: list[bytes] = []
        self._lock = trio.Lock()
        self._queue: list[bytes] = []
        self._queued = trio.Event()
        self._broken = False
        self._max_queued = max_queued
        self._queued_bytes = 0  # in the queue or being written by flush
        self._drained = trio.Event()

    # --- receiving -------------------------------------------------------------------

    async def receive(self) -> bytes:
        if self._max_queued is not None:
            await self._room(self._max_queued)
        while not self._ready:
            data = await self._read()
            if not data:
                raise trio.EndOfChannel
            for line in self._lines.feed(data):
                if line == OVERSIZED:
                    await self._write(_OVERSIZED_ERROR)
                else:
                    self._ready.append(line)
        return self._ready.pop(0)

    async def _room(self, limit: int) -> None:
        """Wait until at most ``limit`` bytes wait to be written."""
        while self._queued_bytes > limit and not self._broken:
            if self._drained.is_set():
                self._drained = trio.Event()
            await self._drained.wait()

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
        if self._send_or_queue(dumps(message) + b"\n"):
            self._queued.set()

    async def send(self, message: Message, *, related: RequestId | None = None) -> None:
        await trio.lowlevel.checkpoint_if_cancelled()
        await self._write(dumps(message))

    async def _write(self, data: bytes) -> None:
        if self._send_or_queue(data + b"\n"):
            await self.flush()

    def _send_or_queue(self, data: bytes) -> bool:
        """Write what the pipe takes now; queue the rest (True if any is left)."""
        if self._broken:
            raise trio.BrokenResourceError("the stream broke while writing")
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
                    self._drained.set()
                    raise
                finally:
                    self._queued_bytes -= len(chunk)
                self._drained.set()

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
    *, max_message: int = 16 * 1024 * 1024, max_queued: int | None = None
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

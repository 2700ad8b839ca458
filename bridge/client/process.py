"""A server command as a transport: spawn it, talk over its stdin/stdout.

The child's stderr is passed through (servers log there). Shutdown follows the
MCP stdio rules: close the child's stdin, wait, then SIGTERM, then SIGKILL.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import AsyncGenerator, Mapping, Sequence

import trio

from bridge.transports.framing import MAX_MESSAGE
from bridge.transports.stdio import StreamTransport

__all__ = ["spawn"]


@contextlib.asynccontextmanager
async def spawn(
    command: Sequence[str],
    *,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    grace: float = 2.0,
    max_message: int = MAX_MESSAGE,
) -> AsyncGenerator[tuple[StreamTransport, trio.Process]]:
    """Run ``command`` and yield a transport over its stdio, and the process.

    A line it writes longer than ``max_message`` bytes ends the session: every
    request waiting on it fails with a ``RemoteProtocolError`` saying so. So
    does a server that asks more than it reads: more than ``max_message``
    bytes of answers (or answers being made) waiting for it.

    Raises:
        OSError: the command could not be started.
    """
    process = await trio.lowlevel.open_process(
        list(command),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=cwd,
        env=None if env is None else dict(env),
    )
    assert process.stdin is not None
    assert process.stdout is not None
    transport = StreamTransport(
        process.stdout,
        process.stdin,
        max_message=max_message,
        max_queued=max_message,
        client=True,
    )
    try:
        yield transport, process
    finally:
        with trio.CancelScope(shield=True):
            await _stop(process, grace)


async def _stop(process: trio.Process, grace: float) -> None:
    if process.stdin is not None:
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            await process.stdin.aclose()
    with trio.move_on_after(grace):
        await process.wait()
        return
    process.terminate()
    with trio.move_on_after(grace):
        await process.wait()
        return
    process.kill()
    await process.wait()

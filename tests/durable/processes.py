"""Real server processes for the restart tests: a free port, ready, kill -9."""

from __future__ import annotations

import os
import signal
import socket
import subprocess

import httpx
import trio


def kill(process: subprocess.Popen[bytes]) -> None:
    """kill -9: nothing of the process's gets to clean up."""
    if process.poll() is None:
        os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def url_of(port: int) -> str:
    return f"http://127.0.0.1:{port}/mcp"


async def ready(port: int, process: subprocess.Popen[bytes]) -> None:
    """Wait until the server on ``port`` answers HTTP (it must not exit first)."""
    async with httpx.AsyncClient() as http:
        with trio.fail_after(60):
            while True:
                assert process.poll() is None, "the server exited"
                try:
                    await http.get(url_of(port))
                except httpx.TransportError:
                    await trio.sleep(0.05)
                else:
                    return

"""Real server processes for the restart and attack tests: a free port,
ready, kill -9, and :class:`Serving` (start, kill, start again, RSS)."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

import httpx
import trio

from tests.helpers import ROOT


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


class Serving:
    """``yieldmcp serve SERVED --http 127.0.0.1:PORT FLAGS...`` as a real
    process: started, killed with SIGKILL, started again on the same port.

    Its stderr goes to a file in ``tmp``, so a server that exits at start
    (a flag it does not know) fails :meth:`ready` with the line it printed.
    """

    def __init__(
        self,
        served: str,
        tmp: Path,
        *flags: str,
        env: Mapping[str, str] | None = None,
        port: int | None = None,
    ) -> None:
        self.served, self.tmp, self.flags = served, tmp, flags
        self.env = {**os.environ, **(env or {})}
        self.port = free_port() if port is None else port
        self.url = url_of(self.port)
        self.errors = tmp / f"server-{self.port}.err"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> subprocess.Popen[bytes]:
        command = [sys.executable, "-m", "bridge.cli", "serve", self.served]
        command += ["--http", f"127.0.0.1:{self.port}", *self.flags]
        with self.errors.open("ab") as err:
            self.process = subprocess.Popen(
                command, cwd=ROOT, env=self.env, stdout=subprocess.DEVNULL, stderr=err
            )
        return self.process

    async def ready(self) -> None:
        """Wait until it answers HTTP; fail with its last line if it exits."""
        process = self.process
        assert process is not None
        async with httpx.AsyncClient() as http:
            with trio.fail_after(60):
                while True:
                    if process.poll() is not None:
                        raise AssertionError(f"the server exited: {self.said()}")
                    try:
                        await http.get(self.url)
                    except httpx.TransportError:
                        await trio.sleep(0.05)
                    else:
                        return

    def said(self) -> str:
        """The last line of its stderr (every start so far)."""
        lines = self.errors.read_text(errors="replace").strip().splitlines()
        return lines[-1] if lines else "(nothing on stderr)"

    def kill(self) -> None:
        """kill -9, if it runs."""
        if self.process is not None:
            kill(self.process)

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def rss(self) -> int:
        """Its resident memory now, in bytes (Linux ``/proc``)."""
        status = Path(f"/proc/{self.pid}/status").read_text()
        kib = next(line for line in status.splitlines() if line.startswith("VmRSS:"))
        return int(kib.split()[1]) * 1024


@contextlib.asynccontextmanager
async def started(*servers: Serving) -> AsyncIterator[None]:
    """``servers`` started at once and ready; killed after the block."""
    try:
        for server in servers:
            server.start()
        for server in servers:
            await server.ready()
        yield
    finally:
        for server in servers:
            server.kill()


@contextlib.asynccontextmanager
async def serving(
    served: str,
    tmp: Path,
    *flags: str,
    env: Mapping[str, str] | None = None,
    count: int = 1,
) -> AsyncIterator[list[Serving]]:
    """``count`` :class:`Serving` processes on free ports (sharing whatever
    ``flags`` name, a store), started at once and ready; killed after."""
    servers = [Serving(served, tmp, *flags, env=env) for _ in range(count)]
    async with started(*servers):
        yield servers


@contextlib.asynccontextmanager
async def one_server(
    served: str, tmp: Path, *flags: str, env: Mapping[str, str] | None = None
) -> AsyncIterator[tuple[str, subprocess.Popen[bytes]]]:
    """One :class:`Serving` process on a free port, ready: its URL and its
    process (for a test to kill -9 with :func:`kill`); killed after."""
    async with serving(served, tmp, *flags, env=env) as [server]:
        assert server.process is not None
        yield server.url, server.process


_READY = re.compile(rb"serving MCP at (\S+)\n")
# With --workers, the parent's line (each worker may log its own before it).
_READY_WORKERS = re.compile(
    rb"serving MCP at (\S+) with \d+ workers \(pids ([\d, ]+)\)"
)


class Logged:
    """A running ``yieldmcp -v serve SERVED --http ...`` whose stderr the test
    reads: its URL, its workers' pids (with ``--workers``), what it logged."""

    def __init__(self, process: trio.Process, workers: bool = False) -> None:
        self.process = process
        self.ready = _READY_WORKERS if workers else _READY
        self.log = b""
        self.url = ""
        self.pids: list[int] = []

    async def started(self) -> None:
        assert self.process.stderr is not None
        while (found := self.ready.search(self.log)) is None:
            chunk = await self.process.stderr.receive_some(4096)
            assert chunk, self.log.decode(errors="replace")
            self.log += chunk
        self.url = found[1].decode()
        if self.ready is _READY_WORKERS:
            self.pids = [int(p) for p in found[2].decode().split(", ")]

    def terminate(self) -> float:
        """SIGTERM; when it was sent."""
        self.process.send_signal(signal.SIGTERM)
        return time.monotonic()

    async def finish(self) -> int:
        """Read what it logs until it exits; its exit code."""
        assert self.process.stderr is not None
        while chunk := await self.process.stderr.receive_some(4096):
            self.log += chunk
        return await self.process.wait()


@contextlib.asynccontextmanager
async def logged_serve(
    served: str, *flags: str, port: int = 0, terminate: bool = False
) -> AsyncIterator[Logged]:
    """``yieldmcp -v serve SERVED --http 127.0.0.1:PORT FLAGS...``, started;
    stopped after the block (SIGTERM first with ``terminate``, then SIGKILL)."""
    process = await trio.lowlevel.open_process(
        [sys.executable, "-m", "bridge.cli", "-v", "serve", served,
         "--http", f"127.0.0.1:{port}", *flags],
        stderr=subprocess.PIPE, cwd=ROOT,
    )  # fmt: skip
    running = Logged(process, workers="--workers" in flags)
    try:
        with trio.fail_after(60):
            await running.started()
        yield running
    finally:
        if process.returncode is None:
            if terminate:
                process.send_signal(signal.SIGTERM)
                with trio.move_on_after(20):
                    await running.finish()
            process.kill()
            with trio.move_on_after(20):
                await running.finish()

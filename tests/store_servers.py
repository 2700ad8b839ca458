"""Real store servers for the tests: redis-server and PostgreSQL on 127.0.0.1.

Each starts on a free loopback port in a temporary directory of its own and is
stopped (and the directory removed) afterwards; ``tests/conftest.py`` runs one
of each per test session. The binaries come from the system packages
(``apt-get install redis-server postgresql``, as ``.ci/run`` does). A missing
one skips the tests that need it, with the reason printed, except when
``YIELDMCP_REQUIRE_STORES=1`` (``.ci/run`` sets it): then it fails, so CI
never hides a store it did not test.

PostgreSQL's ``initdb`` refuses to run as root, and CI runs as root: then the
server runs as ``nobody`` (through ``setpriv``) on a directory it owns.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

__all__ = [
    "sqlite_locked",
    "RedisServer",
    "PostgresServer",
    "free_port",
    "postgres_bin",
    "postgres_server",
    "redis_server",
    "running_postgres",
    "running_redis",
]

START_TIMEOUT = 60.0  # generous: the machine is shared


def require(what: str, install: str) -> None:
    """Skip (or fail under YIELDMCP_REQUIRE_STORES=1) for a missing server."""
    reason = f"{what} is not installed ({install})"
    if os.environ.get("YIELDMCP_REQUIRE_STORES") == "1":
        pytest.fail(f"{reason}: .ci/run installs it before the tests")
    print(f"{reason}: skipping")
    pytest.skip(reason)


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for_port(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited: {log.read_text(errors='replace')}")
        with (
            contextlib.suppress(OSError),
            socket.create_connection(("127.0.0.1", port), timeout=1),
        ):
            return
        time.sleep(0.05)
    raise RuntimeError(f"server did not listen on {port}: {log.read_text()}")


@attrs.frozen
class RedisServer:
    """A running redis-server: its URL and its process id (to stop it)."""

    url: str
    pid: int

    def pids(self) -> list[int]:
        return [self.pid]


@contextlib.contextmanager
def running_redis(*, durable: bool = False) -> Iterator[str]:
    """A redis-server on 127.0.0.1; its ``redis://`` URL.

    No persistence for tests; ``durable`` turns on the append-only file with
    ``appendfsync everysec`` (the benchmark's setting).
    """
    with redis_server(durable=durable) as server:
        yield server.url


@contextlib.contextmanager
def redis_server(*, durable: bool = False) -> Iterator[RedisServer]:
    """:func:`running_redis`, as a :class:`RedisServer`."""
    binary = shutil.which("redis-server")
    if binary is None:
        require("redis-server", "apt-get install redis-server")
    assert binary is not None
    with tempfile.TemporaryDirectory(prefix="yieldmcp-redis-") as tmp:
        port = free_port()
        log = Path(tmp) / "redis.log"
        command = [binary, "--port", str(port), "--bind", "127.0.0.1"]
        command += ["--save", "", "--dir", tmp]
        command += ["--appendonly", "yes" if durable else "no"]
        command += ["--appendfsync", "everysec"]
        command += ["--logfile", str(log)]
        log.touch()
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
        try:
            _wait_for_port(port, process, log)
            yield RedisServer(f"redis://127.0.0.1:{port}/0", process.pid)
        finally:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def postgres_bin() -> Path | None:
    """The newest PostgreSQL server binaries' directory, if installed."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: int(Path(p).parent.parent.name.split(".")[0]),
    )
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _as_unprivileged(command: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return command
    return [
        "setpriv",
        "--reuid=nobody",
        "--regid=nogroup",
        "--clear-groups",
        "--",
        *command,
    ]


@attrs.frozen
class PostgresServer:
    """A running PostgreSQL: its URL and its data directory."""

    url: str
    data: Path

    def pids(self) -> list[int]:
        """The postmaster's pid and those of every process it started (its
        backends and background workers): what stopping "the server" means."""
        postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        children = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            with contextlib.suppress(OSError):
                fields = stat.read_text().rsplit(")", 1)[1].split()
                if int(fields[1]) == postmaster:
                    children.append(int(stat.parent.name))
        return [postmaster, *children]


@contextlib.contextmanager
def running_postgres(*, durable: bool = False) -> Iterator[str]:
    """A PostgreSQL on 127.0.0.1; its ``postgresql://`` URL for the superuser
    ``postgres`` and the ``postgres`` database.

    fsync off for tests; ``durable`` keeps PostgreSQL's defaults (fsync,
    ``synchronous_commit = on``: the benchmark's setting).
    """
    with postgres_server(durable=durable) as server:
        yield server.url


@contextlib.contextmanager
def postgres_server(*, durable: bool = False) -> Iterator[PostgresServer]:
    """:func:`running_postgres`, as a :class:`PostgresServer`."""
    bindir = postgres_bin()
    if bindir is None:
        require("PostgreSQL", "apt-get install postgresql")
    assert bindir is not None
    tmp = Path(tempfile.mkdtemp(prefix="yieldmcp-pg-"))
    try:
        if os.geteuid() == 0:
            shutil.chown(tmp, "nobody", "nogroup")
        data, log, port = tmp / "data", tmp / "server.log", free_port()
        subprocess.run(
            _as_unprivileged(
                [
                    str(bindir / "initdb"),
                    "-D",
                    str(data),
                    "-U",
                    "postgres",
                    "--auth=trust",
                    "-E",
                    "UTF8",
                    "--locale=C",
                    "--no-sync",
                ]
            ),
            check=True,
            capture_output=True,
            timeout=300,
        )
        options = f"-c listen_addresses=127.0.0.1 -p {port} -k {tmp}"
        if not durable:
            options += " -c fsync=off -c synchronous_commit=off"
            options += " -c full_page_writes=off"
        pg_ctl = [str(bindir / "pg_ctl"), "-D", str(data), "-l", str(log)]
        subprocess.run(
            _as_unprivileged([*pg_ctl, "-o", options, "-w", "-t", "120", "start"]),
            check=True,
            capture_output=True,
            timeout=300,
        )
        try:
            url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
            yield PostgresServer(url, data)
        finally:
            subprocess.run(
                _as_unprivileged([*pg_ctl, "-m", "fast", "-w", "stop"]),
                check=False,
                capture_output=True,
                timeout=300,
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@contextlib.contextmanager
def sqlite_locked(path: Path, *, watchdog: float = 30.0) -> Iterator[None]:
    """Another process holds the SQLite file ``path``'s write lock for the
    block (it is killed after ``watchdog`` seconds whatever happens, so a
    test cannot hang on it)."""
    script = (
        "import sqlite3, sys\n"
        "db = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "db.execute('BEGIN EXCLUSIVE')\n"
        "print('locked', flush=True)\n"
        "sys.stdin.read()\n"
    )
    with subprocess.Popen(
        [sys.executable, "-c", script, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    ) as locker:
        assert locker.stdout is not None
        assert locker.stdin is not None
        timer = threading.Timer(watchdog, locker.kill)
        timer.start()
        try:
            assert locker.stdout.readline() == b"locked\n"
            yield
        finally:
            timer.cancel()
            locker.stdin.close()  # the locker reads EOF and exits, unlocking
            locker.wait(timeout=30)

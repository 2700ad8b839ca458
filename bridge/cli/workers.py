"""``yieldmcp serve --http ADDR --workers N``: N processes serving one port.

How: every worker is this same command line, run again as a child process,
listening on the same port with ``SO_REUSEPORT``; the kernel spreads new
connections among the workers' listen queues. We chose that over a parent
that accepts and hands connections out (a passed descriptor per connection):
the parent would be one more hop and one more process to keep alive on every
connection, while with ``SO_REUSEPORT`` it does nothing once the workers run,
and each worker keeps the whole HTTP server (its connection cap, backlog and
timeouts) unchanged.

* The parent loads the served code once first, so a mistake in it or in a
  flag is one error line (exit 1) rather than one per worker. It binds the
  port (also with ``SO_REUSEPORT``, not listening) to report a port in use
  the same way, to pick the port when 0 is asked, and to hold it while the
  workers start.
* The workers share the key sealing 2026-07-28 ``requestState``: the
  parent's ``YIELDMCP_STATE_KEY``, or one it generates and passes to them in
  their environment (never on a command line, never logged), so a round
  sealed by one worker opens on any other.
* Without a store, several workers on one port refuse the 2025-11-25 era
  (its session would live in one worker, and the kernel may send its next
  request to another): such a request gets UnsupportedProtocolVersion naming
  2026-07-28, with a message that says why
  (:func:`bridge.transports.http.eras.sessions_refused`). With a store
  (``--store URL`` or ``--durable``), they serve it: a session is a document
  any worker takes on, an answer POSTed to another worker is routed to the
  one running its call, and a killed worker's calls are taken on by the next
  worker the client reaches (:mod:`bridge.durable.presence`).
* SIGTERM drains every worker: the parent sends each one SIGTERM, and each
  drains as one process does (no new connections, 503 for new work, the
  calls in flight finish within ``--drain-seconds``:
  :mod:`bridge.transports.http.drain`) and exits 0; so does the parent once
  they are all gone. A worker that gets SIGTERM by itself (a service manager
  signalling the whole group) drains and exits 0 too, and the parent then
  drains the others. Workers still running :data:`STOP_GRACE` seconds after
  the drain's bound are killed.
* Ctrl-C (SIGINT) stops every worker at once: the parent closes the
  *lifeline* (a pipe every worker watches), each worker cancels its calls and
  exits, and the parent exits 130. If the parent dies any other way, the
  lifeline closes as well, so no worker outlives it: not even one still
  loading the served code (which may take long, or hang), which exits at
  once (:func:`exit_with_the_parent_while_starting`). On Linux the kernel
  also kills a worker whose parent died (``PR_SET_PDEATHSIG``): a thread
  watching the lifeline cannot run in a worker that is stopped (SIGSTOP),
  nor in one whose served code holds the GIL at import (a long C call),
  and such workers outlived a kill -9 of their parent, one of them keeping
  its share of the port. (The parent starts its workers from its main
  thread, which the kernel's signal is tied to, not from one of trio's.)
  The workers run in their own session, so a terminal's Ctrl-C reaches
  only the parent. A second
  Ctrl-C, or workers still running after :data:`STOP_GRACE` seconds, kills
  them.
* A worker that exits on its own (a crash, a kill, the OOM killer) is
  reported on stderr with its pid and exit status, and the parent then stops
  the others and exits 1: it does not restart workers. A crash is a bug to
  see, and restarting belongs to what runs the server (systemd, a container
  runtime), which restarts the whole group.
* A worker that is alive and does not serve (stopped with SIGSTOP or a
  frozen cgroup, or its event loop blocked by a tool's code) still gets its
  share of new connections from the kernel, and they would wait for ever.
  So each serving worker's event loop says it runs, on a pipe to the
  parent, several times per ``--worker-timeout``; one not heard from for
  that long is killed and reported, as one that died is (a worker still
  loading the served code is not timed: that may take long, and the
  lifeline covers it). Gunicorn's arbiter does the same, with the same
  default of 30 s.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import re
import select
import signal
import socket
import subprocess
import sys
import threading
from typing import TYPE_CHECKING, Any, Final

import trio

from bridge.server.state_token import KEY_ENV, new_key

from .interrupt import receiving

if TYPE_CHECKING:
    from bridge.server.server import Server

__all__ = [
    "WORKER_ENV",
    "add_workers_flag",
    "check_workers",
    "exit_with_the_parent_while_starting",
    "in_worker",
    "serve",
]

log = logging.getLogger("yieldmcp.workers")

WORKER_ENV: Final = "YIELDMCP_WORKER"
"""Set in a worker's environment (``INDEX:PORT:READY_FD:LIFELINE_FD``); internal.
A worker writes ``rINDEX`` lines on READY_FD once it serves, then ``bINDEX``
lines while its event loop runs (:data:`BEATS_PER_TIMEOUT`)."""
WORKER_TIMEOUT: Final = 30.0
"""Default ``--worker-timeout``: seconds a serving worker may go unheard."""
BEATS_PER_TIMEOUT: Final = 6
"""How often a worker says it runs, per ``--worker-timeout``."""
STOP_GRACE: Final = 10.0
"""Seconds workers get to finish once told to stop, before they are killed."""
EXIT_FAILURE: Final = 1
EXIT_INTERRUPTED: Final = 130


def add_workers_flag(command: argparse.ArgumentParser) -> None:
    """Add ``--workers`` to ``serve``."""
    command.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help=(
            "with --http: N processes serving the same port (SO_REUSEPORT), "
            "sharing YIELDMCP_STATE_KEY (one is generated if unset); more than "
            "one serves the 2025-11-25 era only with --store or --durable "
            "(default: 1)"
        ),
    )
    command.add_argument(
        "--worker-timeout",
        type=float,
        default=WORKER_TIMEOUT,
        metavar="SECONDS",
        help=(
            "with --workers: kill (and report, and stop the group, as for a "
            "worker that dies) a serving worker whose event loop has not run "
            "for SECONDS (stopped, or blocked by a tool's code); 0: never "
            f"(default: {WORKER_TIMEOUT:g})"
        ),
    )


def check_workers(args: argparse.Namespace) -> None:
    """Refuse a ``--workers`` value that cannot be served.

    Raises:
        ValueError: fewer than 1, more than :data:`WORKERS_PER_CPU` per
            usable CPU, or several without ``--http`` or with a store only
            one process can see (``--store memory:``).
    """
    workers: int = args.workers
    timeout: float = getattr(args, "worker_timeout", WORKER_TIMEOUT)
    if not (timeout == 0 or 1 <= timeout < 1e9):  # NaN too
        raise ValueError(
            f"--worker-timeout must be 0 (never) or at least 1 second, got {timeout:g}"
        )
    if workers < 1:
        raise ValueError(f"--workers must be at least 1, got {workers}")
    cpus = usable_cpus()
    if workers > WORKERS_PER_CPU * cpus:
        # A typo (800 for 8) would start that many processes at once.
        raise ValueError(
            f"--workers {workers} is more than {WORKERS_PER_CPU} per CPU "
            f"({cpus} here: at most {WORKERS_PER_CPU * cpus}); each worker "
            f"serves many clients at once"
        )
    if workers > 1 and args.http is None:
        raise ValueError("--workers needs --http (stdio has one client)")
    if workers > 1 and getattr(args, "store", None) in ("memory", "memory:"):
        raise ValueError(
            "--store memory: lives in one process; several workers need a "
            "store they share (sqlite:PATH, redis://..., postgresql://...)"
        )


WORKERS_PER_CPU = 8
"""The most ``--workers`` per CPU this process may run on: each worker is an
event loop serving many clients, so more add memory, not throughput."""


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity, where the OS says)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def in_worker() -> bool:
    """Whether this process is one of the workers of a ``--workers`` parent."""
    return WORKER_ENV in os.environ


_serving = threading.Event()  # set once this worker watches its lifeline in trio


def exit_with_the_parent_while_starting() -> None:
    """In a worker, before the served code is loaded: exit at once if the
    lifeline closes (the parent is gone, or was interrupted) before the
    worker serves and watches it in trio itself.

    The served code runs at import, and may take long or never end: such a
    worker survived a kill -9 of its parent, holding whatever it held. The
    watch is a daemon thread, not a trio task: trio does not run yet. It
    ends once the worker serves (or at exit); nothing else is done in it.
    """
    spec = _worker_spec(os.environ.get(WORKER_ENV, ""))
    if spec is None:
        return  # not a worker, or set by hand: _work says so in one line
    lifeline_fd = spec[3]
    _killed_with_the_parent()

    def watch() -> None:
        poller = select.poll()
        poller.register(lifeline_fd, select.POLLIN)  # POLLHUP comes anyway
        while not _serving.is_set():
            if poller.poll(100) and not _serving.is_set():
                # Nothing is ever written: EOF. Stopped as told (Ctrl-C), as
                # a serving worker stops: 0 (a parent killed reads nothing).
                os._exit(0)

    threading.Thread(target=watch, name="yieldmcp-lifeline", daemon=True).start()


def serve(server: Server, args: argparse.Namespace, options: dict[str, Any]) -> int:
    """Serve ``--http`` as the parent of ``--workers`` workers, or as one."""
    # Popped, so that a process the served code starts is not taken for a worker.
    spec = os.environ.pop(WORKER_ENV, None)
    if spec is not None:
        return _work(server, args, options, spec)
    host, port = args.http
    try:
        held = _hold_port(host, port)
    except OSError as exc:
        # The same line as one process's (bridge.cli.serving), told once.
        reason = os.strerror(exc.errno).lower() if exc.errno else str(exc)
        shown = f"[{host}]" if ":" in host else host
        print(
            f"yieldmcp: error: cannot listen on {shown}:{port}: {reason}",
            file=sys.stderr,
        )
        return EXIT_FAILURE
    with held:
        bound = int(held.getsockname()[1])
        argv: list[str] = getattr(args, "argv", None) or sys.argv[1:]
        command = [sys.executable, "-m", "bridge.cli", *argv]
        supervisor = _Supervisor(command, args.workers, _url(host, bound))
        supervisor.drain_seconds = options["limits"].drain_seconds
        supervisor.timeout = getattr(args, "worker_timeout", WORKER_TIMEOUT)
        # With a store, the workers take the key kept in it, which outlives
        # this parent: a restarted group still opens the states in flight.
        supervisor.share_key = server.store is None
        return trio.run(supervisor.run, bound)


def _hold_port(host: str, port: int) -> socket.socket:
    infos = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )
    family, kind, proto, _, address = infos[0]
    if port != 0:
        # SO_REUSEPORT would join a port another server of this user already
        # serves with it (another --workers group): the kernel would then
        # share its connections between the two servers. A socket without
        # it cannot bind a port anyone listens on, so it finds that first.
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(address)
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(address)
    except BaseException:
        sock.close()
        raise
    return sock


def _url(host: str, port: int) -> str:
    return f"http://{f'[{host}]' if ':' in host else host}:{port}/mcp"


class _Supervisor:
    """The parent: starts the workers, watches them, stops them all."""

    def __init__(self, command: list[str], count: int, url: str) -> None:
        self.command = command
        self.count = count
        self.url = url
        self.code = 0
        self.stopping = False
        self.processes: list[_Worker] = []
        self._lifeline = -1
        self.share_key = True  # generate the workers' key unless one is set
        self.drain_seconds = 30.0  # how long a SIGTERM lets the workers drain
        self._killed: set[int] = set()  # pids this parent killed, said already
        self.timeout = WORKER_TIMEOUT  # a serving worker unheard this long is killed
        self._heard: dict[int, float] = {}  # index: when it last said it runs

    async def run(self, port: int) -> int:
        ready_r, ready_w = os.pipe()
        lifeline_r, self._lifeline = os.pipe()
        env = dict(os.environ)
        if self.share_key:
            env.setdefault(KEY_ENV, new_key())  # the workers' shared key, never logged
        try:
            with receiving(signal.SIGINT, signal.SIGTERM) as signals:
                async with trio.open_nursery() as nursery:
                    for index in range(self.count):
                        env[WORKER_ENV] = f"{index}:{port}:{ready_w}:{lifeline_r}"
                        process = _Worker(
                            subprocess.Popen(
                                self.command,
                                env=env,
                                stdin=subprocess.DEVNULL,
                                pass_fds=(ready_w, lifeline_r),
                                start_new_session=True,
                            )
                        )
                        self.processes.append(process)
                        nursery.start_soon(self._watch, index, process, nursery)
                    os.close(ready_w)
                    os.close(lifeline_r)
                    ready_w = lifeline_r = -1
                    nursery.start_soon(self._listen, ready_r)
                    nursery.start_soon(self._on_signals, signals, nursery)
                    if self.timeout:
                        nursery.start_soon(self._kill_the_silent, nursery)
        finally:
            for fd in (ready_w, lifeline_r, self._lifeline):
                if fd >= 0:
                    os.close(fd)
        return self.code

    async def _watch(self, index: int, process: _Worker, nursery: trio.Nursery) -> None:
        status = await process.wait()
        if not self.stopping and status == 0:
            # It drained (a SIGTERM of its own): the group is being stopped.
            self._drain(nursery)
        elif not self.stopping:
            print(
                f"yieldmcp: error: worker {index} (pid {process.pid}) exited with "
                f"{_how(status)}; stopping the other workers",
                file=sys.stderr,
            )
            self.code = EXIT_FAILURE
            self._stop(nursery, STOP_GRACE)
        elif status != 0 and process.pid not in self._killed:
            # Stopping, it did not drain (killed by someone else, or it
            # crashed): its calls in flight were cut, and the exit says so.
            print(
                f"yieldmcp: error: worker {index} (pid {process.pid}) exited with "
                f"{_how(status)} while stopping; its calls in flight were cut",
                file=sys.stderr,
            )
            self.code = self.code or EXIT_FAILURE
        if all(p.returncode is not None for p in self.processes):
            nursery.cancel_scope.cancel()

    async def _listen(self, ready_fd: int) -> None:
        """Read the workers' lines: says when all serve, and when each was
        last heard from (until every worker has closed the pipe).

        The served code runs in the workers and may write to the pipe too
        (by mistake, a child it started without closing its descriptors):
        a worker's own lines are written whole (shorter than ``PIPE_BUF``),
        so they are found wherever they land in what else is written, and
        no more than the end of a line is kept in between."""
        pending = b""
        async with trio.lowlevel.FdStream(ready_fd) as stream:
            while data := await stream.receive_some():
                pending += data
                for line in _WORKER_LINE.finditer(pending):
                    self._heard_from(line[1], int(line[2]))
                pending = pending[-_LONGEST_LINE:].rpartition(b"\n")[2]

    def _heard_from(self, kind: bytes, index: int) -> None:
        if index >= self.count:
            return  # not one of ours: written by the served code, say
        first = index not in self._heard
        self._heard[index] = trio.current_time()
        if kind == b"r" and first and len(self._heard) == self.count:
            # Said on stderr, as one process says it.
            pids = ", ".join(str(p.pid) for p in self.processes)
            print(
                f"serving MCP at {self.url} with {self.count} workers (pids {pids})",
                file=sys.stderr,
                flush=True,
            )

    async def _kill_the_silent(self, nursery: trio.Nursery) -> None:
        """Kill a serving worker not heard from for :attr:`timeout` seconds.

        A parent that did not run itself for a while (stopped: Ctrl-Z, a
        debugger, ``docker pause``) has the workers' lines of that time
        still unread in the pipe, and judged them silent: it gives every
        worker a whole timeout again from its own waking instead."""
        interval = self.timeout / BEATS_PER_TIMEOUT
        woke = trio.current_time()
        while not self.stopping:
            await trio.sleep(interval)
            now, slept = trio.current_time(), trio.current_time() - woke
            woke = now
            if slept > interval + self.timeout / 2:
                self._heard = dict.fromkeys(self._heard, now)
                continue
            for index, heard in self._heard.items():
                process = self.processes[index]
                if now - heard <= self.timeout or process.returncode is not None:
                    continue
                if self.stopping:
                    return
                print(
                    f"yieldmcp: error: worker {index} (pid {process.pid}) has not "
                    f"run for {now - heard:.0f} s (stopped, or its event loop "
                    f"blocked; --worker-timeout {self.timeout:g}); killing it "
                    f"and stopping the other workers",
                    file=sys.stderr,
                )
                self.code = EXIT_FAILURE
                self._killed.add(process.pid)
                process.kill()
                self._stop(nursery, STOP_GRACE)

    async def _on_signals(self, signals: Any, nursery: trio.Nursery) -> None:
        async for signum in signals:
            if signum == signal.SIGTERM:
                self._drain(nursery)  # (again: nothing more)
            elif self.stopping:  # Ctrl-C while stopping: do not wait for the calls
                self.code = EXIT_INTERRUPTED
                for process in self.processes:
                    if process.returncode is None:
                        self._killed.add(process.pid)
                        process.kill()
            else:
                self.code = EXIT_INTERRUPTED
                self._stop(nursery, STOP_GRACE)

    def _drain(self, nursery: trio.Nursery) -> None:
        """Pass SIGTERM on to every worker still running; kill those still
        running after the drain's bound and the grace."""
        if self.stopping:
            return
        self.stopping = True
        for process in self.processes:
            if process.returncode is None:
                process.send_signal(signal.SIGTERM)
        nursery.start_soon(self._kill_after_grace, self.drain_seconds + STOP_GRACE)

    def _stop(self, nursery: trio.Nursery, grace: float) -> None:
        """Close the lifeline; kill the workers still running after ``grace``."""
        if self.stopping:
            return
        self.stopping = True
        os.close(self._lifeline)
        self._lifeline = -1
        nursery.start_soon(self._kill_after_grace, grace)

    async def _kill_after_grace(self, grace: float) -> None:
        await trio.sleep(grace)
        for process in self.processes:
            if process.returncode is None:
                print(
                    f"yieldmcp: error: worker pid {process.pid} did not stop in "
                    "time; killing it (its calls in flight are cut)",
                    file=sys.stderr,
                )
                self.code = self.code or EXIT_FAILURE
                self._killed.add(process.pid)
                process.kill()


class _Worker:
    """A worker process, started from the parent's main thread (so that the
    kernel's parent-death signal is tied to the thread that lives as long
    as the parent: trio's ``open_process`` forks in a thread of its own,
    which may end first), and waited for without a thread where Linux can."""

    def __init__(self, popen: subprocess.Popen[bytes]) -> None:
        self._popen = popen
        self.pid = popen.pid

    @property
    def returncode(self) -> int | None:
        return self._popen.returncode

    async def wait(self) -> int:
        if hasattr(os, "pidfd_open"):
            pidfd = os.pidfd_open(self.pid)
            try:
                await trio.lowlevel.wait_readable(pidfd)
            finally:
                os.close(pidfd)
        else:
            await trio.to_thread.run_sync(self._popen.wait, abandon_on_cancel=True)
        return self._popen.wait()

    def send_signal(self, signum: int) -> None:
        if self._popen.returncode is None:
            self._popen.send_signal(signum)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def _killed_with_the_parent() -> None:
    """Linux: ask the kernel to SIGKILL this worker when its parent dies."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    pr_set_pdeathsig = 1
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0)


def _how(status: int) -> str:
    return f"signal {-status}" if status < 0 else f"code {status}"


_WORKER_LINE: Final = re.compile(rb"([rb])(\d{1,6})\n")
"""A worker's line on the ready pipe: ``r`` (it serves) or ``b`` (it still
runs), and its index."""
_LONGEST_LINE: Final = 8  # bytes of a worker's line, its newline included


# --- in a worker -------------------------------------------------------------------


def _worker_spec(spec: str) -> tuple[int, int, int, int] | None:
    """``INDEX:PORT:READY_FD:LIFELINE_FD`` (:data:`WORKER_ENV`), or None if
    it is not that, or names descriptors this process does not have."""
    try:
        index, port, ready_fd, lifeline_fd = (int(part) for part in spec.split(":"))
        os.fstat(ready_fd)
        os.fstat(lifeline_fd)
    except (ValueError, OSError):
        return None
    return index, port, ready_fd, lifeline_fd


def _work(
    server: Server, args: argparse.Namespace, options: dict[str, Any], spec: str
) -> int:
    parts = _worker_spec(spec)
    if parts is None:
        # Set by hand, or inherited by a process the parent did not start.
        print(
            f"yieldmcp: error: {WORKER_ENV} is set, and only a --workers parent "
            "sets it for its workers: unset it",
            file=sys.stderr,
        )
        return EXIT_FAILURE
    index, port, ready_fd, lifeline_fd = parts
    # Inherited on purpose from the parent; not to be passed on to a program
    # the served code runs (os.system, a subprocess without close_fds), which
    # would hold the ready pipe and the lifeline for as long as it lives.
    os.set_inheritable(ready_fd, False)
    os.set_inheritable(lifeline_fd, False)
    host, _ = args.http
    from .serving import serve_until_drained

    # 2025-11-25 sessions need the store to live across workers (see above).
    sessions = server.store is not None
    options = {**options, "reuse_port": True, "sessions": sessions}

    timeout: float = getattr(args, "worker_timeout", WORKER_TIMEOUT)

    async def main() -> None:
        async with trio.open_nursery() as nursery:

            async def serve(*, task_status: trio.TaskStatus[str]) -> None:
                await serve_until_drained(
                    server, host, port, options, task_status=task_status
                )
                nursery.cancel_scope.cancel()  # drained (SIGTERM): exit now

            await nursery.start(serve)
            os.set_blocking(ready_fd, False)
            _say(ready_fd, f"r{index}\n".encode())
            if timeout:
                nursery.start_soon(_beat, ready_fd, f"b{index}\n".encode(), timeout)
            _serving.set()  # the lifeline is watched below from now on
            log.info("worker %d (pid %d) is serving", index, os.getpid())
            async with trio.lowlevel.FdStream(lifeline_fd) as lifeline:
                while await lifeline.receive_some():
                    pass  # nothing is ever written: EOF means stop at once
            nursery.cancel_scope.cancel()

    try:
        trio.run(main)
    except BaseExceptionGroup as group:
        interrupt, rest = group.split(KeyboardInterrupt)
        if interrupt is None or rest is not None:
            raise
        return EXIT_INTERRUPTED
    return 0


async def _beat(fd: int, line: bytes, timeout: float) -> None:
    """Say on ``fd`` that this worker's event loop runs, for as long as it does."""
    while True:
        await trio.sleep(timeout / BEATS_PER_TIMEOUT)
        _say(fd, line)


def _say(fd: int, line: bytes) -> None:
    # Lines shorter than PIPE_BUF do not interleave with other workers'. A
    # parent that does not read (stopped itself) must not block this loop.
    with contextlib.suppress(BlockingIOError, BrokenPipeError):
        os.write(fd, line)

"""The real ``yieldmcp`` under a pseudo-terminal, as a person at a keyboard runs it.

``Terminal`` forks the command with a pty as its controlling terminal, so
Ctrl-C (``\\x03``) and Ctrl-D (``\\x04``) reach it the way they do from a
keyboard: SIGINT to the whole foreground process group, a spawned server
included. stdout may be sent to a pipe instead, to see what a script gets.
"""

from __future__ import annotations

import os
import pty
import select
import signal
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

from tests.helpers import ROOT

BIN = Path(sys.executable).parent
YIELDMCP = str(BIN / "yieldmcp")
PATIENCE = 90.0  # generous: a busy CI machine takes seconds to import


class Terminal:
    """One command on a pty; ``screen`` is everything it showed."""

    def __init__(
        self, argv: Sequence[str], *, stdout_to_pipe: bool = False, cwd: Path = ROOT
    ) -> None:
        self.mark = uuid.uuid4().hex  # in the environment of every process spawned
        piped = os.pipe() if stdout_to_pipe else None
        pid, fd = pty.fork()
        if pid == 0:  # the child: becomes the command
            try:
                os.chdir(cwd)
                if piped is not None:
                    os.dup2(piped[1], 1)
                env = {**os.environ, "YIELDMCP_TEST_MARK": self.mark}
                env.setdefault("TERM", "xterm")
                os.execve(argv[0], list(argv), env)
            finally:
                os._exit(127)
        self.pid = pid
        self.fd = fd
        self.screen = ""
        self.stdout = ""
        self._pipe = None
        if piped is not None:
            os.close(piped[1])
            self._pipe = piped[0]
        self._pipe_open = self._pipe is not None
        self.status: int | None = None
        self.quiet = False  # the last read found nothing to read

    def _pump(self, timeout: float) -> bool:
        """Read what is there within ``timeout``; False once all output ended."""
        sources = [self.fd] + ([self._pipe] if self._pipe_open else [])
        ready, _, _ = select.select(sources, [], [], timeout)
        self.quiet = not ready
        alive = True
        for source in ready:
            try:
                data = os.read(source, 65536)
            except OSError:
                data = b""
            if not data:
                if source == self.fd:
                    alive = False
                else:
                    self._pipe_open = False  # stdout ended; the pty may not
                continue
            text = data.decode("utf-8", "replace")
            if source == self.fd:
                self.screen += text.replace("\r\n", "\n")
            else:
                self.stdout += text
        return alive

    def expect(self, text: str, *, timeout: float = PATIENCE) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.screen:
            left = deadline - time.monotonic()
            assert left > 0, f"never showed {text!r}; screen:\n{self.screen}"
            if not self._pump(min(left, 0.5)):
                assert text in self.screen, f"ended without {text!r}:\n{self.screen}"

    def type(self, keys: str) -> None:
        os.write(self.fd, keys.encode())

    def wait(self, *, timeout: float = PATIENCE) -> int:
        """The exit status (negative: killed by that signal)."""
        deadline = time.monotonic() + timeout
        while self.status is None:
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                self.status = os.waitstatus_to_exitcode(status)
                break
            assert time.monotonic() < deadline, f"still running:\n{self.screen}"
            self._pump(0.2)
        while self._pump(0.2) and not self.quiet:  # what is still buffered
            pass
        return self.status

    def spawned_alive(self) -> list[int]:
        """Processes still running that this command started (by the mark)."""
        alive: list[int] = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == self.pid:
                continue
            try:
                environ = (entry / "environ").read_bytes()
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if self.mark.encode() in environ and state != "Z":
                alive.append(int(entry.name))
        return alive

    def kill_spawned(self) -> None:
        for pid in self.spawned_alive():
            os.kill(pid, signal.SIGKILL)

    def close(self) -> None:
        if self.status is None:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        self.kill_spawned()
        os.close(self.fd)
        if self._pipe is not None:
            os.close(self._pipe)


def no_spawned_left(terminal: Terminal, *, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while terminal.spawned_alive():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True

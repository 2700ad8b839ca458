"""Headless Chromium from the system packages (``.ci/run`` installs it)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import threading
from html.parser import HTMLParser
from pathlib import Path

import pytest

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is missing: .ci/run installs it (apt-get)")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return found


def _run(*args: str) -> str:
    with tempfile.TemporaryDirectory() as profile:
        done = subprocess.run(
            [chromium(), *FLAGS, f"--user-data-dir={profile}", *args],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def dump_dom(path: Path, fragment: str = "", *, settle_ms: int = 0) -> str:
    """The page's DOM after its scripts ran (and, with ``settle_ms``, after
    that much virtual time: timers, refreshes and navigations get to fire)."""
    wait = [f"--virtual-time-budget={settle_ms}"] if settle_ms else []
    return _run(*wait, "--dump-dom", path.resolve().as_uri() + fragment)


def screenshot(path: Path, png: Path, size: str = "1060,300") -> None:
    _run(f"--window-size={size}", f"--screenshot={png}", path.resolve().as_uri())


class Elements(HTMLParser):
    """Every element's tag and attributes, and the text of ``#tip``."""

    def __init__(self, dom: str) -> None:
        super().__init__()
        self.found: list[tuple[str, dict[str, str]]] = []
        self.tip: list[str] = []
        self._in_tip = 0
        self.feed(dom)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        self.found.append((tag, values))
        if values.get("id") == "tip" or self._in_tip:
            self._in_tip += 1

    def handle_endtag(self, tag: str) -> None:
        if self._in_tip:
            self._in_tip -= 1

    def handle_data(self, data: str) -> None:
        if self._in_tip:
            self.tip.append(data)

    def all(self, tag: str, cls: str) -> list[dict[str, str]]:
        return [
            a for t, a in self.found if t == tag and cls in a.get("class", "").split()
        ]


_HEARD = (  # a page to land on: a navigation that gets nothing never ends
    b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 12\r\n"
    b"Connection: close\r\n\r\n<p>heard</p>"
)


class Listener:
    """A loopback HTTP listener that must hear nothing: every request a page
    sends it (a fetch, an image, a navigation) is kept in ``heard``."""

    def __init__(self) -> None:
        self._socket = socket.create_server(("127.0.0.1", 0))
        self._socket.settimeout(0.2)
        self.port: int = self._socket.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.heard: list[bytes] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> Listener:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._socket.close()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _address = self._socket.accept()
            except TimeoutError:
                continue
            with connection:
                connection.settimeout(2)
                try:
                    self.heard.append(connection.recv(4096))
                    connection.sendall(_HEARD)
                except OSError as exc:
                    self.heard.append(repr(exc).encode())

"""Headless Chromium from the system packages (``.ci/run`` installs it)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
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


def dump_dom(path: Path, fragment: str = "") -> str:
    """The page's DOM after its scripts ran."""
    return _run("--dump-dom", path.resolve().as_uri() + fragment)


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

"""Whose time a login takes, and what bounds it, against real loopback peers.

* A browser command that does not return (``webbrowser`` waits for a
  ``$BROWSER`` it does not know to exit) does not hold the login: the user
  can answer through the printed URL meanwhile, and ``call --timeout`` and
  Ctrl-C stop the call at once, the browser's process left to itself.
* The authorization server's time (its metadata, registration, the token
  endpoint) is not the MCP server's: it is not counted by the request it is
  on the way of (``connect_timeout``), and a slow one fails naming its
  endpoint, bounded by ``OAuth(timeout=)``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
import webbrowser
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import trio

from bridge.client import connect
from bridge.client.client import Era
from bridge.client.oauth import BrowserRedirect, HeadlessRedirect, OAuth
from runtime.errors import AuthorizationError
from tests.bridge.cli.test_cli import YIELDMCP
from tests.bridge.client.oauth.test_auth_client_refusals import _Screen, protected
from tests.helpers import ROOT

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]


# --- a browser that does not return ---------------------------------------------------


@pytest.fixture
def stuck_browser(monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """``webbrowser.open`` that does not return until the test ends (set when
    it was called), as for a ``$BROWSER`` run in the foreground."""
    called, release = threading.Event(), threading.Event()

    def stuck(url: str, *args: object, **kwargs: object) -> bool:
        called.set()
        release.wait(30)
        return True

    monkeypatch.setattr(webbrowser, "open", stuck)
    monkeypatch.setenv("DISPLAY", ":99")  # graphical: the browser is opened
    try:
        yield called
    finally:
        release.set()


async def test_a_browser_that_does_not_return_does_not_hold_the_login(
    stuck_browser: threading.Event,
) -> None:
    # The browser was opened, and waited for, before the answer was: the
    # user's answer through the printed URL sat there until the browser exited.
    screen = _Screen()
    oauth = OAuth(redirect=BrowserRedirect(out=screen))

    async def user() -> None:
        await screen.printed.wait()
        async with httpx.AsyncClient() as browser:
            page = await browser.get(screen.authorization_url(), follow_redirects=True)
        assert "You can close this window" in page.text

    began = time.monotonic()
    async with protected() as (_issuer, url), trio.open_nursery() as nursery:
        nursery.start_soon(user)
        with trio.fail_after(60):
            async with connect(url, era="2026-07-28", auth=oauth) as client:
                result = await client.call_tool("whoami")
    assert result.text.startswith("alice via client-1")
    assert stuck_browser.is_set()
    assert time.monotonic() - began < 10  # not the browser's 30


async def test_a_browser_that_does_not_return_is_left_on_cancel(
    stuck_browser: threading.Event,
) -> None:
    screen = _Screen()
    oauth = OAuth(redirect=BrowserRedirect(out=screen))
    async with protected() as (_issuer, url):
        began = time.monotonic()
        with trio.move_on_after(2) as timer:
            async with connect(url, era="2026-07-28", auth=oauth) as client:
                await client.call_tool("whoami")
        waited = time.monotonic() - began
    assert timer.cancelled_caught
    assert stuck_browser.is_set()
    assert waited < 6  # the 2 s asked, not the browser's 30


# Its output elsewhere: the call's stderr, inherited, would stay open after
# the call exits, as long as the browser runs.
_HANGING_BROWSER = """#!/bin/sh
echo $$ > "$0.pid"
exec sleep 60 </dev/null >/dev/null 2>&1
"""


@contextlib.contextmanager
def _hanging_browser(folder: Path) -> Iterator[Path]:
    """A ``$BROWSER`` command that does not exit; killed (by the pid it
    wrote) when the block ends, since the call leaves it be."""
    command = folder / "hanging-browser"
    command.write_text(_HANGING_BROWSER)
    command.chmod(0o700)
    try:
        yield command
    finally:
        with contextlib.suppress(FileNotFoundError, ProcessLookupError, ValueError):
            os.kill(int(Path(f"{command}.pid").read_text()), signal.SIGKILL)


async def _call_with_browser(
    tmp_path: Path, url: str, browser: Path, *extra: str, interrupt: bool = False
) -> tuple[int, str, float]:
    """``yieldmcp call URL whoami`` with ``$BROWSER`` set to ``browser``:
    its exit status, its stderr, and how long it ran after the browser
    started (after SIGINT, with ``interrupt``)."""
    env = {**os.environ, "BROWSER": str(browser), "DISPLAY": ":99"}
    env.pop("WAYLAND_DISPLAY", None)
    process = await trio.lowlevel.open_process(
        [YIELDMCP, "call", url, "whoami", "--oauth-tokens",
         str(tmp_path / "state" / "tokens.json"), *extra],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT, env=env,
    )  # fmt: skip
    assert process.stderr is not None
    err = bytearray()

    async def read() -> None:
        assert process.stderr is not None
        while chunk := await process.stderr.receive_some():
            err.extend(chunk)

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(read)
            with trio.fail_after(30):
                while not Path(f"{browser}.pid").exists():
                    await trio.sleep(0.05)
            began = time.monotonic()
            if interrupt:
                await trio.sleep(0.5)
                began = time.monotonic()
                process.send_signal(signal.SIGINT)
            with trio.move_on_after(30):
                await process.wait()
            ran = time.monotonic() - began
    finally:
        if process.returncode is None:
            process.kill()
            with trio.CancelScope(shield=True):
                await process.wait()
    return process.returncode, err.decode(), ran


async def test_call_timeout_bounds_a_browser_that_does_not_return(
    tmp_path: Path,
) -> None:
    # `call --timeout 5` ran until killed at 40 s: the thread opening the
    # browser could not be cancelled.
    with _hanging_browser(tmp_path) as browser:
        async with protected() as (_issuer, url):
            code, err, ran = await _call_with_browser(
                tmp_path, url, browser, "--timeout", "3"
            )
    assert code == 1, err
    assert err.splitlines()[-1] == "yieldmcp: error: no result within 3 s (--timeout)"
    assert ran < 10


async def test_ctrl_c_stops_a_call_whose_browser_does_not_return(
    tmp_path: Path,
) -> None:
    # SIGINT while the browser had not returned: still running 15 s later.
    with _hanging_browser(tmp_path) as browser:
        async with protected() as (_issuer, url):
            code, err, ran = await _call_with_browser(
                tmp_path, url, browser, interrupt=True
            )
    assert code == 130, err
    assert ran < 10


# --- the authorization server's time --------------------------------------------------


@pytest.mark.parametrize("era", ["2026-07-28", "legacy"])
async def test_a_slow_token_endpoint_is_not_the_servers_time(era: Era) -> None:
    # Only the user's wait was not counted: a token endpoint slower than
    # connect_timeout failed the first request blaming the server, and the
    # login was thrown away.
    oauth = OAuth(redirect=HeadlessRedirect())
    async with protected() as (issuer, url):
        issuer.token_delay = 2.5  # longer than the connect timeout below
        with trio.fail_after(60):
            async with connect(url, era=era, auth=oauth, connect_timeout=1) as client:
                result = await client.call_tool("whoami")
    assert result.text.startswith("alice via client-1")


@pytest.mark.parametrize("era", ["2026-07-28", "legacy"])
async def test_a_token_endpoint_that_hangs_is_named_after_oauth_timeout(
    era: Era,
) -> None:
    # It was "initialize got no reply within 1 s" (--connect-timeout), or
    # for server/discover, advice to use --era legacy.
    oauth = OAuth(redirect=HeadlessRedirect(), timeout=2)
    async with protected() as (issuer, url):
        issuer.token_delay = 30
        began = time.monotonic()
        with pytest.raises(AuthorizationError) as caught, trio.fail_after(20):
            async with connect(url, era=era, auth=oauth, connect_timeout=1) as client:
                await client.call_tool("whoami")
        waited = time.monotonic() - began
    assert str(caught.value) == (
        f"cannot reach the token endpoint {issuer.url}/token: "
        "no whole answer within 2 s"
    )
    assert waited < 10

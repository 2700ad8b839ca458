"""What our OAuth client refuses, against real servers on loopback.

* An authorization server that does not advertise PKCE with ``S256``
  (2025-11-25: absent ``code_challenge_methods_supported`` means no PKCE, and
  a client MUST refuse).
* Plain ``http`` for any endpoint that is not on loopback: the metadata of
  the resource and of the authorization server, and the authorization, token
  and registration endpoints. Refused before any request goes there.
* On the loopback callback, a request whose ``state`` is not the one sent
  (another local process, a page the user has open): answered with a small
  error page and ignored; the login goes on until the right one comes.

Each refusal is one line. The authorization server is the test kit's
(``tests/bridge/auth_issuer.py``), its metadata changed per test.
"""

from __future__ import annotations

import contextlib
import io
import os
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest
import trio

from bridge.client import connect
from bridge.client.client import Era
from bridge.client.oauth import BrowserRedirect, HeadlessRedirect, OAuth
from bridge.client.oauth.endpoints import check_endpoint
from bridge.server import Server
from bridge.server.auth import Auth, JwtVerifier
from runtime.errors import AuthorizationError
from tests.bridge.auth_issuer import Issuer, issuing
from tests.bridge.http_kit import served
from tests.bridge.server.auth.test_auth_server import USE, whoami
from tests.threaded_http import QuietHandler, serving

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

FAR = "http://as.invalid"  # not loopback; never resolves (RFC 6761)


@contextlib.asynccontextmanager
async def protected(
    changes: dict[str, Any] | None = None, servers: list[str] | None = None
) -> AsyncIterator[tuple[Issuer, str]]:
    """The issuer, its metadata changed (None drops a field), and the URL of a
    server naming ``servers`` (default: the issuer) as its authorization
    servers."""
    async with issuing() as issuer:
        published = {**issuer.metadata(), **(changes or {})}
        kept = {k: v for k, v in published.items() if v is not None}
        issuer.metadata = lambda: kept  # type: ignore[method-assign]
        server = Server([whoami], name="guarded")
        async with served(server) as url:
            server.auth = Auth(
                resource=url,
                authorization_servers=servers or [issuer.url],
                verifier=JwtVerifier(issuer=issuer.url),
                scopes=[USE],
            )
            yield issuer, url


async def refused(url: str, oauth: OAuth | None = None) -> str:
    oauth = oauth or OAuth(redirect=HeadlessRedirect())
    with pytest.raises(AuthorizationError) as caught:
        async with connect(url, era="2026-07-28", auth=oauth) as client:
            await client.list_tools()
    message = str(caught.value)
    assert "\n" not in message
    return message


def nothing_sent(issuer: Issuer) -> None:
    assert issuer.registrations == []
    assert issuer.authorizations == []
    assert issuer.token_requests == []


# --- S256 ----------------------------------------------------------------------------


@pytest.mark.parametrize("methods", [None, ["plain"], []])
async def test_an_authorization_server_without_s256_is_refused(
    methods: list[str] | None,
) -> None:
    changes = {"code_challenge_methods_supported": methods}
    async with protected(changes) as (issuer, url):
        message = await refused(url)
        nothing_sent(issuer)
    assert message == (
        f"the authorization server {issuer.url} does not advertise PKCE with S256 "
        "(code_challenge_methods_supported); refusing to authorize with it"
    )


# --- plain http ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "https://as.example.com/token",
        "http://127.0.0.1:9/token",
        "http://127.9.8.7/token",
        "http://[::1]:9/token",
        "http://localhost:9/token",
        "http://LOCALHOST/token",
    ],
)
def test_https_and_loopback_http_are_accepted(url: str) -> None:
    check_endpoint(url, "the token endpoint")


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://as.example.com/token", "plain http"),
        ("http://10.0.0.1/token", "plain http"),
        ("http://0.0.0.0/token", "plain http"),
        ("http://localhost.as.example.com/token", "plain http"),
        ("http://127.0.0.1.nip.io/token", "plain http"),
        ("HTTP://as.example.com/token", "plain http"),
        ("ftp://as.example.com/token", "is not https"),
        ("javascript:alert(1)", "is not https"),
        ("https:///token", "has no host"),
        ("https://as.example.com/\x1b[2Jtoken", "control"),
        ("https://as.example.com/a b", "control"),
        # invisible: the URL printed for the user would look like another
        ("https://login.example.com/x\u202e/moc.elgoog//:sptth", "invisible"),
        ("https://login.example.com/\u200b", "invisible"),
        ("https://login.example.com/\u2028x", "invisible"),
        ("https://login.example.com/\u00a0", "invisible"),
        # blank-looking letters, pushing the host behind "@" out of sight
        ("https://accounts.example" + "\u3164" * 8 + "@evil.example/a", "non-ASCII"),
        ("https://login.example.com/\u2800", "non-ASCII"),
        ("https://login.example.com/\u034f", "non-ASCII"),
        ("https://accounts.example.com@evil.example/authorize", "names a user"),
    ],
)
def test_other_endpoints_are_refused(url: str, why: str) -> None:
    with pytest.raises(AuthorizationError, match=why) as caught:
        check_endpoint(url, "the token endpoint")
    assert str(caught.value).startswith("refusing the token endpoint ")


@pytest.mark.parametrize(
    ("field", "what"),
    [
        ("authorization_endpoint", "the authorization endpoint"),
        ("token_endpoint", "the token endpoint"),
        ("registration_endpoint", "the registration endpoint"),
    ],
)
async def test_a_plain_http_endpoint_elsewhere_is_refused_before_use(
    field: str, what: str
) -> None:
    async with protected({field: f"{FAR}/{field}"}) as (issuer, url):
        message = await refused(url)
        nothing_sent(issuer)
    assert message.startswith(f"refusing {what} {FAR}/{field}: plain http")


async def test_a_plain_http_authorization_server_elsewhere_is_not_asked() -> None:
    async with protected(servers=[FAR]) as (issuer, url):
        message = await refused(url)
        nothing_sent(issuer)
    assert message.startswith(
        f"refusing the authorization server metadata {FAR}/.well-known/"
    )
    assert "plain http is allowed only on loopback" in message


async def test_a_plain_http_resource_metadata_url_elsewhere_is_not_fetched() -> None:
    from bridge.client.oauth.discovery import resource_metadata

    async with httpx.AsyncClient() as http:
        with pytest.raises(AuthorizationError, match="plain http") as caught:
            await resource_metadata(
                http, f"{FAR}/.well-known/oauth-protected-resource", "https://x/mcp"
            )
    assert str(caught.value).startswith("refusing the resource metadata ")


# --- the loopback callback's state ---------------------------------------------------


class _Screen(io.StringIO):
    """Where the browser flow prints the URL; wakes whoever waits for it."""

    def __init__(self) -> None:
        super().__init__()
        self.printed = trio.Event()

    def write(self, text: str) -> int:
        written = super().write(text)
        if "http" in self.getvalue():
            self.printed.set()
        return written

    def authorization_url(self) -> str:
        return self.getvalue().split(": ", 1)[1].strip()


def redirect_uri(authorization_url: str) -> str:
    return parse_qs(urlsplit(authorization_url).query)["redirect_uri"][0]


async def test_a_callback_with_the_wrong_state_is_ignored_until_the_right_one() -> None:
    screen = _Screen()
    oauth = OAuth(redirect=BrowserRedirect(open_browser=False, out=screen))
    intruders: list[httpx.Response] = []

    async def intruder_then_user() -> None:
        await screen.printed.wait()
        url = screen.authorization_url()
        callback = redirect_uri(url)
        async with httpx.AsyncClient() as browser:
            for query in (
                {"code": "stolen", "state": "wrong"},
                {"error": "access_denied", "state": "wrong"},
                {"code": "stolen"},
            ):
                intruders.append(await browser.get(f"{callback}?{urlencode(query)}"))
            page = await browser.get(url, follow_redirects=True)  # the user
        assert page.status_code == 200
        assert "You can close this window" in page.text

    async with protected() as (issuer, url), trio.open_nursery() as nursery:
        nursery.start_soon(intruder_then_user)
        with trio.fail_after(60):
            async with connect(url, era="2026-07-28", auth=oauth) as client:
                result = await client.call_tool("whoami")
    assert result.text.startswith("alice via client-1")
    assert [r.status_code for r in intruders] == [400, 400, 400]
    assert all("not the answer" in r.text for r in intruders)
    (exchange,) = issuer.token_requests
    assert exchange["code"] != "stolen"


@pytest.mark.parametrize("era", ["2026-07-28", "legacy"])
async def test_the_time_a_user_takes_to_log_in_is_not_the_servers(era: Era) -> None:
    # The first request is bounded by connect_timeout (10 s by default), and
    # the login on its way counted: a user had 10 s, not BrowserRedirect's
    # 300, and the failure blamed the server ("got no reply within 10 s").
    screen = _Screen()
    oauth = OAuth(redirect=BrowserRedirect(open_browser=False, out=screen))

    async def slow_user() -> None:
        await screen.printed.wait()
        await trio.sleep(2.5)  # longer than the connect timeout below
        async with httpx.AsyncClient() as browser:
            page = await browser.get(screen.authorization_url(), follow_redirects=True)
        assert "You can close this window" in page.text

    async with protected() as (_issuer, url), trio.open_nursery() as nursery:
        nursery.start_soon(slow_user)
        with trio.fail_after(60):
            async with connect(url, era=era, auth=oauth, connect_timeout=1) as client:
                result = await client.call_tool("whoami")
    assert result.text.startswith("alice via client-1")
    assert screen.getvalue().count("Authorize in your browser") == 1


async def test_a_wait_for_the_token_files_lock_is_not_the_servers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The save of the registered client waits for another process's lock on
    # the token file, on the way of the first request: it counted against
    # connect_timeout, and the call failed blaming the server.
    import fcntl

    from bridge.client.oauth import FileTokenStore
    from bridge.client.oauth import store as token_store

    monkeypatch.setattr(token_store, "LOCK_WAIT", 10.0)
    folder = tmp_path / "tokens"
    folder.mkdir(mode=0o700)
    oauth = OAuth(redirect=HeadlessRedirect(), store=FileTokenStore(folder / "t.json"))
    lock = folder / ".t.json.lock"
    lock.touch(mode=0o600)
    held = os.open(lock, os.O_RDONLY)
    fcntl.flock(held, fcntl.LOCK_EX)  # as another process saving would

    async def let_go() -> None:
        await trio.sleep(2)  # longer than the connect timeout below
        os.close(held)

    async with protected() as (_issuer, url), trio.open_nursery() as nursery:
        nursery.start_soon(let_go)
        with trio.fail_after(60):
            async with connect(url, auth=oauth, connect_timeout=1) as client:
                result = await client.call_tool("whoami")
    assert result.text.startswith("alice via client-1")


async def test_only_wrong_states_end_in_the_login_timeout() -> None:
    screen = _Screen()
    redirect = BrowserRedirect(open_browser=False, out=screen, timeout=2)
    oauth = OAuth(redirect=redirect)

    async def intruder() -> None:
        await screen.printed.wait()
        callback = redirect_uri(screen.authorization_url())
        async with httpx.AsyncClient() as browser:
            await browser.get(f"{callback}?code=stolen&state=wrong")

    async with protected() as (issuer, url), trio.open_nursery() as nursery:
        nursery.start_soon(intruder)
        message = await refused(url, oauth)
        assert issuer.token_requests == []
    assert message == "no authorization came back within 2 s"


# --- answers bounded as a whole ------------------------------------------------------


class _Hostile(QuietHandler):
    """``/trickle``: a byte every 50 ms, never quiet for a network step's
    timeout; anything else: an endless body. Counts what it wrote."""

    written = 0

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        trickle = self.path.startswith("/trickle")
        chunk = b" " if trickle else b" " * 65536
        with contextlib.suppress(OSError):
            while True:
                self.wfile.write(chunk)
                self.wfile.flush()
                type(self).written += len(chunk)
                if trickle:
                    time.sleep(0.05)


@contextlib.contextmanager
def hostile_documents() -> Iterator[str]:
    _Hostile.written = 0
    with serving(_Hostile) as base:
        yield base


async def test_a_metadata_document_that_trickles_is_cut_at_the_timeout() -> None:
    from bridge.client.oauth.discovery import resource_metadata

    with hostile_documents() as base:
        async with httpx.AsyncClient(timeout=0.5) as client:
            with trio.fail_after(10), pytest.raises(AuthorizationError) as caught:
                await resource_metadata(client, f"{base}/trickle", f"{base}/mcp")
    assert str(caught.value) == (
        f"cannot fetch {base}/trickle: no whole answer within 0.5 s"
    )


async def test_an_endless_metadata_document_is_not_read_past_its_limit() -> None:
    from bridge.client.oauth.discovery import resource_metadata

    with hostile_documents() as base:
        async with httpx.AsyncClient(timeout=5) as client:
            with trio.fail_after(10):
                # Every URL tried (the challenge's, then the well-known ones)
                # is endless: none is a document, so the server has none.
                found = await resource_metadata(
                    client, f"{base}/endless", f"{base}/mcp"
                )
    assert found is None
    # 256 KiB read per URL, three URLs; the rest is what the sockets buffered.
    assert _Hostile.written < 16 * 1024 * 1024

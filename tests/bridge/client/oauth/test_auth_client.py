"""Our client's OAuth flow against our own protected server, over loopback.

The test issuer (``tests/bridge/auth_issuer.py``) is the authorization server:
it registers clients, approves at once, and issues JWTs for the resource
asked. Our server checks them with its JWKS. So every step runs for real:
the 401, discovery from the challenge, registration, PKCE, the redirect and
its ``iss``, the token exchange, the retried request, step-up on a 403,
refresh, the token file, the loopback listener of the browser flow, and that
nothing secret reaches a log. (The official conformance suite runs the same
client against its own authorization servers: ``.ci/run``.)
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import stat
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio
from joserfc.jwk import ECKey

from bridge.client import connect
from bridge.client.oauth import (
    BrowserRedirect,
    FileTokenStore,
    HeadlessRedirect,
    OAuth,
)
from bridge.server import Server
from bridge.server.auth import Auth, JwtVerifier
from runtime.errors import AuthorizationError, InvalidToken
from tests.bridge.auth_issuer import Issuer, issuing
from tests.bridge.http_kit import served
from tests.bridge.server.auth.test_auth_server import USE, whoami, write_note

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

ERAS = ["legacy", "2026-07-28"]


@contextlib.asynccontextmanager
async def protected(**verifier: Any) -> AsyncIterator[tuple[Issuer, str]]:
    """The issuer, and the URL of a server accepting its tokens (``mcp:use``)."""
    async with issuing() as issuer:
        server = Server([whoami, write_note], name="guarded")
        async with served(server) as url:
            server.auth = Auth(
                resource=url,
                authorization_servers=[issuer.url],
                verifier=JwtVerifier(issuer=issuer.url, **verifier),
                scopes=[USE],
            )
            yield issuer, url


def headless(**options: Any) -> OAuth:
    return OAuth(redirect=HeadlessRedirect(), **options)


@pytest.mark.parametrize("era", ERAS)
async def test_a_client_authorizes_with_the_servers_issuer_then_calls(era: Any) -> None:
    async with (
        protected() as (issuer, url),
        connect(url, era=era, auth=headless()) as client,
    ):
        result = await client.call_tool("whoami")
    assert result.text == "alice via client-1 ['mcp:use']"
    (registered,) = issuer.registrations
    assert registered["application_type"] == "native"
    assert registered["redirect_uris"] == ["http://127.0.0.1/callback"]
    (asked,) = issuer.authorizations
    assert asked["resource"] == url  # exactly as the metadata publishes it
    assert asked["scope"] == USE  # from the 401's challenge
    assert asked["code_challenge_method"] == "S256"
    (exchange,) = issuer.token_requests
    assert exchange["grant_type"] == "authorization_code"
    assert exchange["resource"] == url


@pytest.mark.parametrize("era", ERAS)
async def test_a_scoped_tool_steps_up_keeping_the_scopes_granted(era: Any) -> None:
    async with protected() as (issuer, url):
        issuer.bonus = "profile"  # granted, though no challenge names it
        async with connect(url, era=era, auth=headless()) as client:
            await client.list_tools()
            result = await client.call_tool("write_note", {"text": "hi"})
            assert result.text == "alice wrote hi"
            again = await client.call_tool("whoami")
    assert again.text == "alice via client-1 ['mcp:use', 'notes:write', 'profile']"
    first, second = issuer.authorizations
    assert first["scope"] == USE
    # SEP-2350: what was asked, what was granted, and what the 403 names.
    assert second["scope"] == f"{USE} profile notes:write"
    assert len(issuer.registrations) == 1  # the same client steps up


async def test_a_token_the_server_stops_accepting_is_refreshed() -> None:
    # The issuer rotates its key: the server refuses the old token (unknown
    # key), and the client swaps its refresh token rather than ask the user.
    async with protected(jwks_ttl=0) as (issuer, url):
        async with connect(url, era="2026-07-28", auth=headless()) as client:
            await client.list_tools()
            issuer.key = ECKey.generate_key("P-256", parameters={"kid": "key-2"})
            result = await client.call_tool("whoami")
        assert result.text.startswith("alice via client-1")
        grants = [request["grant_type"] for request in issuer.token_requests]
        assert grants == ["authorization_code", "refresh_token"]
        assert len(issuer.authorizations) == 1


async def test_an_expired_token_is_refreshed_before_it_is_sent() -> None:
    async with protected() as (issuer, url):
        issuer.lifetime = 5  # inside the client's 30 s margin: stale at once
        async with connect(url, era="2026-07-28", auth=headless()) as client:
            await client.list_tools()
            await client.call_tool("whoami")
        grants = [request["grant_type"] for request in issuer.token_requests]
        assert grants[0] == "authorization_code"
        assert set(grants[1:]) == {"refresh_token"}
        assert len(issuer.authorizations) == 1


async def test_tokens_kept_in_a_file_are_private_and_reused(tmp_path: Path) -> None:
    path = tmp_path / "state" / "tokens.json"
    async with protected() as (issuer, url):
        for _ in range(2):  # two processes' worth of connections
            oauth = headless(store=FileTokenStore(path))
            async with connect(url, era="2026-07-28", auth=oauth) as client:
                assert (await client.call_tool("whoami")).text.startswith("alice")
        assert len(issuer.authorizations) == 1  # the second used the file
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert issuer.issued[0] in path.read_text()


async def test_a_token_file_others_can_read_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    path.write_text("{}")
    os.chmod(path, 0o644)
    async with protected() as (issuer, url):
        oauth = headless(store=FileTokenStore(path))
        with pytest.raises(AuthorizationError, match="chmod 600"):
            async with connect(url, era="2026-07-28", auth=oauth) as client:
                await client.list_tools()
        assert issuer.authorizations == []


async def test_metadata_for_another_resource_stops_the_flow_before_consent() -> None:
    async with issuing() as issuer:
        server = Server([whoami], name="misconfigured")
        async with served(server) as url:
            server.auth = Auth(
                resource=url.replace("/mcp", "/another"),  # not this server
                authorization_servers=[issuer.url],
                verifier=JwtVerifier(issuer=issuer.url),
            )
            with pytest.raises(AuthorizationError, match="another resource"):
                async with connect(url, era="2026-07-28", auth=headless()) as client:
                    await client.list_tools()
    assert issuer.registrations == []
    assert issuer.authorizations == []


async def test_a_refusal_after_authorizing_is_an_error_not_a_loop() -> None:
    async with protected() as (issuer, url):
        issuer.subject = ""  # tokens with no subject: the server refuses them
        with pytest.raises(AuthorizationError, match="refused the token"):
            async with connect(url, era="2026-07-28", auth=headless()) as client:
                await client.list_tools()
        assert len(issuer.authorizations) == 1
        assert len(issuer.token_requests) == 2  # one code, one refresh


class _RefusesAtLength:
    """A verifier refusing every token with a 20 KB reason."""

    async def verify(self, token: str, *, resource: str) -> Any:
        raise InvalidToken("no, " + "because " * 2_500)


async def test_a_refusals_long_description_is_cut_in_the_one_line() -> None:
    # The server's 20 KB error_description was printed whole in the error.
    async with issuing() as issuer:
        server = Server([whoami], name="guarded")
        async with served(server) as url:
            server.auth = Auth(
                resource=url,
                authorization_servers=[issuer.url],
                verifier=_RefusesAtLength(),
                scopes=[USE],
            )
            with pytest.raises(AuthorizationError) as refused:
                async with connect(url, era="2026-07-28", auth=headless()) as client:
                    await client.list_tools()
    said = str(refused.value)
    assert "refused the token it was just given (no, because because" in said
    assert len(said) < 500, len(said)


class _Screen(io.StringIO):
    """Where the browser flow prints the URL; wakes the waiting 'user'."""

    def __init__(self) -> None:
        super().__init__()
        self.printed = trio.Event()

    def write(self, text: str) -> int:
        written = super().write(text)
        if "http" in self.getvalue():
            self.printed.set()
        return written


async def test_the_browser_flow_receives_the_redirect_on_loopback() -> None:
    screen = _Screen()
    oauth = OAuth(redirect=BrowserRedirect(open_browser=False, out=screen))

    async def user() -> None:  # follows the printed URL, as a browser would
        await screen.printed.wait()
        url = screen.getvalue().split(": ", 1)[1].strip()
        async with httpx.AsyncClient() as browser:
            page = await browser.get(url, follow_redirects=True)
        assert page.status_code == 200
        assert "You can close this window" in page.text

    async with protected() as (issuer, url), trio.open_nursery() as nursery:
        nursery.start_soon(user)
        async with connect(url, era="2026-07-28", auth=oauth) as client:
            result = await client.call_tool("whoami")
    assert result.text.startswith("alice via client-1")
    redirect = issuer.registrations[0]["redirect_uris"][0]
    assert redirect.startswith("http://127.0.0.1:")
    assert redirect.endswith("/callback")
    assert issuer.authorizations[0]["redirect_uri"] == redirect


async def test_no_token_secret_or_code_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    async with protected() as (issuer, url):
        issuer.lifetime = 5  # a refresh too
        issuer.auth_methods = ["client_secret_basic"]  # a client secret too
        async with connect(url, era="legacy", auth=headless()) as client:
            await client.call_tool("write_note", {"text": "x"})
        requests = issuer.token_requests
    secrets = [*issuer.issued]
    secrets += [client["client_secret"] for client in issuer.clients.values()]
    secrets += [r["code_verifier"] for r in requests if "code_verifier" in r]
    assert len(secrets) > 8
    assert "authorizing at" in caplog.text  # the flow does log...
    for secret in secrets:  # ...never these, in any logger at any level
        assert secret not in caplog.text
    # The headless redirect's Location reaches httpcore's own DEBUG trace; the
    # code is single-use and useless without the verifier. Ours never log it.
    ours = "\n".join(
        r.getMessage() for r in caplog.records if r.name.startswith("yieldmcp")
    )
    for code in [r["code"] for r in requests if "code" in r]:
        assert code not in ours

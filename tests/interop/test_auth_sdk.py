"""The official MCP SDK's OAuth client against our protected server.

An independent implementation reads our challenges and metadata, registers
with the test kit's authorization server, gets a token for our resource, and
calls a tool; a scoped tool makes it step up on our 403. (Our own client is
checked against the official conformance suite's authorization servers.)
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
import trio
from mcp.client.auth import OAuthClientProvider
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from pydantic import AnyUrl

from tests.bridge.client.oauth.test_auth_client import protected

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]


class _Memory:
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class _Approver:
    """Follows the authorization URL and keeps the redirect's parameters."""

    def __init__(self) -> None:
        self.answer: dict[str, str] = {}

    async def redirect(self, url: str) -> None:
        async with httpx2.AsyncClient() as http:
            response = await http.get(url, follow_redirects=False)
        query = parse_qs(urlsplit(response.headers["location"]).query)
        self.answer = {k: v[0] for k, v in query.items()}

    async def callback(self) -> AuthorizationCodeResult:
        answer = self.answer
        return AuthorizationCodeResult(
            code=answer["code"], state=answer.get("state"), iss=answer.get("iss")
        )


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_sdk_client_authorizes_and_steps_up(mode: Any) -> None:
    approver = _Approver()
    async with protected() as (issuer, url):
        provider = OAuthClientProvider(
            server_url=url,
            client_metadata=OAuthClientMetadata(
                client_name="sdk",
                redirect_uris=[AnyUrl("http://127.0.0.1/callback")],
                grant_types=["authorization_code", "refresh_token"],
                response_types=["code"],
            ),
            storage=_Memory(),
            redirect_handler=approver.redirect,
            callback_handler=approver.callback,
        )
        with trio.fail_after(30):
            async with (
                httpx2.AsyncClient(auth=provider, timeout=30) as http,
                Client(
                    streamable_http_client(url=url, http_client=http), mode=mode
                ) as session,  # fmt: skip
            ):
                whoami = await session.call_tool("whoami", {})
                note = await session.call_tool("write_note", {"text": "hi"})
    assert whoami.content[0].text.startswith("alice via client-1")  # type: ignore[union-attr]
    assert note.content[0].text == "alice wrote hi"  # type: ignore[union-attr]
    scopes = [asked.get("scope") for asked in issuer.authorizations]
    assert scopes[0] == "mcp:use"
    assert "notes:write" in scopes[-1].split()
    assert all(asked["resource"] == url for asked in issuer.authorizations)

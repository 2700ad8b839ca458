"""Attacks on 2026-07-28 rounds with a store, over real loopback HTTP with
real access tokens: a state is its caller's alone, and an attempt by anyone
else (or with a forged state) neither proceeds nor uses the state up."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import trio

from bridge.server import Server
from bridge.server.auth import Auth, JwtVerifier
from bridge.stores import MemoryStore
from bridge.transports.http import HttpLimits
from tests.bridge.auth_issuer import Issuer, issuing
from tests.bridge.http_kit import MODERN, Raw, served
from tests.fixtures import http_tools

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]
USE = "mcp:use"
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
}
ANSWER = {"name": {"action": "accept", "content": {"name": "Zed"}}}


@contextlib.asynccontextmanager
async def guarded() -> AsyncIterator[tuple[Issuer, Raw]]:
    async with issuing() as issuer:
        server = Server([http_tools.ask_name], name="guarded", store=MemoryStore())
        plain = HttpLimits(stream_responses="when-needed")
        async with (
            served(server, limits=plain) as url,
            httpx.AsyncClient(timeout=30) as http,
        ):
            server.auth = Auth(
                resource=url,
                authorization_servers=[issuer.url],
                verifier=JwtVerifier(issuer=issuer.url),
                scopes=[USE],
            )
            yield issuer, Raw(http, url, era=MODERN)


async def _call(raw: Raw, token: str, **params: Any) -> dict[str, Any]:
    body = raw.request(
        1,
        "tools/call",
        {"name": "ask_name", "arguments": {}, **params, "_meta": ENVELOPE},
    )
    response = await raw.post(
        body,
        mcp_method="tools/call",
        mcp_name="ask_name",
        authorization=f"Bearer {token}",
    )
    return response.json()


async def test_another_callers_retry_is_invalid_and_leaves_the_state_to_its_owner() -> (
    None
):
    with trio.fail_after(60):
        async with guarded() as (issuer, raw):
            alice = issuer.token(aud=raw.url, scope=USE)
            bob = issuer.token(aud=raw.url, scope=USE, sub="bob")
            state = (await _call(raw, alice))["result"]["requestState"]
            stolen = await _call(raw, bob, inputResponses=ANSWER, requestState=state)
            assert stolen["error"]["data"] == {"reason": "invalid_request_state"}
            forged = state[:-6] + (
                "AAAAAA" if not state.endswith("AAAAAA") else "BBBBBB"
            )
            tampered = await _call(
                raw, alice, inputResponses=ANSWER, requestState=forged
            )
            assert tampered["error"]["data"] == {"reason": "invalid_request_state"}
            done = await _call(raw, alice, inputResponses=ANSWER, requestState=state)
            assert done["result"]["content"][0]["text"] == "hi Zed"
            # The same request again (its reply was lost): the kept result,
            # for alice only, and only with the answers that made it.
            again = await _call(raw, alice, inputResponses=ANSWER, requestState=state)
            assert again["result"]["content"] == done["result"]["content"]
            stolen = await _call(raw, bob, inputResponses=ANSWER, requestState=state)
            assert stolen["error"]["data"] == {"reason": "invalid_request_state"}
            other = {"name": {"action": "accept", "content": {"name": "Eve"}}}
            changed = await _call(raw, alice, inputResponses=other, requestState=state)
            assert changed["error"]["data"] == {"reason": "request_state_used"}

"""The server as an OAuth resource server, over real loopback HTTP.

A test issuer (``tests/bridge/auth_issuer.py``: keys generated per test,
JWKS, metadata and introspection served on 127.0.0.1) signs tokens; our
server, served on another loopback port with ``auth``, fetches its keys and
checks every request before any MCP: no token, expired, wrong audience,
wrong issuer, tampered, unknown key, missing scopes, and one caller replaying
another's ``requestState`` or 2025-11-25 session.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from joserfc.jwk import ECKey
from pydantic import BaseModel

from bridge.server import Server
from bridge.server.auth import Auth, IntrospectionVerifier, JwtVerifier
from bridge.transports.http import HttpLimits
from bridge.transports.www_authenticate import bearer_params
from runtime import Context, tool
from tests.bridge.auth_issuer import Issuer, issuing
from tests.bridge.http_kit import LEGACY, MODERN, Raw, served
from tests.fixtures import http_tools

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
}
USE = "mcp:use"


class Note(BaseModel):
    text: str


@tool
def whoami(ctx: Context) -> str:
    """Says who called, and with which scopes."""
    caller = ctx.principal
    if caller is None:
        return "nobody"
    return f"{caller.subject} via {caller.client_id} {sorted(caller.scopes)}"


@tool(scopes=["notes:write"])
def write_note(params: Note, ctx: Context) -> str:
    """Needs a scope of its own."""
    assert ctx.principal is not None
    return f"{ctx.principal.subject} wrote {params.text}"


@contextlib.asynccontextmanager
async def protected(
    verifier: Any = None, **options: Any
) -> AsyncIterator[tuple[Issuer, Raw, Server]]:
    """An issuer, and a server checking its tokens (scope ``mcp:use`` always)."""
    async with issuing() as issuer:
        server = Server([whoami, write_note, http_tools.ask_name], name="guarded")
        plain = HttpLimits(stream_responses="when-needed")  # JSON when it can
        async with (
            served(server, limits=plain) as url,
            httpx.AsyncClient(timeout=10) as http,
        ):
            server.auth = Auth(
                resource=url,
                authorization_servers=[issuer.url],
                verifier=verifier or JwtVerifier(issuer=issuer.url),
                scopes=[USE],
                **options,
            )
            yield issuer, Raw(http, url, era=MODERN), server


def call(raw: Raw, name: str, **params: Any) -> dict[str, Any]:
    return raw.request(
        1, "tools/call", {"name": name, "arguments": {}, **params, "_meta": ENVELOPE}
    )


async def post(raw: Raw, body: dict[str, Any], token: str | None) -> httpx.Response:
    extra = {} if token is None else {"authorization": f"Bearer {token}"}
    method = body.get("method", "")
    name = (body.get("params") or {}).get("name")
    headers = {"mcp_method": method, **({"mcp_name": name} if name else {}), **extra}
    return await raw.post(body, **headers)


def challenge(response: httpx.Response) -> dict[str, str]:
    params = bearer_params(response.headers.get("www-authenticate"))
    assert params is not None, response.headers
    return dict(params)


def origin(url: str) -> str:
    return url.removesuffix("/mcp")


async def test_the_metadata_is_served_at_both_well_known_paths() -> None:
    async with protected(resource_name="Guarded") as (issuer, raw, _server):
        for path in ("/.well-known/oauth-protected-resource/mcp",
                     "/.well-known/oauth-protected-resource"):  # fmt: skip
            response = await raw.http.get(origin(raw.url) + path)
            assert response.status_code == 200
            assert response.json() == {
                "resource": raw.url,
                "authorization_servers": [issuer.url],
                "bearer_methods_supported": ["header"],
                "scopes_supported": [USE],
                "resource_name": "Guarded",
            }


async def test_a_request_without_a_token_is_challenged_with_metadata_and_scope() -> (
    None
):
    async with protected() as (_issuer, raw, _server):
        response = await post(raw, call(raw, "whoami"), None)
        assert response.status_code == 401
        assert challenge(response) == {
            "resource_metadata": origin(raw.url)
            + "/.well-known/oauth-protected-resource/mcp",
            "scope": USE,
        }


async def test_a_valid_token_reaches_the_tool_as_its_principal() -> None:
    async with protected() as (issuer, raw, _server):
        token = issuer.token(aud=raw.url, scope=f"{USE} extra")
        response = await post(raw, call(raw, "whoami"), token)
        assert response.status_code == 200, response.text
        result = raw.checked_body(response)["result"]
        assert result["content"][0]["text"] == (
            "alice via test-client ['extra', 'mcp:use']"
        )


def _unsigned(claims: dict[str, Any]) -> str:
    def part(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

    return f"{part({'alg': 'none', 'typ': 'JWT'})}.{part(claims)}."


def _tampered(token: str) -> str:
    head, payload, signature = token.split(".")
    flipped = "A" if signature[5] != "A" else "B"
    return f"{head}.{payload}.{signature[:5]}{flipped}{signature[6:]}"


def _forged_claims(token: str, **changes: Any) -> str:
    head, payload, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims.update(changes)
    body = base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("=")
    return f"{head}.{body}.{signature}"


BAD_TOKENS = {
    "expired": lambda i, r: i.token(aud=r, scope=USE, exp=int(time.time()) - 120),
    "not yet valid": lambda i, r: i.token(aud=r, scope=USE, nbf=int(time.time()) + 600),
    "wrong audience": lambda i, r: i.token(aud="https://other.example/mcp", scope=USE),
    "no audience": lambda i, r: i.token(aud=None, scope=USE),
    "wrong issuer": lambda i, r: i.token(aud=r, scope=USE, iss="https://evil.example"),
    "tampered signature": lambda i, r: _tampered(i.token(aud=r, scope=USE)),
    "tampered claims": lambda i, r: _forged_claims(i.token(aud=r), scope=USE),
    "unknown key id": lambda i, r: i.token(
        aud=r, scope=USE, key=ECKey.generate_key("P-256", parameters={"kid": "k2"})
    ),
    "unsigned": lambda i, r: _unsigned(i.claims(aud=r, scope=USE)),
    "not a JWT": lambda i, r: "opaque-token-value",
}


@pytest.mark.parametrize("case", sorted(BAD_TOKENS))
async def test_an_invalid_token_is_refused_with_invalid_token(case: str) -> None:
    async with protected() as (issuer, raw, _server):
        good = issuer.token(aud=raw.url, scope=USE)
        assert (await post(raw, call(raw, "whoami"), good)).status_code == 200
        bad = BAD_TOKENS[case](issuer, raw.url)
        response = await post(raw, call(raw, "whoami"), bad)
        assert response.status_code == 401
        params = challenge(response)
        assert params["error"] == "invalid_token"
        assert params["scope"] == USE
        assert params["resource_metadata"].endswith("/oauth-protected-resource/mcp")
        assert response.json()["error"] == "invalid_token"


async def test_a_token_signed_with_a_rotated_key_is_accepted_after_one_refetch() -> (
    None
):
    async with issuing() as issuer:
        verifier = JwtVerifier(
            issuer=issuer.url, jwks_url=f"{issuer.url}/jwks", jwks_refresh=0
        )
        resource = "http://127.0.0.1:1/mcp"
        try:
            await verifier.verify(issuer.token(aud=resource), resource=resource)
            assert issuer.jwks_fetches == 1
            issuer.key = ECKey.generate_key("P-256", parameters={"kid": "key-2"})
            rotated = issuer.token(aud=resource)
            principal = await verifier.verify(rotated, resource=resource)
        finally:
            await verifier.aclose()  # its HTTP client (a server closes it itself)
        assert principal.subject == "alice"
        assert issuer.jwks_fetches == 2


async def test_a_tool_scope_the_token_lacks_is_a_403_naming_every_scope_needed() -> (
    None
):
    async with protected() as (issuer, raw, _server):
        narrow = issuer.token(aud=raw.url, scope=USE)
        body = call(raw, "write_note", arguments={"text": "hi"})
        response = await post(raw, body, narrow)
        assert response.status_code == 403
        params = challenge(response)
        assert params["error"] == "insufficient_scope"
        assert params["scope"] == f"{USE} notes:write"
        assert params["resource_metadata"].endswith("/oauth-protected-resource/mcp")
        wide = issuer.token(aud=raw.url, scope=f"{USE} notes:write")
        response = await post(raw, body, wide)
        assert response.status_code == 200
        assert raw.checked_body(response)["result"]["content"][0]["text"] == (
            "alice wrote hi"
        )


async def test_the_server_scope_is_needed_for_every_request() -> None:
    async with protected() as (issuer, raw, _server):
        token = issuer.token(aud=raw.url, scope="notes:write")
        body = raw.request(2, "tools/list", {"_meta": ENVELOPE})
        response = await post(raw, body, token)
        assert response.status_code == 403
        assert challenge(response)["scope"] == USE


async def test_one_caller_cannot_continue_another_callers_request_state() -> None:
    async with protected() as (issuer, raw, _server):
        alice = issuer.token(aud=raw.url, scope=USE)
        bob = issuer.token(aud=raw.url, scope=USE, sub="bob")
        first = await post(raw, call(raw, "ask_name"), alice)
        interim = raw.checked_body(first)["result"]
        assert interim["resultType"] == "input_required"
        answer = {"name": {"action": "accept", "content": {"name": "Zed"}}}
        retry = call(
            raw, "ask_name", inputResponses=answer, requestState=interim["requestState"]
        )
        refused = await post(raw, retry, bob)
        error = refused.json()["error"]
        assert error["code"] == -32602
        assert error["data"] == {"reason": "invalid_request_state"}
        accepted = await post(raw, retry, alice)
        assert raw.checked_body(accepted)["result"]["content"][0]["text"] == "hi Zed"


async def test_a_handshake_session_belongs_to_the_caller_who_opened_it() -> None:
    async with protected() as (issuer, raw, _server):
        alice = issuer.token(aud=raw.url, scope=USE)
        bob = issuer.token(aud=raw.url, scope=USE, sub="bob")
        raw.era = LEGACY
        raw.http.headers["authorization"] = f"Bearer {alice}"
        await raw.initialize()
        body = raw.request(3, "tools/call", {"name": "whoami", "arguments": {}})
        refused = await raw.post(body, authorization=f"Bearer {bob}")
        assert refused.status_code == 404
        accepted = await raw.post(body)
        assert accepted.status_code == 200
        text = raw.checked_body(accepted)["result"]["content"][0]["text"]
        assert text == "alice via test-client ['mcp:use']"


@contextlib.asynccontextmanager
async def introspected(**options: Any) -> AsyncIterator[tuple[Issuer, Raw]]:
    async with issuing() as issuer:
        verifier = IntrospectionVerifier(
            f"{issuer.url}/introspect",
            client_id="resource-server",
            client_secret="s3cret",
            issuer=issuer.url,
            **options,
        )
        async with protected(verifier) as (_unused, raw, _server):
            yield issuer, raw


def _answer(issuer: Issuer, raw: Raw, **changes: Any) -> dict[str, Any]:
    answer = {
        "active": True,
        "sub": "carol",
        "client_id": "cli",
        "aud": raw.url,
        "iss": issuer.url,
        "scope": USE,
        "exp": int(time.time()) + 60,
    }
    answer.update(changes)
    return {k: v for k, v in answer.items() if v is not None}


async def test_introspection_accepts_an_active_token_for_this_resource() -> None:
    async with introspected() as (issuer, raw):
        token = issuer.opaque(_answer(issuer, raw))
        response = await post(raw, call(raw, "whoami"), token)
        assert response.status_code == 200, response.text
        text = raw.checked_body(response)["result"]["content"][0]["text"]
        assert text == "carol via cli ['mcp:use']"
        (sent,) = issuer.introspections
        assert sent["token"] == token
        assert sent["token_type_hint"] == "access_token"
        assert sent["basic"] == "resource-server:s3cret"


@pytest.mark.parametrize(
    "changes",
    [
        {"active": False},
        {"aud": "https://other.example/mcp"},
        {"aud": None},
        {"iss": "https://evil.example"},
        {"exp": int(time.time()) - 600},
    ],
    ids=["inactive", "wrong audience", "no audience", "wrong issuer", "expired"],
)
async def test_introspection_refuses_what_the_answer_does_not_allow(
    changes: dict[str, Any],
) -> None:
    async with introspected() as (issuer, raw):
        token = issuer.opaque(_answer(issuer, raw, **changes))
        response = await post(raw, call(raw, "whoami"), token)
        assert response.status_code == 401
        assert challenge(response)["error"] == "invalid_token"


async def test_an_issuer_that_cannot_answer_fails_closed_with_503() -> None:
    async with introspected() as (issuer, raw):
        token = issuer.opaque(_answer(issuer, raw))
        issuer.down = True
        response = await post(raw, call(raw, "whoami"), token)
        assert response.status_code == 503


async def test_tokens_are_never_logged(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    async with protected() as (issuer, raw, _server):
        good = issuer.token(aud=raw.url, scope=USE)
        expired = issuer.token(aud=raw.url, scope=USE, exp=int(time.time()) - 999)
        assert (await post(raw, call(raw, "whoami"), good)).status_code == 200
        assert (await post(raw, call(raw, "whoami"), expired)).status_code == 401
    assert "expired" in caplog.text  # the reason is logged...
    for token in (good, expired):  # ...never the token, nor its signature
        assert token not in caplog.text
        assert token.rsplit(".", 1)[1] not in caplog.text


async def test_keys_already_fetched_serve_while_the_issuer_is_down() -> None:
    async with issuing() as issuer:
        resource = "http://127.0.0.1:1/mcp"
        token = issuer.token(aud=resource)
        verifier, fresh = JwtVerifier(issuer=issuer.url, jwks_ttl=0), None
        try:
            await verifier.verify(token, resource=resource)
            issuer.down = True
            assert (await verifier.verify(token, resource=resource)).subject == "alice"
            fresh = JwtVerifier(issuer=issuer.url)
            with pytest.raises(httpx.HTTPError):  # no keys yet: answered 503
                await fresh.verify(token, resource=resource)
        finally:
            for used in (verifier, fresh):
                if used is not None:
                    await used.aclose()


@pytest.mark.parametrize(
    ("made", "message"),
    [
        (lambda: JwtVerifier(issuer="https://as.example", leeway=float("inf")),
         "leeway must be at most 3600 seconds"),
        (lambda: JwtVerifier(issuer="https://as.example", leeway=3601),
         "leeway must be at most 3600 seconds"),
        (lambda: JwtVerifier(issuer="https://as.example", jwks_ttl=1e300),
         "jwks_ttl must be at most 315360000 seconds"),
        (lambda: JwtVerifier(issuer="https://as.example", jwks_refresh=float("nan")),
         "jwks_refresh must not be negative, got nan"),
        (lambda: JwtVerifier(issuer="https://as.example", timeout=0),
         "timeout must be positive"),
        (lambda: IntrospectionVerifier("https://as.example/i", leeway=-1),
         "leeway must not be negative"),
        (lambda: IntrospectionVerifier("https://as.example/i",
                                       inactive_ttl=float("inf")),
         "inactive_ttl must be at most"),
    ],
    ids=["inf-leeway", "hour-leeway", "huge-ttl", "nan", "zero-timeout",
         "negative", "inf-inactive"],
)  # fmt: skip
def test_a_verifier_refuses_a_time_that_would_turn_a_check_off(
    made: Any, message: str
) -> None:
    # An infinite leeway would accept a token expired years ago: the settings
    # that guard access are refused when the verifier is made, never at a request.
    with pytest.raises(ValueError, match=message):
        made()


def test_a_verifier_accepts_the_edges_of_its_times() -> None:
    jwt = JwtVerifier(issuer="https://as.example", leeway=3600, jwks_ttl=0)
    assert (jwt.leeway, jwt.jwks_ttl) == (3600, 0)
    assert (
        IntrospectionVerifier("https://as.example/i", inactive_ttl=0).inactive_ttl == 0
    )

"""A small authorization server on loopback, for the OAuth tests of both sides.

``async with issuing() as issuer`` serves, on 127.0.0.1 (a free port), what a
resource server asks an issuer for: its metadata (RFC 8414, with
``jwks_uri``), its JWKS, and an RFC 7662 introspection endpoint. Its keys are
generated per issuer (EC P-256, with joserfc); :meth:`Issuer.token` signs JWT
access tokens with them, any claim overridable, and :meth:`Issuer.opaque`
registers an opaque token with the introspection answer to give for it.

For the client side it is also an authorization server that approves at
once: dynamic registration, the authorization endpoint (a redirect with the
code, ``state`` and ``iss``), and the token endpoint (authorization code with
PKCE checked, refresh tokens), issuing JWTs for the ``resource`` asked.
Everything a client sent is recorded for the tests to inspect. Nothing here
is a mock of our code: both sides talk to it over real HTTP.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import secrets
import time
from collections.abc import AsyncIterator
from functools import partial
from typing import Any
from urllib.parse import parse_qs, unquote, urlencode

import hypercorn.trio
import trio
from joserfc import jwt
from joserfc.jwk import ECKey

from bridge.transports.http import hypercorn_config


class Issuer:
    """Keys, tokens and the HTTP endpoints of one test issuer."""

    def __init__(self) -> None:
        self.key = ECKey.generate_key("P-256", parameters={"kid": "key-1"})
        self.url = ""  # set once served
        self.jwks_fetches = 0
        self.introspections: list[dict[str, Any]] = []  # what each POST sent
        self.opaque_tokens: dict[str, dict[str, Any]] = {}
        self.down = False  # answer 500 to everything
        self.subject = "alice"  # whom the authorization endpoint approves
        self.lifetime = 300  # expires_in of issued access tokens
        self.auth_methods = ["none", "client_secret_basic"]  # at the token endpoint
        self.bonus = ""  # a scope granted beyond those asked
        self.token_delay = 0.0  # seconds the token endpoint waits before answering
        self.registrations: list[dict[str, Any]] = []
        self.clients: dict[str, dict[str, Any]] = {}
        self.authorizations: list[dict[str, str]] = []
        self.token_requests: list[dict[str, str]] = []
        self.issued: list[str] = []  # every access and refresh token issued
        self._codes: dict[str, dict[str, str]] = {}
        self._refresh: dict[str, dict[str, str]] = {}

    def claims(self, **overrides: Any) -> dict[str, Any]:
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": self.url,
            "sub": "alice",
            "aud": "",  # set by the caller: the resource
            "iat": now,
            "exp": now + 300,
            "scope": "",
            "client_id": "test-client",
        }
        claims.update(overrides)
        return {k: v for k, v in claims.items() if v is not None}

    def token(
        self, *, key: ECKey | None = None, kid: str | None = None, **claims: Any
    ) -> str:
        signer = key or self.key
        header = {"alg": "ES256", "kid": kid or signer.kid or "key-1"}
        return jwt.encode(header, self.claims(**claims), signer)

    def opaque(self, answer: dict[str, Any]) -> str:
        token = secrets.token_urlsafe(24)
        self.opaque_tokens[token] = answer
        return token

    def metadata(self) -> dict[str, Any]:
        return {
            "issuer": self.url,
            "jwks_uri": f"{self.url}/jwks",
            "introspection_endpoint": f"{self.url}/introspect",
            "authorization_endpoint": f"{self.url}/authorize",
            "token_endpoint": f"{self.url}/token",
            "registration_endpoint": f"{self.url}/register",
            "response_types_supported": ["code"],
            "code_challenge_methods_supported": ["S256"],
            "authorization_response_iss_parameter_supported": True,
            "token_endpoint_auth_methods_supported": self.auth_methods,
        }

    # --- ASGI --------------------------------------------------------------------

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (event := await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        body = b""
        while True:
            event = await receive()
            body += event.get("body", b"")
            if not event.get("more_body"):
                break
        if scope["path"] == "/token" and self.token_delay:
            await trio.sleep(self.token_delay)
        headers = [(b"content-type", b"application/json")]
        if scope["path"] == "/authorize" and not self.down:
            status, answer = 302, {}
            headers.append((b"location", self._authorize(scope).encode()))
        else:
            status, answer = self._route(scope, body)
        payload = json.dumps(answer).encode()
        start = {"type": "http.response.start", "status": status, "headers": headers}
        await send(start)
        await send({"type": "http.response.body", "body": payload})

    def _route(self, scope: dict[str, Any], body: bytes) -> tuple[int, Any]:
        if self.down:
            return 500, {"error": "server_error"}
        path = scope["path"]
        if path == "/.well-known/oauth-authorization-server":
            return 200, self.metadata()
        if path == "/jwks":
            self.jwks_fetches += 1
            return 200, {"keys": [self.key.as_dict(private=False)]}
        if path == "/introspect" and scope["method"] == "POST":
            return 200, self._introspect(scope, body)
        if path == "/register" and scope["method"] == "POST":
            return 201, self._register(json.loads(body))
        if path == "/token" and scope["method"] == "POST":
            return self._token(_form(scope, body))
        return 404, {"error": "not_found"}

    def _register(self, request: dict[str, Any]) -> dict[str, Any]:
        self.registrations.append(request)
        client_id = f"client-{len(self.registrations)}"
        method = request.get("token_endpoint_auth_method", "none")
        client = {"client_id": client_id, "token_endpoint_auth_method": method}
        if method != "none":
            client["client_secret"] = secrets.token_urlsafe(16)
        self.clients[client_id] = client
        return client

    def _authorize(self, scope: dict[str, Any]) -> str:
        query = {k: v[0] for k, v in parse_qs(scope["query_string"].decode()).items()}
        self.authorizations.append(query)
        code = secrets.token_urlsafe(16)
        self._codes[code] = query
        answer = {"code": code, "state": query.get("state", ""), "iss": self.url}
        return f"{query['redirect_uri']}?{urlencode(answer)}"

    def _token(self, form: dict[str, str]) -> tuple[int, Any]:
        self.token_requests.append(form)
        client = self.clients.get(form.get("client_id", ""))
        if client is None or not _authenticated(client, form):
            return 401, {"error": "invalid_client"}
        if form.get("grant_type") == "refresh_token":
            grant = self._refresh.pop(form.get("refresh_token", ""), None)
        else:
            grant = self._codes.pop(form.get("code", ""), None)
            if grant is not None and not _pkce_ok(grant, form):
                return 400, {"error": "invalid_grant", "error_description": "PKCE"}
        if grant is None or form.get("resource") != grant.get("resource"):
            return 400, {"error": "invalid_grant"}
        return 200, self._grant(grant)

    def _grant(self, grant: dict[str, str]) -> dict[str, Any]:
        scope = " ".join(filter(None, [grant.get("scope", ""), self.bonus]))
        access = self.token(
            aud=grant["resource"], sub=self.subject, scope=scope,
            client_id=grant["client_id"], exp=int(time.time()) + self.lifetime,
        )  # fmt: skip
        refresh = secrets.token_urlsafe(24)
        self._refresh[refresh] = grant
        self.issued += [access, refresh]
        answer = {"access_token": access, "token_type": "Bearer", "scope": scope}
        return answer | {"expires_in": self.lifetime, "refresh_token": refresh}

    def _introspect(self, scope: dict[str, Any], body: bytes) -> dict[str, Any]:
        form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
        headers = {
            bytes(k).decode().lower(): bytes(v).decode() for k, v in scope["headers"]
        }
        basic = headers.get("authorization", "")
        if basic.startswith("Basic "):
            form["basic"] = base64.b64decode(basic[6:]).decode()
        self.introspections.append(form)
        return self.opaque_tokens.get(form.get("token", ""), {"active": False})


def _form(scope: dict[str, Any], body: bytes) -> dict[str, str]:
    """A posted form, with the HTTP Basic credentials (if any) as ``basic``."""
    form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
    headers = {
        bytes(k).decode().lower(): bytes(v).decode() for k, v in scope["headers"]
    }
    basic = headers.get("authorization", "")
    if basic.startswith("Basic "):
        form["basic"] = unquote(base64.b64decode(basic[6:]).decode())
    return form


def _authenticated(client: dict[str, Any], form: dict[str, str]) -> bool:
    secret = client.get("client_secret")
    if client["token_endpoint_auth_method"] == "client_secret_basic":
        return form.get("basic") == f"{client['client_id']}:{secret}"
    return "basic" not in form and "client_secret" not in form


def _pkce_ok(grant: dict[str, str], form: dict[str, str]) -> bool:
    verifier = form.get("code_verifier", "").encode()
    digest = base64.urlsafe_b64encode(hashlib.sha256(verifier).digest()).rstrip(b"=")
    return grant.get("code_challenge_method") == "S256" and (
        digest.decode() == grant.get("code_challenge")
    )


@contextlib.asynccontextmanager
async def issuing() -> AsyncIterator[Issuer]:
    """A fresh :class:`Issuer` served on loopback for the block."""
    issuer = Issuer()
    serve: Any = getattr(hypercorn.trio, "serve")  # noqa: B009
    async with trio.open_nursery() as nursery:
        config = hypercorn_config("127.0.0.1", 0)
        binds: Any = await nursery.start(partial(serve, issuer, config))
        issuer.url = binds[0]
        yield issuer
        nursery.cancel_scope.cancel()

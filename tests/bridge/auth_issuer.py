"""A small authorization server on loopback, for the resource-server tests.

``async with issuing() as issuer`` serves, on 127.0.0.1 (a free port), what a
resource server asks an issuer for: its metadata (RFC 8414, with
``jwks_uri``), its JWKS, and an RFC 7662 introspection endpoint. Its keys are
generated per issuer (EC P-256, with joserfc); :meth:`Issuer.token` signs JWT
access tokens with them, any claim overridable, and :meth:`Issuer.opaque`
registers an opaque token with the introspection answer to give for it.
Nothing here is a mock of our code: the server under test fetches and checks
over real HTTP.
"""

from __future__ import annotations

import base64
import contextlib
import json
import secrets
import time
from collections.abc import AsyncIterator
from functools import partial
from typing import Any
from urllib.parse import parse_qs

import hypercorn.trio
import trio
from joserfc import jwt
from joserfc.jwk import ECKey

from bridge.transports.http.app import hypercorn_config


class Issuer:
    """Keys, tokens and the HTTP endpoints of one test issuer."""

    def __init__(self) -> None:
        self.key = ECKey.generate_key("P-256", parameters={"kid": "key-1"})
        self.url = ""  # set once served
        self.jwks_fetches = 0
        self.introspections: list[dict[str, Any]] = []  # what each POST sent
        self.opaque_tokens: dict[str, dict[str, Any]] = {}
        self.down = False  # answer 500 to everything

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
            "response_types_supported": ["code"],
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
        status, answer = self._route(scope, body)
        payload = json.dumps(answer).encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", b"application/json")],
            }
        )
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
        return 404, {"error": "not_found"}

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

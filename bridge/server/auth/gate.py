"""The checks an HTTP request passes before any MCP, on a server with ``auth``.

In order (each failure is answered at once, with nothing of MCP run):

1. **A bearer token** in ``Authorization`` (RFC 6750 §2.1; never a query
   parameter). None: **401** with the challenge
   ``Bearer resource_metadata="…", scope="…"`` (the scopes every request needs,
   or else those the metadata advertises). A malformed header: **400**
   ``invalid_request``.
2. **The verifier accepts it for this resource** (:mod:`.verifiers`): else
   **401** ``error="invalid_token"`` with the reason in ``error_description``.
   A verifier that cannot decide (its issuer is down): **503**.
3. **The scopes**: the server's, plus, for ``tools/call``, the tool's
   (``@tool(scopes=...)``). Missing any: **403** ``error="insufficient_scope"``
   with every scope the operation needs in ``scope`` (RFC 6750 §3.1; one
   challenge, not one per missing scope).

:func:`authenticate` does 1 and 2 and gives the :class:`~runtime.Principal`;
:func:`authorize` does 3. What a refusal says is a :class:`Refusal`. Tokens
are never logged, and the reasons logged name no token.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from typing import Any, final

import attrs

from bridge.jsonrpc.messages import Message, Request
from bridge.transports.www_authenticate import format_challenge
from runtime.errors import InvalidToken
from runtime.principal import Principal
from runtime.tools import Tool

from .config import Auth

__all__ = ["Refusal", "authenticate", "authorize", "required_scopes"]

log = logging.getLogger("yieldmcp.auth")


@final
@attrs.frozen
class Refusal:
    """An HTTP answer refusing a request: status, challenge and JSON body."""

    status: int
    error: str
    description: str
    challenge: str | None = None

    def headers(self) -> list[tuple[str, str]]:
        return [] if self.challenge is None else [("www-authenticate", self.challenge)]

    def body(self) -> bytes:
        return json.dumps(
            {"error": self.error, "error_description": self.description}
        ).encode()


def _challenge(auth: Auth, scopes: Iterable[str], **extra: str) -> str:
    params: list[tuple[str, str]] = [("resource_metadata", auth.metadata_url())]
    wanted = " ".join(sorted(scopes))
    if wanted:
        params.append(("scope", wanted))
    params.extend(extra.items())
    return format_challenge("Bearer", params)


def _unauthorized(auth: Auth, description: str, *, invalid: bool) -> Refusal:
    scopes = auth.scopes or auth.advertised_scopes()
    extra = (
        {"error": "invalid_token", "error_description": description} if invalid else {}
    )
    challenge = _challenge(auth, scopes, **extra)
    return Refusal(401, "invalid_token", description, challenge)


def _bearer_token(headers: Mapping[str, str]) -> str | Refusal | None:
    value = headers.get("authorization")
    if value is None:
        return None
    scheme, _, token = value.strip().partition(" ")
    if scheme.lower() != "bearer":
        return None  # another scheme is no bearer token: challenge for one
    token = token.strip()
    if not token or " " in token or "," in token:
        return Refusal(400, "invalid_request", "malformed Authorization header")
    return token


async def authenticate(auth: Auth, headers: Mapping[str, str]) -> Principal | Refusal:
    """The principal whose token the request carries, or the refusal to send."""
    token = _bearer_token(headers)
    if token is None:
        return _unauthorized(auth, "this server needs a Bearer token", invalid=False)
    if isinstance(token, Refusal):
        return token
    try:
        principal = await auth.verifier.verify(token, resource=auth.resource)
    except InvalidToken as exc:
        log.info("refused an access token: %s", exc)
        return _unauthorized(auth, str(exc), invalid=True)
    except Exception as exc:
        # Fail closed: a verifier that cannot decide lets nothing through.
        log.warning("cannot check access tokens: %s: %s", type(exc).__name__, exc)
        return Refusal(503, "temporarily_unavailable", "cannot check the token now")
    if not principal.has_scopes(auth.scopes):
        return _insufficient(auth, auth.scopes)
    return principal


def required_scopes(
    auth: Auth, tools: Mapping[str, Tool[Any, Any]], message: Message
) -> frozenset[str]:
    """The scopes ``message`` needs: the server's, and a called tool's."""
    if not (isinstance(message, Request) and message.method == "tools/call"):
        return auth.scopes
    name: Any = (message.params or {}).get("name")
    tool = tools.get(name) if isinstance(name, str) else None
    return auth.scopes | tool.scopes if tool is not None else auth.scopes


def authorize(
    auth: Auth, principal: Principal, needed: frozenset[str]
) -> Refusal | None:
    """The 403 to send if ``principal`` lacks any of ``needed``, else None."""
    if principal.has_scopes(needed):
        return None
    return _insufficient(auth, needed)


def _insufficient(auth: Auth, needed: frozenset[str]) -> Refusal:
    description = "the token lacks a scope this request needs"
    challenge = _challenge(
        auth, needed, error="insufficient_scope", error_description=description
    )
    return Refusal(403, "insufficient_scope", description, challenge)

"""The token endpoint: an authorization code for tokens, a refresh token for
new ones, authenticating the way the client was registered.

Client authentication (RFC 6749 §2.3, OAuth 2.1 §2.4):

* ``none`` — a public client: ``client_id`` in the form, nothing else;
* ``client_secret_basic`` — HTTP Basic with the form-urlencoded id and secret;
* ``client_secret_post`` — ``client_id`` and ``client_secret`` in the form.

Every request names the resource (RFC 8707), exactly as its metadata
published it. A token answer must be ``Bearer``; its ``scope``, when absent,
is what was asked (RFC 6749 §5.1), and a refresh that returns no new refresh
token keeps the old one. Errors say what the server said (``error``,
``error_description``), never the code, token or secret sent.
"""

from __future__ import annotations

import base64
import time
from typing import Any, Final, cast
from urllib.parse import quote

import httpx
from pydantic import ValidationError

from runtime.errors import AuthorizationError

from .bounded import fetch
from .store import ClientInfo, Tokens
from .wire import SAID_CHARS, AuthServerMetadata, TokenAnswer

__all__ = ["authenticate_client", "exchange_code", "refresh"]

_MAX_ANSWER: Final = 64 * 1024


def authenticate_client(
    client: ClientInfo, form: dict[str, str]
) -> tuple[dict[str, str], dict[str, str]]:
    """``form`` and headers authenticating ``client`` its registered way."""
    form = {**form, "client_id": client.client_id}
    headers = {"Accept": "application/json"}
    secret = client.client_secret
    if client.auth_method == "client_secret_basic" and secret is not None:
        pair = f"{quote(client.client_id, safe='')}:{quote(secret, safe='')}"
        headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
    elif client.auth_method == "client_secret_post" and secret is not None:
        form["client_secret"] = secret
    return form, headers


async def _post(
    http: httpx.AsyncClient,
    metadata: AuthServerMetadata,
    client: ClientInfo,
    form: dict[str, str],
) -> TokenAnswer | tuple[int, dict[str, Any]]:
    """The token answer, or the status and error body that refused it."""
    body, headers = authenticate_client(client, form)
    url = metadata.token_endpoint
    try:
        response = await fetch(
            http, "POST", url, limit=_MAX_ANSWER, data=body, headers=headers
        )
    except httpx.HTTPError as exc:
        raise AuthorizationError(
            f"cannot reach the token endpoint {url}: {exc}"
        ) from None
    content = response.content
    if response.status_code != 200:
        try:
            error: Any = response.json()
        except (ValueError, RecursionError):  # no JSON, or nested too deep
            error = {}
        return response.status_code, cast(dict[str, Any], error) if isinstance(
            error, dict
        ) else {}
    try:
        answer = TokenAnswer.model_validate_json(content)
    except ValidationError:
        raise AuthorizationError(
            f"the token endpoint {url} sent no usable token"
        ) from None
    if answer.token_type.lower() != "bearer":
        raise AuthorizationError(
            f"the token endpoint {url} issued a {answer.token_type!r} token; "
            f"only Bearer tokens are supported"
        )
    return answer


def _tokens(
    answer: TokenAnswer, issuer: str, asked: str | None, previous: Tokens | None
) -> Tokens:
    expires = None if answer.expires_in is None else time.time() + answer.expires_in
    return Tokens(
        access_token=answer.access_token,
        issuer=issuer,
        refresh_token=answer.refresh_token
        or (previous.refresh_token if previous else None),
        expires_at=expires,
        scope=answer.scope if answer.scope is not None else asked,
    )


def _refused(what: str, status: int, error: dict[str, Any]) -> AuthorizationError:
    code = str(error.get("error") or f"HTTP {status}")[:100]
    description = str(error.get("error_description") or "")[:SAID_CHARS]
    return AuthorizationError(
        f"the token endpoint refused {what}: {code}"
        + (f" ({description})" if description else "")
    )


async def exchange_code(
    http: httpx.AsyncClient,
    metadata: AuthServerMetadata,
    client: ClientInfo,
    *,
    code: str,
    verifier: str,
    redirect_uri: str,
    resource: str,
    scope: str | None,
) -> Tokens:
    """Tokens for an authorization code (with its PKCE verifier).

    Raises:
        AuthorizationError: the endpoint refused, or sent no Bearer token.
    """
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": redirect_uri,
        "code_verifier": verifier,
        "resource": resource,
    }
    answer = await _post(http, metadata, client, form)
    if isinstance(answer, tuple):
        raise _refused("the authorization code", *answer)
    return _tokens(answer, metadata.issuer, scope, None)


async def refresh(
    http: httpx.AsyncClient,
    metadata: AuthServerMetadata,
    client: ClientInfo,
    tokens: Tokens,
    *,
    resource: str,
) -> Tokens | None:
    """New tokens for ``tokens``' refresh token; None if the server refused it
    (expired or revoked: authorize again).

    Raises:
        AuthorizationError: the endpoint could not be asked, or answered badly.
    """
    assert tokens.refresh_token is not None
    form = {
        "grant_type": "refresh_token",
        "refresh_token": tokens.refresh_token,
        "resource": resource,
    }
    answer = await _post(http, metadata, client, form)
    if isinstance(answer, tuple):
        return None
    return _tokens(answer, metadata.issuer, tokens.scope, tokens)

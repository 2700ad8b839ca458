"""Which ``client_id`` to use with an authorization server, getting one if need be.

In the order the spec gives (client registration, 2026-07-28):

1. **Pre-registered** credentials the user gave (``OAuth(client_id=...)``). If
   they name the issuer they belong to and it is not this one, the flow stops
   rather than present them elsewhere.
2. **Stored** credentials for this issuer (from an earlier registration).
3. **A client ID metadata document** (CIMD): when the server says
   ``client_id_metadata_document_supported`` and the user gave the document's
   URL, that URL is the ``client_id`` (a public client).
4. **Dynamic client registration** (RFC 7591) at the server's
   ``registration_endpoint``, as a native application with the loopback
   redirect URI. The answer is checked: an authentication method this client
   cannot perform, or a secret method without a secret, is refused.

Credentials are bound to the issuer that made them (:class:`ClientInfo`), so
a server that moves to another authorization server gets a new registration.
"""

from __future__ import annotations

from typing import Any, Final, cast, get_args

import httpx
from pydantic import ValidationError

from runtime.errors import AuthorizationError

from .bounded import fetch
from .store import AuthMethod, ClientInfo
from .wire import AuthServerMetadata, Registered

__all__ = ["choose_auth_method", "register", "registration_body"]

_METHODS: Final = get_args(AuthMethod)
_SECRET_METHODS: Final = ("client_secret_basic", "client_secret_post")
_MAX_ANSWER: Final = 64 * 1024  # a registration answer, read at most


def choose_auth_method(metadata: AuthServerMetadata, *, secret: bool) -> AuthMethod:
    """How to authenticate at the token endpoint: with a secret, Basic unless
    the server offers only ``client_secret_post`` (RFC 8414's default is
    Basic); without one, ``none``."""
    if not secret:
        return "none"
    offered = metadata.token_endpoint_auth_methods_supported
    if (
        offered
        and "client_secret_basic" not in offered
        and "client_secret_post" in offered
    ):
        return "client_secret_post"
    return "client_secret_basic"


def _requested_method(metadata: AuthServerMetadata) -> AuthMethod:
    """What to ask for in a registration: a public client if the server takes
    one, else the secret method it offers."""
    offered = metadata.token_endpoint_auth_methods_supported or ["client_secret_basic"]
    methods: tuple[AuthMethod, ...] = _METHODS
    for method in methods:
        if method in offered:
            return method
    return "client_secret_basic"


def registration_body(
    metadata: AuthServerMetadata,
    *,
    client_name: str,
    redirect_uri: str,
    application_type: str,
) -> dict[str, Any]:
    """The RFC 7591 registration request."""
    return {
        "client_name": client_name,
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": _requested_method(metadata),
        "application_type": application_type,
    }


async def register(
    http: httpx.AsyncClient,
    metadata: AuthServerMetadata,
    *,
    client_name: str,
    redirect_uri: str,
    application_type: str,
) -> ClientInfo:
    """A new client, registered dynamically with ``metadata``'s server.

    Raises:
        AuthorizationError: no registration endpoint, a refusal, or an answer
            this client cannot use.
    """
    url = metadata.registration_endpoint
    if url is None:
        raise AuthorizationError(
            f"the authorization server {metadata.issuer} offers no dynamic "
            f"registration; give a pre-registered client id"
        )
    body = registration_body(
        metadata,
        client_name=client_name,
        redirect_uri=redirect_uri,
        application_type=application_type,
    )
    try:
        response = await fetch(
            http,
            "POST",
            url,
            limit=_MAX_ANSWER,
            json=body,
            headers={"Accept": "application/json"},
        )
    except httpx.HTTPError as exc:
        raise AuthorizationError(f"cannot reach {url} to register: {exc}") from None
    if response.status_code not in (200, 201):
        raise AuthorizationError(
            f"registration at {url} was refused: HTTP {response.status_code} "
            f"{response.text[:200]}"
        )
    try:
        registered = Registered.model_validate_json(response.content)
    except ValidationError:
        raise AuthorizationError(f"registration at {url} sent no client_id") from None
    return _usable(registered, body["token_endpoint_auth_method"], metadata.issuer)


def _usable(registered: Registered, asked: AuthMethod, issuer: str) -> ClientInfo:
    method: Any = registered.token_endpoint_auth_method or asked
    if method not in _METHODS:
        raise AuthorizationError(
            f"the authorization server registered this client for "
            f"{method!r} token endpoint authentication, which it cannot do"
        )
    if method in _SECRET_METHODS and registered.client_secret is None:
        raise AuthorizationError(
            f"the authorization server registered this client for {method!r} "
            f"but issued no client_secret"
        )
    return ClientInfo(
        client_id=registered.client_id,
        client_secret=registered.client_secret,
        auth_method=cast(AuthMethod, method),
        issuer=issuer,
    )

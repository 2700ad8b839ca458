"""The OAuth flow of one connection: send the token, and get one when refused.

:class:`OAuthSession` is what the HTTP transport sends every request through
(:meth:`OAuthSession.open`): the request goes out with the access token held
for the server (refreshed first if it has expired and can be), and its answer
decides what happens next:

* **401** — the token is missing, expired or refused. Discover again (the
  resource metadata may now name another authorization server: then the
  tokens and the registration of the old one are dropped, SEP-2352); try the
  refresh token once; else authorize anew (:meth:`OAuthSession._authorize`:
  only with a server that advertises PKCE with S256; register if need be,
  PKCE, the user's consent, ``state`` and ``iss`` checks, the code exchanged
  for tokens) with the scopes the challenge names, else
  those the metadata lists. Then send the request again.
* **403** ``insufficient_scope`` — step up: authorize again asking for what
  was asked before, what was granted and what the challenge names. Then send
  the request again.

Limits, per request: one refresh, one authorization and one step-up. A 403
naming scopes the token already has, or a refusal after re-authorizing, is an
:class:`~runtime.errors.AuthorizationError`: asking again would not help.
Concurrent requests refused together run the flow once (a lock; a request
that finds a newer token than the one it sent just retries).

Tokens, codes, secrets and PKCE verifiers are never logged.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
from collections.abc import AsyncGenerator, Mapping
from typing import final

import attrs
import httpx
import trio

from bridge.http_body import ACCEPT_ENCODING
from bridge.http_clients import new_client
from bridge.transports.www_authenticate import bearer_params
from runtime.errors import AuthorizationError

from .._http_wire import open_response
from . import discovery, registration, scopes
from .config import OAuth
from .redirect import Pkce, authorization_url, check_callback
from .store import ClientInfo, Tokens
from .tokens import exchange_code, refresh
from .wire import SAID_CHARS, AuthServerMetadata, ResourceMetadata

__all__ = ["OAuthSession", "oauth_session"]

log = logging.getLogger("yieldmcp.oauth")


@attrs.define
class _Attempt:
    """What one request has tried already (the per-request limits)."""

    refreshed: bool = False
    authorized: bool = False
    stepped_up: bool = False


@contextlib.asynccontextmanager
async def oauth_session(config: OAuth, server_url: str) -> AsyncGenerator[OAuthSession]:
    """The flow for one server, for the block, with its own HTTP client for
    the authorization server."""
    # The codings bridge.http_body decodes, bounded, whatever httpx would
    # ask for with brotli or zstandard installed (which it would refuse).
    headers = {"Accept-Encoding": ACCEPT_ENCODING}
    made = new_client(AuthorizationError, timeout=config.timeout, headers=headers)
    async with made as http:
        yield OAuthSession(config, server_url, http)


@final
class OAuthSession:
    """The OAuth state of one connection (see the module doc)."""

    def __init__(self, config: OAuth, server_url: str, http: httpx.AsyncClient) -> None:
        self.config = config
        self.server_url = server_url
        self.key = discovery.canonical_resource(server_url)  # the tokens' store key
        self.resource = self.key  # what requests name; the metadata's, once read
        self.resource_metadata: ResourceMetadata | None = None
        self.metadata: AuthServerMetadata | None = None
        self.tokens: Tokens | None = None
        self.asked: str | None = None  # the scope last asked for
        self.generation = 0  # counts the tokens obtained
        self._http = http
        self._loaded = False
        self._lock = trio.Lock()

    # --- what the transport calls ----------------------------------------------------

    @contextlib.asynccontextmanager
    async def open(
        self,
        http: httpx.AsyncClient,
        verb: str,
        url: str,
        headers: Mapping[str, str],
        content: bytes | None = None,
        *,
        interactive: bool = True,
    ) -> AsyncGenerator[httpx.Response]:
        """A streamed response to the request, authorized (see the module doc).
        Not ``interactive`` (a request the client can do without: the
        standalone stream), a refusal may refresh the token, and never asks
        the user to log in or to grant more scopes.

        Raises:
            AuthorizationError: the flow failed, or the server still refuses.
            BrokenSessionError: the server could not be reached.
        """
        attempt = _Attempt(authorized=not interactive, stepped_up=not interactive)
        while True:
            generation, authorization = await self._authorization()
            sent = {**headers, **authorization}
            async with open_response(http, verb, url, sent, content) as response:
                if response.status_code in (401, 403) and await self._challenged(
                    response, generation, attempt
                ):
                    continue
                yield response
                return

    async def _authorization(self) -> tuple[int, dict[str, str]]:
        async with self._lock:
            if not self._loaded:
                self.tokens = await self.config.store.load_tokens(self.key)
                self._loaded = True
            tokens = self.tokens
            margin = self.config.refresh_margin
            if tokens and tokens.expired(margin=margin) and tokens.refresh_token:
                await self._refresh()
            tokens = self.tokens
            if tokens is None:
                return self.generation, {}
            return self.generation, {"Authorization": f"Bearer {tokens.access_token}"}

    async def _challenged(
        self, response: httpx.Response, generation: int, attempt: _Attempt
    ) -> bool:
        """Whether to send the request again, after doing what the refusal asks."""
        header = ", ".join(response.headers.get_list("www-authenticate"))
        params = bearer_params(header) or {}
        async with self._lock:
            if generation != self.generation:
                return True  # another request got a new token meanwhile
            if response.status_code == 401:
                return await self._unauthorized(params, attempt)
            if params.get("error") != "insufficient_scope":
                return False  # a 403 that is not about scopes: not ours
            return await self._insufficient(params, attempt)

    # --- 401 -------------------------------------------------------------------------

    async def _unauthorized(self, params: Mapping[str, str], attempt: _Attempt) -> bool:
        await self._discover(params.get("resource_metadata"))
        tokens = self.tokens
        if not attempt.refreshed and tokens is not None and tokens.refresh_token:
            attempt.refreshed = True
            if await self._refresh():
                return True
        if attempt.authorized:
            # The server's words, cut as a token endpoint's are.
            why = (params.get("error_description") or "")[:SAID_CHARS] or "HTTP 401"
            raise AuthorizationError(
                f"{self.server_url} refused the token it was just given ({why})"
            )
        attempt.authorized = True
        metadata = self._known()
        supported = self.resource_metadata and self.resource_metadata.scopes_supported
        scope = scopes.initial(params.get("scope"), supported or None)
        scope = scopes.with_offline_access(scope, metadata.scopes_supported)
        await self._authorize(scope)
        return True

    async def _discover(self, challenged: str | None) -> None:
        http = self._http
        found = await discovery.resource_metadata(http, challenged, self.server_url)
        if found is None:  # 2025-03-26: the server is its own authorization server
            parts = httpx.URL(self.server_url)
            issuer = f"{parts.scheme}://{parts.netloc.decode()}"
        else:
            issuer = found.authorization_servers[0]
            self.resource = found.resource
        self.resource_metadata = found
        if self.tokens is not None and self.tokens.issuer != issuer:
            log.info("%s moved to authorization server %s", self.server_url, issuer)
            await self._forget_tokens()
        if self.metadata is None or self.metadata.issuer != issuer:
            self.metadata = await discovery.auth_server_metadata(http, issuer)

    # --- 403 insufficient_scope ------------------------------------------------------

    async def _insufficient(self, params: Mapping[str, str], attempt: _Attempt) -> bool:
        needed = params.get("scope")
        granted = self.tokens.scope if self.tokens is not None else None
        if attempt.stepped_up or (needed and scopes.covers(granted, needed)):
            raise AuthorizationError(
                f"{self.server_url} still refuses with insufficient_scope "
                f"(it asks for {_shown(needed)}; the token grants {_shown(granted)})"
            )
        attempt.stepped_up = True
        if self.metadata is None:
            await self._discover(params.get("resource_metadata"))
        metadata = self._known()
        scope = scopes.step_up(self.asked, granted, needed)
        await self._authorize(
            scopes.with_offline_access(scope, metadata.scopes_supported)
        )
        return True

    # --- getting tokens --------------------------------------------------------------

    def _known(self) -> AuthServerMetadata:
        assert self.metadata is not None, "discover first"
        return self.metadata

    async def _authorize(self, scope: str | None) -> None:
        """Authorization code with PKCE, through the user (see the module doc)."""
        metadata = self._known()
        # 2025-11-25: no code_challenge_methods_supported means no PKCE, and a
        # client MUST then refuse; only S256 is ever used.
        if "S256" not in (metadata.code_challenge_methods_supported or ()):
            raise AuthorizationError(
                f"the authorization server {metadata.issuer} does not advertise "
                "PKCE with S256 (code_challenge_methods_supported); refusing to "
                "authorize with it"
            )
        async with self.config.redirect.open(self._http) as agent:
            redirect_uri = agent.redirect_uri
            client = await self._client(metadata, redirect_uri)
            pkce, state = Pkce.new(), secrets.token_urlsafe(32)
            url = authorization_url(
                metadata, client_id=client.client_id, redirect_uri=redirect_uri,
                state=state, pkce=pkce, resource=self.resource, scope=scope,
            )  # fmt: skip
            log.info("authorizing at %s (scope: %s)", metadata.issuer, scope or "-")
            answer = await agent.authorize(url)
        code = check_callback(answer, state=state, metadata=metadata)
        tokens = await exchange_code(
            self._http, metadata, client, code=code, verifier=pkce.verifier,
            redirect_uri=redirect_uri, resource=self.resource, scope=scope,
        )  # fmt: skip
        self.asked = scope
        await self._keep(tokens)

    async def _client(
        self, metadata: AuthServerMetadata, redirect_uri: str
    ) -> ClientInfo:
        """The client to be with this server (:mod:`.registration`'s order)."""
        config, issuer = self.config, metadata.issuer
        if config.client_id is not None:
            if config.client_issuer is not None and config.client_issuer != issuer:
                raise AuthorizationError(
                    f"the pre-registered client belongs to {config.client_issuer}, "
                    f"but {self.server_url} now uses {issuer}"
                )
            method = registration.choose_auth_method(
                metadata, secret=config.client_secret is not None
            )
            return ClientInfo(
                client_id=config.client_id, client_secret=config.client_secret,
                auth_method=method, issuer=config.client_issuer,
            )  # fmt: skip
        stored = await config.store.load_client(issuer)
        if stored is not None and stored.usable_with(issuer):
            return stored
        url = config.client_metadata_url
        if url is not None and metadata.client_id_metadata_document_supported:
            return ClientInfo(client_id=url, auth_method="none", portable=True)
        registered = await registration.register(
            self._http, metadata, client_name=config.client_name,
            redirect_uri=redirect_uri, application_type=config.application_type,
        )  # fmt: skip
        await config.store.save_client(issuer, registered)
        log.info("registered with %s as a new client", issuer)
        return registered

    async def _refresh(self) -> bool:
        """Swap the refresh token for new tokens; False if that is not possible."""
        tokens, metadata = self.tokens, self.metadata
        if tokens is None or tokens.refresh_token is None or metadata is None:
            return False
        if tokens.issuer != metadata.issuer:
            return False
        client = await self._refresh_client(metadata)
        if client is None:
            return False
        renewed = await refresh(
            self._http, metadata, client, tokens, resource=self.resource
        )
        if renewed is None:
            log.info("the refresh token was refused; authorizing again")
            await self._forget_tokens()
            return False
        await self._keep(renewed)
        return True

    async def _refresh_client(self, metadata: AuthServerMetadata) -> ClientInfo | None:
        config = self.config
        if config.client_id is not None:
            method = registration.choose_auth_method(
                metadata, secret=config.client_secret is not None
            )
            return ClientInfo(
                client_id=config.client_id, client_secret=config.client_secret,
                auth_method=method,
            )  # fmt: skip
        stored = await config.store.load_client(metadata.issuer)
        if stored is not None:
            return stored
        url = config.client_metadata_url
        if url is not None and metadata.client_id_metadata_document_supported:
            return ClientInfo(client_id=url, auth_method="none", portable=True)
        return None

    async def _keep(self, tokens: Tokens) -> None:
        self.tokens = tokens
        self.generation += 1
        await self.config.store.save_tokens(self.key, tokens)

    async def _forget_tokens(self) -> None:
        self.tokens = None
        self.generation += 1
        await self.config.store.save_tokens(self.key, None)


def _shown(scope: str | None) -> str:
    """A scope a server named, quoted, cut at :data:`SAID_CHARS`."""
    if scope is None or len(scope) <= SAID_CHARS:
        return repr(scope)
    return repr(scope[:SAID_CHARS]) + "…"

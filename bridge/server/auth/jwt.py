"""Access tokens that are JWTs, checked against the issuer's published keys.

:class:`JwtVerifier` accepts a token only if every check passes, in order:

1. it is a JWS compact JWT whose ``alg`` is one of :attr:`algorithms` (never
   ``none``, never a symmetric algorithm unless listed);
2. its ``kid`` names a key in the issuer's JWKS (fetched over HTTP, cached for
   ``jwks_ttl`` seconds, fetched again, at most every ``jwks_refresh``
   seconds, when a token names an unknown key: that is key rotation), and the
   signature verifies with it;
3. ``iss`` equals the configured issuer, exactly;
4. ``aud`` names this resource (RFC 8707), exactly, or one of ``audience``;
5. ``exp`` is in the future and ``nbf`` (if any) in the past, give or take
   ``leeway`` seconds;
6. ``sub`` names the subject.

JOSE comes from joserfc (signature and key handling); this module only
decides what to accept. A JWKS that cannot be fetched again (the issuer is
down) leaves the keys already fetched in use, and is asked for again every
``jwks_refresh`` seconds; with no keys yet, the request is answered 503.
Without a ``jwks_url``, the JWKS location is read once from the issuer's
metadata (``jwks_uri``: RFC 8414, then OpenID Connect Discovery).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any, Final, cast, final

import httpx
import trio
from joserfc import jwt
from joserfc.errors import BadSignatureError, InvalidKeyIdError, JoseError
from joserfc.jwk import KeySet, KeySetSerialization

from runtime.errors import InvalidToken
from runtime.principal import Principal

from ._http import http_client
from .verifiers import (
    check_audience,
    check_times,
    principal_from_claims,
)

__all__ = ["DEFAULT_ALGORITHMS", "JwtVerifier", "metadata_urls"]

log = logging.getLogger("yieldmcp.auth")

DEFAULT_ALGORITHMS: Final = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
)
"""Asymmetric algorithms only: a resource server holds no signing secret."""

_MAX_JWKS: Final = 512 * 1024


def metadata_urls(issuer: str) -> list[str]:
    """Where an issuer's metadata may be: RFC 8414 (path inserted), then
    OpenID Connect Discovery (path inserted, then appended)."""
    scheme, _, rest = issuer.partition("://")
    host, slash, path = rest.partition("/")
    base, path = f"{scheme}://{host}", (slash + path).rstrip("/")
    return [
        f"{base}/.well-known/oauth-authorization-server{path}",
        f"{base}/.well-known/openid-configuration{path}",
        *([f"{base}{path}/.well-known/openid-configuration"] if path else []),
    ]


@final
class JwtVerifier:
    """Checks JWT access tokens (see the module doc for every check).

    Args:
        issuer: the ``iss`` tokens must carry (the authorization server).
        jwks_url: where the issuer's keys are; default: its metadata's
            ``jwks_uri``.
        audience: accepted ``aud`` values; default: the resource verified for.
        algorithms: accepted ``alg`` values.
        leeway: seconds of clock skew allowed on ``exp`` and ``nbf``.
        jwks_ttl: seconds a fetched JWKS is used before it is fetched again.
        jwks_refresh: at least this many seconds between fetches caused by
            unknown key ids (so forged ``kid``\\ s cannot hammer the issuer).
        timeout: seconds for each HTTP request to the issuer.
        http: the httpx client to use (default: one of its own).
        clock: seconds since the epoch.
    """

    def __init__(
        self,
        *,
        issuer: str,
        jwks_url: str | None = None,
        audience: str | Sequence[str] | None = None,
        algorithms: Sequence[str] = DEFAULT_ALGORITHMS,
        leeway: float = 60.0,
        jwks_ttl: float = 300.0,
        jwks_refresh: float = 30.0,
        timeout: float = 10.0,
        http: httpx.AsyncClient | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if "none" in algorithms:
            raise ValueError("JwtVerifier never accepts alg 'none'")
        self.issuer = issuer
        self.jwks_url = jwks_url
        self.audience = (audience,) if isinstance(audience, str) else audience
        self.algorithms = tuple(algorithms)
        self.leeway = leeway
        self.jwks_ttl = jwks_ttl
        self.jwks_refresh = jwks_refresh
        self.timeout = timeout
        self._http = http
        self.clock = clock
        self._keys: KeySet | None = None
        self._fetched = -float("inf")
        self._lock = trio.Lock()

    async def verify(self, token: str, *, resource: str) -> Principal:
        """The principal of a valid ``token`` (see the module doc).

        Raises:
            InvalidToken: the token fails a check (the message says which).
            httpx.HTTPError: the issuer's keys could not be fetched.
        """
        keys = await self._key_set(stale=False)
        try:
            decoded = self._decode(token, keys)
        except InvalidKeyIdError:
            keys = await self._key_set(stale=True)
            try:
                decoded = self._decode(token, keys)
            except InvalidKeyIdError:
                raise InvalidToken("the token is signed with an unknown key") from None
        claims: dict[str, Any] = decoded.claims
        if claims.get("iss") != self.issuer:
            raise InvalidToken("the token is from another issuer (iss)")
        check_audience(claims, self.audience or (resource,))
        check_times(claims, self.clock(), self.leeway, require_exp=True)
        return principal_from_claims(claims)

    def _decode(self, token: str, keys: KeySet) -> jwt.Token:
        if token.count(".") != 2:
            raise InvalidToken("the token is not a signed JWT")
        try:
            return jwt.decode(token, keys, algorithms=self.algorithms)
        except InvalidKeyIdError:
            raise
        except BadSignatureError:
            raise InvalidToken("the token's signature does not verify") from None
        except (JoseError, ValueError, KeyError) as exc:
            raise InvalidToken(
                f"the token is not an acceptable JWT ({type(exc).__name__})"
            ) from None

    async def _key_set(self, *, stale: bool) -> KeySet:
        """The cached JWKS; fetched when too old, or (``stale``) when a token
        named an unknown key and the last fetch is not too recent."""
        async with self._lock:
            age = self.clock() - self._fetched
            wanted = age >= self.jwks_ttl or (stale and age >= self.jwks_refresh)
            if self._keys is None or wanted:
                try:
                    self._keys = await self._fetch()
                except httpx.HTTPError as exc:
                    if self._keys is None:
                        raise
                    # Keep serving with the keys we have; ask again later.
                    log.warning("cannot refresh the JWKS, using the old keys: %s", exc)
                    self._fetched = self.clock() - self.jwks_ttl + self.jwks_refresh
                    return self._keys
                self._fetched = self.clock()
            return self._keys

    async def _fetch(self) -> KeySet:
        async with http_client(self._http, self.timeout) as http:
            if self.jwks_url is None:
                self.jwks_url = await _discover_jwks_url(http, self.issuer)
            response = await http.get(self.jwks_url)
            response.raise_for_status()
            if len(response.content) > _MAX_JWKS:
                raise httpx.DecodingError(f"the JWKS at {self.jwks_url} is too large")
            data: Any = response.json()
        document = cast(dict[str, Any], data) if isinstance(data, dict) else {}
        entries: Any = document.get("keys")
        if not isinstance(entries, list):
            raise httpx.DecodingError(f"{self.jwks_url} is not a JWKS")
        keys = [cast(dict[str, Any], k) for k in entries if isinstance(k, dict)]  # pyright: ignore[reportUnknownVariableType]
        usable = [key for key in keys if key.get("use") != "enc"]
        return KeySet.import_key_set(cast(KeySetSerialization, {"keys": usable}))


async def _discover_jwks_url(http: httpx.AsyncClient, issuer: str) -> str:
    for url in metadata_urls(issuer):
        response = await http.get(url)
        if response.status_code != 200:
            continue
        document: Any = response.json()
        if not isinstance(document, dict):
            continue
        found = cast(dict[str, Any], document)
        if found.get("issuer") == issuer and isinstance(found.get("jwks_uri"), str):
            return cast(str, found["jwks_uri"])
    raise httpx.DecodingError(f"the issuer {issuer} publishes no jwks_uri")

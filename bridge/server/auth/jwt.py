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
decides what to accept.

The keys, and how the issuer is kept from holding requests:

* **Fetched once, shared.** Every request is served from the keys at hand;
  when they are ``jwks_ttl`` old, one refresh runs (in the server's nursery
  when :meth:`JwtVerifier.refresh_in` gave one, else in the request that
  found it due) while every other request goes on with the current keys.
  With no keys yet, requests wait for the one fetch under way. A
  ``jwks_ttl`` of 0 asks for no cache at all: every request waits for a
  fetch (shared with the requests that arrive while it runs), so a key the
  issuer stops publishing is refused at the next request; a failed fetch
  still keeps the old keys, and the next try waits ``jwks_refresh``.
* **One deadline** (``timeout``) covers a whole fetch: the metadata (when
  there is no ``jwks_url``) and the JWKS, connecting and every read.
* **A failed fetch keeps the old keys**: an unreachable issuer, an error
  status, a body that is not a key set (a proxy's HTML error page, bad JSON,
  JSON with no ``keys``), or one over 512 KiB. Its time is recorded, so the
  next try is ``jwks_refresh`` seconds later, not at the next request, and
  it is logged once per ``jwks_refresh`` seconds. With no keys yet, the
  request is answered 503, and the keys are asked for again at most once a
  second.
* **Unknown key ids** (key rotation, or forgeries) fetch the keys again at
  most once per ``jwks_refresh`` seconds, whoever asks; the requests naming
  unknown kids wait for that one fetch, no one else does. A kid still
  unknown after a fetch is refused without another for ``unknown_kid_ttl``
  seconds (at most 4096 such kids are remembered).

Without a ``jwks_url``, the JWKS location is read from the issuer's
metadata (``jwks_uri``: RFC 8414, then OpenID Connect Discovery), once.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from typing import Any, Final, cast, final

import httpx
import trio
from joserfc import jwt
from joserfc.errors import BadSignatureError, InvalidKeyIdError, JoseError
from joserfc.jwk import KeySet, KeySetSerialization
from joserfc.jws import extract_compact

from runtime.errors import InvalidToken
from runtime.principal import Principal

from ._http import IssuerClient, IssuerError, fetch
from .verifiers import (
    check_audience,
    check_seconds,
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
_MAX_METADATA: Final = 256 * 1024
_NO_KEYS_RETRY: Final = 1.0  # seconds between fetches while there are no keys
_UNKNOWN_KIDS: Final = 4096  # kids remembered as unknown, at most


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
        jwks_ttl: seconds fetched keys are used before they are fetched
            again (0: fetched for every request, which waits for it).
        jwks_refresh: at least this many seconds between fetches caused by
            unknown key ids, or after a failed fetch (so forged ``kid``\\ s
            cannot hammer the issuer, nor a broken one be asked per request).
        unknown_kid_ttl: seconds a kid still unknown after a fetch is
            refused without another.
        timeout: seconds for a whole fetch of the keys (metadata included).
        http: the httpx client to use (default: one of its own, kept).
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
        unknown_kid_ttl: float = 60.0,
        timeout: float = 10.0,
        http: httpx.AsyncClient | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if "none" in algorithms:
            raise ValueError("JwtVerifier never accepts alg 'none'")
        check_seconds(
            {
                "leeway": leeway,
                "jwks_ttl": jwks_ttl,
                "jwks_refresh": jwks_refresh,
                "unknown_kid_ttl": unknown_kid_ttl,
                "timeout": timeout,
            }
        )
        self.issuer = issuer
        self.jwks_url = jwks_url
        self.audience = (audience,) if isinstance(audience, str) else audience
        self.algorithms = tuple(algorithms)
        self.leeway = leeway
        self.jwks_ttl = jwks_ttl
        self.jwks_refresh = jwks_refresh
        self.unknown_kid_ttl = unknown_kid_ttl
        self.timeout = timeout
        self.clock = clock
        self._http = IssuerClient(http, timeout)
        self._keys: KeySet | None = None
        self._kids: frozenset[str] = frozenset()
        self._fetched = -math.inf  # when the keys at hand were fetched
        self._tried = -math.inf  # when the last fetch ended, however it did
        self._failure = ""  # why the last fetch failed ("" if it did not)
        self._fetching: trio.Event | None = None  # set when the fetch under way ends
        self._unknown: dict[str, float] = {}  # kid -> refused until
        self._warned = -math.inf
        self._nursery: trio.Nursery | None = None

    def refresh_in(self, nursery: trio.Nursery | None) -> None:
        """Run the refreshes the keys' age makes due in ``nursery`` (the
        server's), so that no request waits for one; None: in the request
        that finds one due."""
        self._nursery = nursery

    async def aclose(self) -> None:
        """Close the HTTP client (a later fetch makes another)."""
        await self._http.aclose()

    async def verify(self, token: str, *, resource: str) -> Principal:
        """The principal of a valid ``token`` (see the module doc).

        Raises:
            InvalidToken: the token fails a check (the message says which).
            httpx.HTTPError: there are no keys, and they cannot be fetched.
        """
        kid = _kid_of(token)
        keys = await self._keys_for(kid)
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

    # --- the keys ------------------------------------------------------------------

    async def _keys_for(self, kid: str | None) -> KeySet:
        """The keys to check a token naming ``kid`` with (see the module doc)."""
        if self._keys is None:
            under_way = self._fetching is not None
            if under_way or self.clock() - self._tried >= _NO_KEYS_RETRY:
                await self._fetch_once()
            if self._keys is None:
                raise IssuerError(self._failure or "no keys from the issuer yet")
            return self._keys
        now = self.clock()
        if self.jwks_ttl <= 0 and self._due(now):
            await self._fetch_once()  # no cache: this request waits (or joins)
            now = self.clock()
        elif self._fetching is None and self._due(now):
            await self._refresh()
        if kid is None or kid in self._kids:
            return self._keys
        if self._unknown.get(kid, -math.inf) > now:
            raise InvalidToken("the token is signed with an unknown key")
        if self._fetching is not None or now - self._tried >= self.jwks_refresh:
            await self._fetch_once()  # the one fetch for every unknown kid
        if kid in self._kids:
            return self._keys
        self._remember_unknown(kid)
        raise InvalidToken("the token is signed with an unknown key")

    def _due(self, now: float) -> bool:
        """Whether the keys are old enough to fetch again (and, after a
        failed try, whether it is time for another)."""
        return now - self._fetched >= self.jwks_ttl and (
            not self._failure or now - self._tried >= self.jwks_refresh
        )

    async def _refresh(self) -> None:
        if self._nursery is not None:
            # Marked as under way now: one refresh, not one per request.
            self._fetching = started = trio.Event()
            try:
                self._nursery.start_soon(self._fetch_in_background, started)
            except RuntimeError:  # that server has stopped: do it here
                self._nursery, self._fetching = None, None
            else:
                return
        await self._fetch_once()

    async def _fetch_in_background(self, started: trio.Event) -> None:
        try:
            await self._fetch_once(started)
        except Exception:
            # Not the issuer's failure (those are handled): a bug, which must
            # not take the server's nursery down with it.
            log.exception("the JWKS refresh failed")
        finally:
            if self._fetching is started:  # (it failed before it began)
                self._fetching = None
                started.set()

    def _remember_unknown(self, kid: str) -> None:
        if len(self._unknown) >= _UNKNOWN_KIDS:
            del self._unknown[next(iter(self._unknown))]  # the oldest
        self._unknown[kid] = self.clock() + self.unknown_kid_ttl

    async def _fetch_once(self, started: trio.Event | None = None) -> None:
        """Fetch the keys, or wait for the fetch under way; never raises an
        issuer's failure (it is recorded, logged, and the old keys stay)."""
        if self._fetching is not None and self._fetching is not started:
            await self._fetching.wait()
            return
        self._fetching = done = trio.Event() if started is None else started
        try:
            keys = await self._fetch()
        except IssuerError as exc:
            self._failure = str(exc)
            self._warn(exc)
        else:
            self._keys, self._failure = keys, ""
            self._kids = frozenset(key.kid for key in keys.keys if key.kid is not None)
            self._fetched = self.clock()
        finally:
            self._tried = self.clock()
            self._fetching = None
            done.set()

    def _warn(self, exc: IssuerError) -> None:
        now = self.clock()
        if now - self._warned < self.jwks_refresh:
            return
        self._warned = now
        if self._keys is None:
            log.warning("cannot fetch the JWKS: %s", exc)
        else:
            log.warning(
                "cannot refresh the JWKS, using the keys fetched before: %s "
                "(trying again in %g s)",
                exc,
                self.jwks_refresh,
            )

    async def _fetch(self) -> KeySet:
        """The issuer's keys, within one deadline.

        Raises:
            IssuerError: not reachable, not in time, or not a key set.
        """
        with trio.move_on_after(self.timeout):
            return await self._fetch_now()
        where = self.jwks_url or f"the issuer {self.issuer}"
        raise IssuerError(f"the JWKS of {where} did not come within {self.timeout:g} s")

    async def _fetch_now(self) -> KeySet:
        http, seconds = self._http.get(), math.inf  # (the caller's deadline)
        if self.jwks_url is None:
            self.jwks_url = await _discover_jwks_url(http, self.issuer)
        url = self.jwks_url
        answer = await fetch(http, "GET", url, limit=_MAX_JWKS, seconds=seconds,
                             what="the JWKS")  # fmt: skip
        if answer.status != 200:
            raise IssuerError(f"the JWKS at {url} answered HTTP {answer.status}")
        entries: Any = answer.json_object("the JWKS").get("keys")
        if not isinstance(entries, list):
            raise IssuerError(f"{url} is not a JWKS (no keys)")
        keys = [cast(dict[str, Any], k) for k in entries if isinstance(k, dict)]  # pyright: ignore[reportUnknownVariableType]
        usable = [key for key in keys if key.get("use") != "enc"]
        try:
            return KeySet.import_key_set(cast(KeySetSerialization, {"keys": usable}))
        except (JoseError, ValueError, KeyError, TypeError) as exc:
            raise IssuerError(f"the JWKS at {url} has a bad key ({exc})") from None


def _kid_of(token: str) -> str | None:
    """The ``kid`` a compact JWS names in its header (None: none).

    Raises:
        InvalidToken: not a compact JWS.
    """
    if token.count(".") != 2:
        raise InvalidToken("the token is not a signed JWT")
    try:
        kid: Any = extract_compact(token.encode()).protected.get("kid")
    except (JoseError, ValueError, KeyError, TypeError):
        raise InvalidToken("the token is not an acceptable JWT (header)") from None
    return kid if isinstance(kid, str) else None


async def _discover_jwks_url(http: httpx.AsyncClient, issuer: str) -> str:
    for url in metadata_urls(issuer):
        answer = await fetch(http, "GET", url, limit=_MAX_METADATA,
                             seconds=math.inf, what="the metadata")  # fmt: skip
        if answer.status != 200:
            continue
        try:
            found = answer.json_object("the metadata")
        except IssuerError:
            continue
        if found.get("issuer") == issuer and isinstance(found.get("jwks_uri"), str):
            return cast(str, found["jwks_uri"])
    raise IssuerError(f"the issuer {issuer} publishes no jwks_uri")

"""Opaque access tokens, checked by asking the issuer (RFC 7662 introspection).

:class:`IntrospectionVerifier` POSTs the token to the authorization server's
introspection endpoint (authenticating as a client of it, when given
credentials) and accepts it only if the answer says, in order:

1. ``"active": true``;
2. ``iss`` equals the configured issuer, when one is configured;
3. ``aud`` names this resource (RFC 8707), or one of ``audience``; an answer
   with no ``aud`` is refused unless ``require_audience=False`` (some servers
   keep the audience to themselves: then the token is only as narrow as the
   issuer makes it);
4. ``exp`` (if any) is in the future and ``nbf`` (if any) in the past, give or
   take ``leeway`` seconds;
5. ``sub`` names the subject.

A token the answer accepts is asked about again at every request: nothing
positive is cached, so a revoked token stops working at once. A token it
refuses (inactive, or failing a check) is remembered as refused for
``inactive_ttl`` seconds (5 by default; at most 10,000 tokens, by digest),
so a flood of the same garbage costs the endpoint one question per token.

One HTTP client is kept (its connections reused; :meth:`aclose` closes it,
the server does when it stops), each exchange has one deadline
(``timeout``: connecting and every read), and the answer is read up to
64 KiB and no further. An endpoint that cannot be reached in time, or
answers anything but HTTP 200 with a JSON object under that size, raises
:class:`httpx.HTTPError`: the request is answered 503.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from typing import Any, Final, Literal, final

import httpx

from runtime.errors import InvalidToken
from runtime.principal import Principal

from ._http import IssuerClient, IssuerError, fetch
from .verifiers import (
    check_audience,
    check_seconds,
    check_times,
    principal_from_claims,
)

__all__ = ["IntrospectionVerifier"]

_MAX_ANSWER: Final = 64 * 1024
_REFUSED: Final = 10_000  # refused tokens remembered, at most


@final
class IntrospectionVerifier:
    """Checks tokens with an RFC 7662 endpoint (see the module doc).

    Args:
        endpoint: the introspection endpoint's URL.
        client_id, client_secret: this resource server's credentials at the
            authorization server, if it asks for them.
        auth_method: how to send them: ``client_secret_basic`` (HTTP Basic)
            or ``client_secret_post`` (in the form).
        issuer: the ``iss`` an answer must carry, if set.
        audience: accepted ``aud`` values; default: the resource verified for.
        require_audience: refuse an answer that names no audience.
        leeway: seconds of clock skew allowed on ``exp`` and ``nbf``.
        inactive_ttl: seconds a refused token is refused again without
            asking (0: ask every time).
        timeout: seconds for each exchange with the endpoint, whole.
        http: the httpx client to use (default: one of its own, kept).
        clock: seconds since the epoch.
    """

    def __init__(
        self,
        endpoint: str,
        *,
        client_id: str | None = None,
        client_secret: str | None = None,
        auth_method: Literal[
            "client_secret_basic", "client_secret_post"
        ] = "client_secret_basic",
        issuer: str | None = None,
        audience: str | Sequence[str] | None = None,
        require_audience: bool = True,
        leeway: float = 60.0,
        inactive_ttl: float = 5.0,
        timeout: float = 10.0,
        http: httpx.AsyncClient | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        check_seconds(
            {"leeway": leeway, "inactive_ttl": inactive_ttl, "timeout": timeout}
        )
        self.endpoint = endpoint
        self.client_id = client_id
        self._secret = client_secret
        self.auth_method = auth_method
        self.issuer = issuer
        self.audience = (audience,) if isinstance(audience, str) else audience
        self.require_audience = require_audience
        self.leeway = leeway
        self.inactive_ttl = inactive_ttl
        self.timeout = timeout
        self._http = IssuerClient(http, timeout)
        self.clock = clock
        self._refused: dict[bytes, tuple[float, str]] = {}  # digest -> until, why

    def __repr__(self) -> str:  # never the secret
        return f"IntrospectionVerifier({self.endpoint!r}, client_id={self.client_id!r})"

    async def aclose(self) -> None:
        """Close the HTTP client (a later request makes another)."""
        await self._http.aclose()

    async def verify(self, token: str, *, resource: str) -> Principal:
        """The principal of an active ``token`` valid for ``resource``.

        Raises:
            InvalidToken: the answer refuses the token (the message says why).
            httpx.HTTPError: the endpoint could not be asked.
        """
        digest = hashlib.sha256(f"{resource}\0{token}".encode()).digest()
        refused = self._refused.get(digest)
        now = self.clock()
        if refused is not None and refused[0] > now:
            raise InvalidToken(refused[1])
        claims = await self._introspect(token)
        try:
            return self._check(claims, resource)
        except InvalidToken as exc:
            if self.inactive_ttl > 0:
                self._remember(digest, str(exc))
            raise

    def _remember(self, digest: bytes, why: str) -> None:
        self._refused.pop(digest, None)
        if len(self._refused) >= _REFUSED:
            del self._refused[next(iter(self._refused))]  # the oldest
        self._refused[digest] = (self.clock() + self.inactive_ttl, why)

    def _check(self, claims: dict[str, Any], resource: str) -> Principal:
        if claims.get("active") is not True:
            raise InvalidToken("the token is not active")
        if self.issuer is not None and claims.get("iss") != self.issuer:
            raise InvalidToken("the token is from another issuer (iss)")
        if self.require_audience or "aud" in claims:
            check_audience(claims, self.audience or (resource,))
        check_times(claims, self.clock(), self.leeway, require_exp=False)
        return principal_from_claims(claims)

    async def _introspect(self, token: str) -> dict[str, Any]:
        form = {"token": token, "token_type_hint": "access_token"}
        auth: tuple[str, str] | None = None
        if self.client_id is not None and self._secret is not None:
            if self.auth_method == "client_secret_basic":
                auth = (self.client_id, self._secret)
            else:
                form |= {"client_id": self.client_id, "client_secret": self._secret}
        elif self.client_id is not None:
            form["client_id"] = self.client_id
        answer = await fetch(
            self._http.get(), "POST", self.endpoint, limit=_MAX_ANSWER,
            seconds=self.timeout, what="the introspection answer", data=form,
            auth=auth or httpx.USE_CLIENT_DEFAULT,
        )  # fmt: skip
        if answer.status != 200:
            raise IssuerError(
                f"introspection at {self.endpoint} answered HTTP {answer.status}"
            )
        return answer.json_object("the introspection answer")

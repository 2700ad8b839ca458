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

Each request asks the endpoint; nothing is cached (a revoked token stops
working at once). An endpoint that cannot be reached, or answers anything but
HTTP 200 with a JSON object, raises :class:`httpx.HTTPError`: the request is
answered 503.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, Final, Literal, cast, final

import httpx

from runtime.errors import InvalidToken
from runtime.principal import Principal

from ._http import http_client
from .verifiers import check_audience, check_times, principal_from_claims

__all__ = ["IntrospectionVerifier"]

_MAX_ANSWER: Final = 64 * 1024


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
        timeout: seconds for each request to the endpoint.
        http: the httpx client to use (default: one per request).
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
        timeout: float = 10.0,
        http: httpx.AsyncClient | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.endpoint = endpoint
        self.client_id = client_id
        self._secret = client_secret
        self.auth_method = auth_method
        self.issuer = issuer
        self.audience = (audience,) if isinstance(audience, str) else audience
        self.require_audience = require_audience
        self.leeway = leeway
        self.timeout = timeout
        self._http = http
        self.clock = clock

    def __repr__(self) -> str:  # never the secret
        return f"IntrospectionVerifier({self.endpoint!r}, client_id={self.client_id!r})"

    async def verify(self, token: str, *, resource: str) -> Principal:
        """The principal of an active ``token`` valid for ``resource``.

        Raises:
            InvalidToken: the answer refuses the token (the message says why).
            httpx.HTTPError: the endpoint could not be asked.
        """
        claims = await self._introspect(token)
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
        headers = {"Accept": "application/json"}
        async with http_client(self._http, self.timeout) as http:
            response = await http.post(
                self.endpoint, data=form, auth=auth or httpx.USE_CLIENT_DEFAULT,
                headers=headers,
            )  # fmt: skip
        if response.status_code != 200:
            raise httpx.HTTPStatusError(
                f"introspection at {self.endpoint} answered HTTP "
                f"{response.status_code}",
                request=response.request,
                response=response,
            )
        if len(response.content) > _MAX_ANSWER:
            raise httpx.DecodingError("the introspection answer is too large")
        try:
            answer: Any = response.json()
        except ValueError:
            raise httpx.DecodingError("the introspection answer is not JSON") from None
        if not isinstance(answer, dict):
            raise httpx.DecodingError("the introspection answer is not an object")
        return cast(dict[str, Any], answer)

"""Who is calling: the :class:`Principal` an authorized request acts for.

A server that checks access tokens (``bridge.server.auth``) turns each valid
token into a principal, and a tool reads it as ``ctx.principal``: who the user
is (``subject`` at ``issuer``), which client acts for them, and the scopes the
token grants. It is plain data: this module knows nothing of tokens, HTTP or
OAuth, and a principal made by hand (in a test) is as good as one from a token.

Two principals are the same caller when their :attr:`Principal.identity` is
equal (issuer and subject); scopes, client and expiry may differ between two
tokens of one caller (a refreshed or stepped-up token).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, final

import attrs

__all__ = ["Principal", "scope_set"]


def scope_set(scopes: Iterable[str]) -> frozenset[str]:
    """``scopes`` as a set, each checked to be an OAuth scope token (RFC 6749
    §3.3: printable ASCII, no space, ``"`` or ``\\``). One string is one scope.

    Raises:
        ValueError: naming the first value that is not a scope token.
    """
    found = frozenset([scopes] if isinstance(scopes, str) else scopes)
    for scope in found:
        if not (
            isinstance(scope, str)
            and scope
            and all(0x21 <= ord(c) <= 0x7E and c not in '"\\' for c in scope)
        ):
            raise ValueError(f"{scope!r} is not an OAuth scope token")
    return found


def _scopes(value: Iterable[str]) -> frozenset[str]:
    return frozenset(value)


def _audience(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(value)


def _claims(value: Mapping[str, Any]) -> Mapping[str, Any]:
    return dict(value)


@final
@attrs.frozen(kw_only=True)
class Principal:
    """The caller of an authorized request.

    Attributes:
        subject: who the token was issued for (the ``sub`` claim).
        issuer: the authorization server that issued it (``iss``), if known.
        client_id: the OAuth client acting for the subject, if known.
        scopes: the scopes the token grants.
        audience: the resources the token is meant for (``aud``).
        expires_at: when the token expires (seconds since the epoch), if known.
        claims: every claim of the token (or introspection answer), as given.
    """

    subject: str
    issuer: str | None = None
    client_id: str | None = None
    scopes: frozenset[str] = attrs.field(default=frozenset(), converter=_scopes)
    audience: tuple[str, ...] = attrs.field(default=(), converter=_audience)
    expires_at: float | None = None
    claims: Mapping[str, Any] = attrs.field(
        factory=dict[str, Any], converter=_claims, eq=False, repr=False
    )

    @property
    def identity(self) -> str:
        """Who this is, as one string: the issuer and the subject.

        Requests, sealed states and tasks are bound to it, so that what one
        caller started no other can continue.
        """
        return json.dumps([self.issuer, self.subject], separators=(",", ":"))

    def has_scopes(self, required: Iterable[str]) -> bool:
        """Whether the token grants every scope in ``required``."""
        return self.scopes.issuperset(required)

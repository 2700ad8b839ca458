"""What a token verifier is, and what the built-in ones share.

A :class:`TokenVerifier` turns an access token into the
:class:`~runtime.Principal` it was issued for, or raises
:class:`~runtime.errors.InvalidToken` saying why not. It is told the resource
it verifies for, so that it can check the audience (RFC 8707): a token for
another server is refused, by default, by both built-in verifiers (a JWT
checked against a JWKS, :mod:`.jwt`; an introspection endpoint,
:mod:`.introspection`). Any other exception means the verifier could not
decide (its issuer is unreachable): the request is answered 503, never let
through.

The helpers here read the claims both built-ins understand: scopes from
``scope`` (space-separated) or ``scp`` (a list), audiences from ``aud``, and
the times ``exp``/``nbf`` with a leeway.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any, Final, Protocol, cast, runtime_checkable

from bridge.server.limits import MAX_SECONDS
from runtime.errors import InvalidToken
from runtime.principal import Principal

if TYPE_CHECKING:
    import trio

__all__ = [
    "MAX_LEEWAY",
    "KeepsClient",
    "RefreshesKeys",
    "TokenVerifier",
    "audiences",
    "check_audience",
    "check_seconds",
    "check_times",
    "principal_from_claims",
    "scopes_of",
]

MAX_LEEWAY: Final = 3600.0
"""The most clock skew a verifier allows on ``exp`` and ``nbf``: an hour.
Skew is seconds or minutes; a larger leeway would keep expired tokens
working (``inf``: for ever), so it is refused when the verifier is made."""


def _seconds_problem(
    value: float, *, at_most: float = MAX_SECONDS, zero: bool = True
) -> str | None:
    """What is wrong with ``value`` as a verifier's time setting, or None.

    A time is a number of seconds from 0 (or above 0 when ``zero`` is
    false) to ``at_most`` (ten years, :data:`bridge.server.limits.MAX_SECONDS`,
    unless said). ``inf`` and NaN are refused: "never" is not a setting of a
    check that guards access. The caller names the setting."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"must be a number of seconds, got {value!r}"
    if zero and not value >= 0:
        return f"must not be negative, got {value}"
    if not zero and not value > 0:
        return f"must be positive, got {value}"
    if not value <= at_most:
        return f"must be at most {at_most:.0f} seconds, got {value}"
    return None


def check_seconds(
    settings: Mapping[str, float], named: Callable[[str], str] = str
) -> None:
    """Raise if one of a verifier's time ``settings`` is out of range
    (:func:`_seconds_problem`; ``leeway`` at most :data:`MAX_LEEWAY`,
    ``timeout`` above 0). ``named`` gives the name a setting has in the
    message (the CLI's flag).

    Raises:
        ValueError: names the first setting out of range.
    """
    for name, value in settings.items():
        problem = _seconds_problem(
            value,
            at_most=MAX_LEEWAY if name == "leeway" else MAX_SECONDS,
            zero=name != "timeout",
        )
        if problem is not None:
            raise ValueError(f"{named(name)} {problem}")


@runtime_checkable
class KeepsClient(Protocol):
    """A verifier that keeps an HTTP client between requests (both
    built-ins): the server closes it when it stops serving."""

    async def aclose(self) -> None: ...


@runtime_checkable
class RefreshesKeys(Protocol):
    """A verifier whose keys get old (:class:`~.jwt.JwtVerifier`): the
    server gives it a nursery to refresh them in, so no request waits."""

    def refresh_in(self, nursery: trio.Nursery | None) -> None: ...


class TokenVerifier(Protocol):
    """Checks access tokens for a resource server."""

    async def verify(self, token: str, *, resource: str) -> Principal:
        """The principal ``token`` was issued for, if it is valid for
        ``resource``.

        Raises:
            InvalidToken: the token is not valid (the message says why).
        """
        ...


def scopes_of(claims: Mapping[str, Any]) -> frozenset[str]:
    """The scopes granted: ``scope`` (RFC 8693/9068) or ``scp`` (a list)."""
    value: Any = claims.get("scope", claims.get("scp"))
    if isinstance(value, str):
        return frozenset(value.split())
    if isinstance(value, list):
        items = cast(list[Any], value)
        return frozenset(s for s in items if isinstance(s, str))
    return frozenset()


def audiences(claims: Mapping[str, Any]) -> tuple[str, ...]:
    """``aud`` as a tuple (a string or a list of strings)."""
    value: Any = claims.get("aud")
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list):
        return tuple(a for a in cast(list[Any], value) if isinstance(a, str))
    return ()


def check_audience(claims: Mapping[str, Any], accepted: Collection[str]) -> None:
    """Raise unless ``aud`` names one of ``accepted`` (exactly: RFC 8707).

    Raises:
        InvalidToken: no audience, or none accepted.
    """
    named = audiences(claims)
    if not named:
        raise InvalidToken("the token names no audience (aud)")
    if not any(audience in accepted for audience in named):
        raise InvalidToken("the token is for another resource (aud)")


def _time(claims: Mapping[str, Any], name: str) -> float | None:
    value: Any = claims.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidToken(f"the token's {name} is not a time")
    if not math.isfinite(value):
        raise InvalidToken(f"the token's {name} is not a time")
    return float(value)


def check_times(
    claims: Mapping[str, Any], now: float, leeway: float, *, require_exp: bool
) -> None:
    """Raise unless ``now`` is within ``nbf``..``exp`` (give or take ``leeway``).

    Raises:
        InvalidToken: expired, not yet valid, or no ``exp`` when required.
    """
    expires = _time(claims, "exp")
    if expires is None and require_exp:
        raise InvalidToken("the token has no expiry (exp)")
    if expires is not None and expires <= now - leeway:
        raise InvalidToken("the token has expired")
    not_before = _time(claims, "nbf")
    if not_before is not None and not_before > now + leeway:
        raise InvalidToken("the token is not valid yet (nbf)")


def principal_from_claims(claims: Mapping[str, Any]) -> Principal:
    """The principal a checked token's claims describe.

    Raises:
        InvalidToken: no subject (``sub``).
    """
    subject: Any = claims.get("sub")
    if not isinstance(subject, str) or not subject:
        raise InvalidToken("the token names no subject (sub)")
    issuer: Any = claims.get("iss")
    client: Any = claims.get("client_id", claims.get("azp"))
    expires: Any = claims.get("exp")
    return Principal(
        subject=subject,
        issuer=issuer if isinstance(issuer, str) else None,
        client_id=client if isinstance(client, str) else None,
        scopes=scopes_of(claims),
        audience=audiences(claims),
        expires_at=float(expires) if isinstance(expires, int | float) else None,
        claims=claims,
    )

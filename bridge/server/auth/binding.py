"""What binds a call's saved state to the principal that made it.

A 2026-07-28 ``requestState`` (and, later, a task) carries a call's journal
between requests, and any request may bring it back. On a server that checks
access tokens, each one records who made it (:func:`bind`), and is accepted
only from the same caller (:func:`bound_to`): the same issuer and subject
(:attr:`runtime.Principal.identity`), whatever the token's scopes or expiry.
A state made without a principal is accepted only without one.

The record is a digest of the identity, not the identity: the state is sealed
anyway, and a digest keeps it short. Sans-IO; no secrets here (the sealing is
``bridge.server.state_token``'s).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, MutableMapping
from typing import Any, Final

from runtime.principal import Principal

__all__ = ["BINDING_KEY", "bind", "bound_to", "principal_binding"]

BINDING_KEY: Final = "who"
"""The key under which :func:`bind` records the principal in a payload."""


def principal_binding(principal: Principal | None) -> str | None:
    """The short, stable digest of ``principal``'s identity (None: no one)."""
    if principal is None:
        return None
    digest = hashlib.sha256(b"yieldmcp principal\0" + principal.identity.encode())
    return digest.hexdigest()[:32]


def bind(payload: MutableMapping[str, Any], principal: Principal | None) -> None:
    """Record in ``payload`` who it was made for (nothing for no principal)."""
    binding = principal_binding(principal)
    if binding is not None:
        payload[BINDING_KEY] = binding


def bound_to(payload: Mapping[str, Any], principal: Principal | None) -> bool:
    """Whether ``payload`` was made for ``principal`` (see the module doc)."""
    return payload.get(BINDING_KEY) == principal_binding(principal)

"""Which scopes to ask for (the MCP scope selection strategy). Sans-IO.

* **First authorization** (:func:`initial`): the ``scope`` of the 401's
  challenge if it has one; else every scope the resource metadata lists in
  ``scopes_supported``; else none (the ``scope`` parameter is left out).
* **Step-up** (:func:`step_up`): the union of what was asked before, what the
  token was granted, and what the 403's challenge names (SEP-2350), so that
  stepping up for one operation keeps the others working.
* **Refresh tokens** (:func:`with_offline_access`): ``offline_access`` is
  added when the authorization server lists it in ``scopes_supported``, and
  only then (SEP-2207); never when no scope is asked at all.

Scopes are space-separated strings on the wire; here they stay in order,
without duplicates.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["covers", "initial", "step_up", "union", "with_offline_access"]

OFFLINE: str = "offline_access"


def union(*scopes: str | None) -> str | None:
    """The scopes of every argument, in order of first appearance."""
    seen: dict[str, None] = {}
    for value in scopes:
        for scope in (value or "").split():
            seen.setdefault(scope)
    return " ".join(seen) or None


def initial(challenged: str | None, supported: Sequence[str] | None) -> str | None:
    """What to ask for first (see the module doc)."""
    if challenged is not None and challenged.strip():
        return union(challenged)
    if supported:
        return union(" ".join(supported))
    return None


def step_up(
    asked: str | None, granted: str | None, challenged: str | None
) -> str | None:
    """What to ask for when a 403 names ``challenged`` (see the module doc)."""
    return union(asked, granted, challenged)


def with_offline_access(
    scope: str | None, server_scopes: Sequence[str] | None
) -> str | None:
    """``scope`` plus ``offline_access`` where the server offers it."""
    if scope is None or not server_scopes or OFFLINE not in server_scopes:
        return scope
    return union(scope, OFFLINE)


def covers(granted: str | None, needed: str | None) -> bool:
    """Whether ``granted`` includes every scope of ``needed``."""
    return set((needed or "").split()) <= set((granted or "").split())

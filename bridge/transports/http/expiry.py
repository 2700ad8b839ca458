"""When a 2025-11-25 HTTP session ends on its own: the session expiry policy.

A session is ended (its calls cancelled, their ``finally`` run, its streams
closed) when, with no HTTP response following any of its streams:

* it has made no request since ``initialize`` for
  ``HttpLimits.unused_session_timeout`` seconds (a client that opened it and
  went away, or one opening sessions by the thousand);
* it has calls in flight but no stream and no request for
  ``HttpLimits.orphan_timeout`` seconds: its client went away (killed, its
  connection dropped) and did not resume, so nobody can answer its calls;
* it has made no request for ``HttpLimits.session_idle_timeout`` seconds.

An open stream keeps a session alive: its heartbeats and maximum lifetime
(``legacy``) notice a dead peer. So does a POST waiting for its answer on
its open connection (:meth:`HttpSession.followed`): a client need not hold
a GET stream for a call that is quiet for long. Which session to *evict*
when the table is full is :func:`evictable`'s answer: one with no call in
flight, the longest idle first.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Protocol, TypeVar

import trio

from .config import HttpLimits

__all__ = ["Expiring", "evictable", "expire"]


class Expiring(Protocol):
    """What the policy reads of a session (an ``HttpSession``)."""

    @property
    def limits(self) -> HttpLimits: ...
    @property
    def closed(self) -> bool: ...
    @property
    def used(self) -> bool:
        """Whether it made a request besides the handshake, or opened a GET."""
        ...

    @property
    def opening(self) -> bool:
        """Whether its ``initialize`` is still being answered."""
        ...

    @property
    def last_seen(self) -> float: ...
    @property
    def calls(self) -> int:
        """Requests of the client in flight."""
        ...

    @property
    def streaming(self) -> bool:
        """Whether an HTTP response follows one of its streams."""
        ...

    def close(self) -> None: ...


S = TypeVar("S", bound=Expiring)

log = logging.getLogger("yieldmcp.http")


def _deadline(http: Expiring) -> tuple[str, float] | None:
    """Why and when ``http`` expires if nothing happens (None: it cannot)."""
    limits = http.limits
    if http.streaming:
        return None
    if not http.used:
        wait = min(limits.unused_session_timeout, limits.session_idle_timeout)
        return "made no request", http.last_seen + wait
    if http.calls:
        wait = min(limits.orphan_timeout, limits.session_idle_timeout)
        return "calls without a client", http.last_seen + wait
    return "idle", http.last_seen + limits.session_idle_timeout


async def expire(http: Expiring) -> None:
    """End ``http`` when :func:`_deadline` says (run in the session's nursery)."""
    limits = http.limits
    # How often to look again: the state can change to a shorter deadline
    # (a stream ends while calls are in flight) without waking this task.
    shortest = min(
        limits.orphan_timeout,
        limits.unused_session_timeout,
        limits.session_idle_timeout,
    )
    tick = max(0.05, shortest / 2)
    while True:
        due = _deadline(http)
        now = trio.current_time()
        if due is not None and due[1] <= now:
            log.info("HTTP session ended: %s for too long", due[0])
            http.close()
            return
        wait = tick if due is None else min(tick, due[1] - now)
        await trio.sleep(wait)


def evictable(sessions: Iterable[S]) -> S | None:
    """The session to end to make room for a new one: one with no call in
    flight and not being opened, preferring those with no open stream, then
    the longest idle. None when every session has calls.

    Not unused sessions first: a client opening sessions and making one
    request in each would then evict every session another client opened,
    before its first request. The newest session is the last to go, and a
    session opened and left is the longest idle soon enough (and expires
    after ``unused_session_timeout`` anyway)."""
    best: S | None = None
    best_key = (True, 0.0)
    for http in sessions:
        if http.closed or http.calls or http.opening:
            continue
        key = (http.streaming, http.last_seen)
        if best is None or key < best_key:
            best, best_key = http, key
    return best

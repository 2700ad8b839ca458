"""The streams of a 2025-11-25 HTTP session, and the responses that follow them.

A *stream* (:class:`Stream`) is where one request's traffic goes (or, for
stream ``0``, what belongs to no request): which HTTP response may write it
now, and where the tool released it. A :class:`Follower` is one HTTP
response's claim on a stream; the newest follower writes, an older one leaves
(:data:`StreamEnd.SUPERSEDED`). Plain records: the session
(:mod:`.legacy_session`) moves them.
"""

from __future__ import annotations

from typing import Final, final

import attrs
import trio

from bridge.jsonrpc.messages import RequestId

__all__ = [
    "FIRST_PRIMING_VERSION",
    "Follower",
    "Stream",
    "StreamEnd",
    "supports_priming",
]

FIRST_PRIMING_VERSION: Final = "2025-11-25"
"""Clients on this version or later get priming events and may be released."""


@attrs.define(eq=False)
class Stream:
    number: int
    request_id: RequestId | None
    resumable: bool
    changed: trio.Event = attrs.field(factory=trio.Event)
    follower: int = 0  # the number of the follower entitled to write
    # follower number -> store position when the tool released the stream:
    # that follower writes the events up to there, then ends.
    releases: dict[int, int] = attrs.field(factory=dict[int, int])
    active: int = 0  # responses following it, or waiting to (see HttpSession.followed)
    # With a store: whether the call on this stream is written down, so that
    # another process can take it on (its resumption point may be shown).
    recorded: bool = False
    # The request's body (None: taken on from the store), so a POST of the
    # same request again is told from another request reusing its id.
    body: bytes | None = None
    start: int = 0  # the seq its events come after (its priming id's)

    def poke(self) -> None:
        old, self.changed = self.changed, trio.Event()
        old.set()


@final
class StreamEnd:
    """Why :meth:`HttpSession.follow` returned (string constants)."""

    FINAL = "final"  # the response was written
    RELEASED = "released"  # the tool released the stream; the client resumes
    SUPERSEDED = "superseded"  # a newer follower took the stream over
    CLOSED = "closed"  # the session ended


def supports_priming(version: str) -> bool:
    return version >= FIRST_PRIMING_VERSION


@attrs.define(eq=False)
class Follower:
    """An HTTP response's claim on a stream: where it is, and its token."""

    stream: int
    after: int
    token: int  # which follower of the stream this is (the newest one writes)
    state: Stream | None = None

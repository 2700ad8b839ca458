"""Frames a session handles one piece at a time, in order, as they arrive.

A transport may push frames instead of being read (a
:class:`~bridge.jsonrpc.transport.PushTransport`: in memory, and each POST over
HTTP): each is handled as it arrives, in the sender's task — a response settles
its waiter, a request starts its handler — with no receive-loop task between
the two sessions. Frames that need awaiting (most notifications) queue behind,
in order, for the session's own task; so does everything after them until
that queue is empty. A transport can bound that queue by waiting on
:meth:`Feed.below` before it pushes.

All code that never waits (a frame's handling, a timer, a cancellation) runs
through :meth:`Feed.serially`: one that starts while another runs is run after
it, never inside it.
"""

from __future__ import annotations

import collections
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, final

import trio

from .messages import Ignored, Invalid, Message, parse

__all__ = ["Feed", "Parsed"]

T = TypeVar("T")
Parsed = Message | Invalid | Ignored


@final
class Feed:
    """The frames of one session, and the order its synchronous code runs in.

    Args:
        dispatch_now: handles a frame without waiting and returns True, or
            returns False for a frame that needs awaiting.
    """

    def __init__(self, dispatch_now: Callable[[Parsed], bool]) -> None:
        self._dispatch_now = dispatch_now
        self._backlog: collections.deque[Parsed | None] = collections.deque()
        self._backlogged = trio.Event()
        self._shrank = trio.Event()
        self._later: collections.deque[tuple[Callable[[Any], object], Any]] = (
            collections.deque()
        )
        self._busy = False
        self._failure: Exception | None = None
        self._closed = False

    def serially(self, fn: Callable[[T], object], arg: T) -> None:
        """Run ``fn(arg)``; what arrives meanwhile runs after it, in order."""
        if self._busy:
            self._later.append((fn, arg))
            return
        self._busy = True
        try:
            fn(arg)
            while self._later:
                later, later_arg = self._later.popleft()
                later(later_arg)
        finally:
            self._busy = False

    def push(self, data: bytes | None) -> None:
        """A frame (None: the end) from a push transport."""
        try:
            self.serially(self._arrive, data)
        except Exception as exc:
            # Our bug, not the sender's: fail this session, as a receive loop would.
            self._later.clear()
            self._failure = exc
            self._backlogged.set()

    def _arrive(self, data: bytes | None) -> None:
        message = None if data is None else parse(data)
        if self._backlog or message is None or not self._dispatch_now(message):
            self._backlog.append(message)
            self._backlogged.set()

    async def serve(self, dispatch: Callable[[Parsed], Awaitable[None]]) -> None:
        """Handle, in order, the pushed frames that need awaiting; until the end."""
        while True:
            while self._backlog:
                message = self._backlog[0]
                if message is None:
                    return
                await dispatch(message)
                self._backlog.popleft()
                self._shrank.set()
            if self._failure is not None:
                raise self._failure
            self._backlogged = trio.Event()
            await self._backlogged.wait()

    async def below(self, limit: int) -> None:
        """Wait until fewer than ``limit`` pushed frames wait for the session's
        task, or the session has ended."""
        await trio.lowlevel.checkpoint_if_cancelled()
        while len(self._backlog) >= limit and not self._closed:
            if self._shrank.is_set():  # one event for every waiter
                self._shrank = trio.Event()
            await self._shrank.wait()

    def close(self) -> None:
        """The session has ended: stop holding pushers back."""
        self._closed = True
        self._shrank.set()

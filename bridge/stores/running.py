"""Calling a blocking store from trio without blocking the event loop.

A blocking backend's calls go to a worker thread (``trio.to_thread``) under a
limiter, so a slow store slows the calls that wait on it and nothing else.
The in-memory store is called inline: it never waits on I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar, final

import trio

from .base import Document, JournalStore

__all__ = ["AsyncStore"]

_T = TypeVar("_T")


@final
class AsyncStore:
    """The async face of a :class:`~bridge.stores.base.JournalStore`."""

    def __init__(self, store: JournalStore, *, threads: int = 8) -> None:
        self.store = store
        self._limiter = trio.CapacityLimiter(threads)

    async def _run(self, fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        if not self.store.blocking:
            return fn(*args, **kwargs)
        return await trio.to_thread.run_sync(
            lambda: fn(*args, **kwargs), limiter=self._limiter
        )

    async def get(self, namespace: str, id: str) -> Document | None:
        return await self._run(self.store.get, namespace, id)

    async def put(
        self,
        namespace: str,
        id: str,
        value: Mapping[str, Any],
        *,
        expect: int | None = None,
        expires_at: float | None = None,
    ) -> int:
        return await self._run(
            self.store.put, namespace, id, value, expect=expect, expires_at=expires_at
        )

    async def delete(self, namespace: str, id: str) -> None:
        await self._run(self.store.delete, namespace, id)

    async def scan(self, namespace: str) -> list[tuple[str, Document]]:
        return await self._run(lambda: list(self.store.scan(namespace)))

    async def append(
        self,
        namespace: str,
        id: str,
        records: Sequence[Mapping[str, Any]],
        *,
        expires_at: float | None = None,
    ) -> int:
        return await self._run(
            self.store.append, namespace, id, records, expires_at=expires_at
        )

    async def read(
        self, namespace: str, id: str, start: int = 0
    ) -> list[Mapping[str, Any]]:
        return await self._run(self.store.read, namespace, id, start)

    async def wait(
        self, namespace: str, id: str, start: int, timeout: float
    ) -> list[Mapping[str, Any]]:
        """Wait for the stream to grow past ``start``, up to ``timeout`` seconds.

        Cancellable: a blocking backend's wait is done in short slices so a
        cancelled trio task never leaves a thread blocked for long.
        """
        if not self.store.blocking:
            return await _poll_inline(self.store, namespace, id, start, timeout)
        deadline = trio.current_time() + timeout
        while True:
            left = deadline - trio.current_time()
            piece = max(0.0, min(left, 1.0))
            found = await trio.to_thread.run_sync(
                self.store.wait, namespace, id, start, piece, limiter=self._limiter
            )
            if found or left <= piece:
                return found

    async def sweep(self, now: float) -> int:
        return await self._run(self.store.sweep, now)

    async def aclose(self) -> None:
        await self._run(self.store.close)


async def _poll_inline(
    store: JournalStore, namespace: str, id: str, start: int, timeout: float
) -> list[Mapping[str, Any]]:
    # The memory store's wait blocks a thread on a Condition; from trio, poll
    # instead (a cheap read) so the loop never blocks.
    deadline = trio.current_time() + timeout
    while True:
        found = store.read(namespace, id, start)
        if found or trio.current_time() >= deadline:
            return found
        await trio.sleep(min(0.02, max(0.0, deadline - trio.current_time())))

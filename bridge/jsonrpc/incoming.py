"""Incoming requests while they are handled, by the id the peer gave them.

Each is handled in a task (its ``trio.CancelScope``) or was taken on without
one (an :class:`Adopted` handle its handler keeps). Either can be cancelled:
by the peer's ``notifications/cancelled``, or because the peer left. A
``notifications/cancelled`` for ``"7"`` names request ``7`` (and ``7`` names
``"7"``); a boolean names none, since ``True`` would alias ``1``.

A transport that bounds what it holds for the peer (stdio's ``max_queued``)
is told how many replies are being computed (:meth:`Incoming.computing`):
the requests taken on, less those waiting on the peer, since their answers
must still be read.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, Protocol, final

import trio

from .messages import RequestId, coerce_id
from .tap import Tap

__all__ = ["Adopted", "Handle", "Incoming"]


class Adopted(Protocol):
    """An incoming request a handler took on without a task."""

    def cancel(self) -> None:
        """Stop: the peer cancelled it or left. Send nothing; release it."""
        ...


Handle = trio.CancelScope | Adopted
Serially = Callable[[Callable[[Any], object], Any], None]


def _cancel(handle: Adopted) -> None:
    handle.cancel()


@final
class Incoming:
    """The incoming requests of one session that are not answered yet.

    Args:
        serially: runs an adopted request's cancellation as the session runs
            a frame's handling, one piece at a time.
        transport: the session's transport; if it has ``request_over``, that is
            told each request id that is over, answered or not (an HTTP
            transport then frees the request's stream and its id at once).
        tap: the session's tap, told of a request over with no answer.
        asked: the session's requests to the peer awaiting a reply, each
            with the incoming request it serves (or None); if the transport
            has ``count_replies_in_flight``, it is given :meth:`computing`.
    """

    def __init__(
        self,
        serially: Serially,
        transport: object = None,
        tap: Tap | None = None,
        asked: Mapping[RequestId, RequestId | None] | None = None,
    ) -> None:
        self._tap = tap
        self._handles: dict[RequestId, Handle] = {}
        self._idle: trio.Event | None = None
        self._serially = serially
        self._on_release: Callable[[RequestId], object] | None = getattr(
            transport, "request_over", None
        )
        count = getattr(transport, "count_replies_in_flight", None)
        if count is not None:
            count(functools.partial(self.computing, {} if asked is None else asked))

    def __len__(self) -> int:
        return len(self._handles)

    def __contains__(self, request_id: RequestId) -> bool:
        return request_id in self._handles

    def computing(self, asked: Mapping[RequestId, RequestId | None]) -> int:
        """How many requests are being answered and not waiting on the peer
        (``asked``: our requests to it, each with the one it serves)."""
        taken = len(self._handles)
        if not taken or not asked:
            return taken
        handles = self._handles
        waiting = {served for served in asked.values() if served in handles}
        return taken - len(waiting)

    def get(self, request_id: RequestId) -> Handle | None:
        return self._handles.get(request_id)

    def add(self, request_id: RequestId, handle: Handle) -> None:
        self._handles[request_id] = handle

    def release(self, request_id: RequestId, handle: Handle) -> None:
        """Request ``request_id`` is over (answered or cancelled)."""
        if self._tap is not None:
            self._tap.answered(request_id, None)  # nothing if it was answered
        if self._handles.get(request_id) is handle:
            del self._handles[request_id]
            if self._on_release is not None:
                self._on_release(request_id)
        if not self._handles and self._idle is not None:
            self._idle.set()

    def named_by(self, peer_id: object) -> Handle | None:
        """The request a peer's ``requestId`` names, with ``"7"`` ≡ ``7``."""
        if isinstance(peer_id, bool) or not isinstance(peer_id, int | str):
            return None
        handle = self._handles.get(peer_id)
        if handle is None:
            alias = coerce_id(peer_id) if isinstance(peer_id, str) else str(peer_id)
            if alias is not None and alias != peer_id:
                handle = self._handles.get(alias)
        return handle

    def cancel(self, handle: Handle) -> None:
        if isinstance(handle, trio.CancelScope):
            handle.cancel()
        else:
            self._serially(_cancel, handle)

    def cancel_adopted(self) -> None:
        """Cancel every request with no task (trio cancels the others)."""
        for handle in list(self._handles.values()):
            if not isinstance(handle, trio.CancelScope):
                self.cancel(handle)

    async def until_idle(self, timeout: float) -> None:
        """Wait, at most ``timeout`` seconds, until no request is left."""
        if not self._handles:
            return
        # A fresh event: the session may have been idle before, between
        # earlier requests, and those times must not end the wait.
        self._idle = idle = trio.Event()
        with trio.move_on_after(timeout):
            await idle.wait()

"""Where the replies to a session's own requests land.

A request sent with ``Session.request`` is awaited by one task on a
:class:`Slot`; one sent with ``Session.request_nowait`` is settled through a
:class:`Callback` that calls its owner back. Both settle once.
"""

from __future__ import annotations

from typing import Any, Protocol, final

import trio

from .messages import RequestId
from .timers import Timer

__all__ = ["Callback", "Replies", "Slot"]


class Replies(Protocol):
    """Whoever sent requests with ``Session.request_nowait``."""

    def replied(
        self, request_id: RequestId, result: Any, error: BaseException | None
    ) -> None:
        """Request ``request_id`` is settled: ``result``, or else ``error``."""
        ...


@final
class Slot:
    """Where the reply to one of our requests lands; one task waits on it.

    The waiting task is parked directly (``wait_task_rescheduled``) rather than
    through a ``trio.Event``: a request has exactly one waiter, so an Event's
    parking lot is pure overhead on every request.
    """

    __slots__ = ("_waiter", "done", "error", "result")

    def __init__(self) -> None:
        self.done = False
        self.result: Any = None
        self.error: BaseException | None = None
        self._waiter: trio.lowlevel.Task | None = None

    def settle(self, result: Any = None, error: BaseException | None = None) -> None:
        if self.done:
            return
        self.done = True
        self.result, self.error = result, error
        waiter, self._waiter = self._waiter, None
        if waiter is not None:
            trio.lowlevel.reschedule(waiter)

    async def wait(self) -> None:
        """Until settled (a checkpoint, like ``trio.Event.wait``)."""
        if self.done:
            await trio.lowlevel.checkpoint()
            return
        self._waiter = trio.lowlevel.current_task()
        await trio.lowlevel.wait_task_rescheduled(self._abort)

    def _abort(self, _raise_cancel: Any) -> trio.lowlevel.Abort:
        self._waiter = None
        return trio.lowlevel.Abort.SUCCEEDED


@final
class Callback:
    """Where the reply to a request sent with ``request_nowait`` lands."""

    __slots__ = ("done", "method", "owner", "timer")

    def __init__(self, method: str, owner: Replies) -> None:
        self.done = False
        self.method = method
        self.owner = owner  # the object, not a bound method: one object less
        self.timer: Timer | None = None

    def close(self) -> bool:
        """Settle nothing from now on; True if it was still open."""
        if self.done:
            return False
        self.done = True
        if self.timer is not None:
            self.timer.cancel()
        return True

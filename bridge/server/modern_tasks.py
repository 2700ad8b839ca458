"""A 2026-07-28 request taken on with no task that reaches a step, in a task.

:func:`~bridge.server.modern.respond_now` answers a modern request in the task
that delivered it, since such a request never waits on the client; but a step
(``ctx.step``) waits on its own work. So at the first step the request goes on
in a task of its own (a trio system task), adopted by the session so that the
client's ``notifications/cancelled``, or its leaving, cancels it.

It does not decide anything about the request (:mod:`bridge.server.modern`).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, final

import trio

from bridge.jsonrpc.errors import error_data
from bridge.jsonrpc.messages import Request
from bridge.jsonrpc.session import Session

from . import modern as _modern
from .rounds import RunSteps, Wait

if TYPE_CHECKING:
    from .offer import Offer

__all__ = ["resume"]


@final
class _Resumed:
    """The session's handle on a request that went on in a task."""

    __slots__ = ("scope",)

    def __init__(self) -> None:
        self.scope = trio.CancelScope()

    def cancel(self) -> None:
        self.scope.cancel()


def resume(
    server: Offer,
    request: Request,
    session: Session,
    steps: _modern.Steps,
    batch: RunSteps | Wait,
) -> None:
    """Answer ``request`` from ``steps``, which waits on ``batch`` (steps, or a
    durable round's store I/O), in a task."""
    handle = _Resumed()
    session.adopt(request.id, handle)
    trio.lowlevel.spawn_system_task(
        _finish, server, request, session, steps, batch, handle
    )


async def _finish(
    server: Offer,
    request: Request,
    session: Session,
    steps: _modern.Steps,
    batch: RunSteps | Wait,
    handle: _Resumed,
) -> None:
    notify = functools.partial(session.notify, related=request.id)
    try:
        with handle.scope:
            try:
                result = await _modern.respond_rest(server, steps, batch, notify)
            except Exception as exc:
                session.respond_nowait(request.id, error=error_data(exc))
            else:
                session.respond_nowait(request.id, result)
    except Exception:
        pass
    finally:
        session.release(request.id, handle)

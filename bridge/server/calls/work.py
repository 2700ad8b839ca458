"""The work a call waits on besides its client: its steps, and the samples the
server's own model answers.

Every server driver performs a :class:`~runtime.lowlevel.RunStep` (and
an :class:`~runtime.call.commands.Ask` that :func:`~bridge.server.fallback.answer_here`
gives to the server's model) with :func:`perform`, in a task of a nursery its
owner closes (a session's, a round's, a task runner's): a sync step in a
worker thread under the caller's share of the server's step threads
(:class:`~bridge.server.limits.StepThreads`), an ``async def`` in the task,
a sample with the server's model under the sampling timeout.

Work a call starts runs with the call's context variables (:func:`within`),
so OpenTelemetry's context and any other the tool relies on follow it. It
does not decide when work starts or what its reply means (the call's machine
does).
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from runtime.lowlevel import AskPeer, RunStep, perform_step

from ..fallback import sample_here
from ..questions import CallScope

if TYPE_CHECKING:
    from ..offer import Offer

__all__ = ["perform", "within"]


async def perform(server: Offer, scope: CallScope, command: RunStep | AskPeer) -> Any:
    """The reply to ``command``: a step's, or the server's model's to a sample.

    Raises:
        Exception: what performing it raised (raised into the tool).
    """
    if isinstance(command, RunStep):
        return await perform_step(
            command.step,
            command.idempotency,
            limiter=server.step_threads.limiter(scope.caller),
        )
    assert server.sampler is not None
    return await sample_here(command.question, server.sampler, server.sampling_timeout)


async def within(
    context: contextvars.Context, fn: Callable[..., Awaitable[Any]], *args: Any
) -> None:
    """``await fn(*args)`` with the context variables of ``context`` (the
    call's, taken as it began: OpenTelemetry's current span among them), for
    work started later from another task's context (a session's receive
    path, handling a reply)."""
    for var, value in context.items():
        var.set(value)
    await fn(*args)

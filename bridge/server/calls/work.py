"""The work a call waits on besides its client: its steps, and the samples the
server's own model answers.

Every server driver performs a :class:`~runtime.lowlevel.RunStep` (and
an :class:`~runtime.call.commands.Ask` that :func:`~bridge.server.fallback.answer_here`
gives to the server's model) with :func:`perform`, in a task of a nursery its
owner closes (a session's, a round's, a task runner's): a sync step in a
worker thread under the caller's share of the server's step threads
(:class:`StepThreads`), an ``async def`` in the task,
a sample with the server's model under the sampling timeout.

Work a call starts runs with the call's context variables (:func:`within`),
so OpenTelemetry's context and any other the tool relies on follow it. It
does not decide when work starts or what its reply means (the call's machine
does).
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, cast, final

import trio

from runtime.lowlevel import AskPeer, RunStep, perform_step

from ..fallback import sample_here
from ..questions import CallScope

if TYPE_CHECKING:
    from ..offer import Offer

__all__ = ["StepThreads", "perform", "within"]


@final
class _Share:
    """One caller's share of the step threads and a thread of the whole pool,
    taken together and given back together when the thread ends (trio's
    limiter protocol): a step whose call was cancelled but whose function
    hangs keeps both, and so keeps only its caller waiting."""

    __slots__ = ("caller", "pool", "threads")

    def __init__(
        self, threads: StepThreads, caller: str, pool: trio.CapacityLimiter
    ) -> None:
        self.threads = threads
        self.caller = caller
        self.pool = pool

    async def acquire_on_behalf_of(self, borrower: object) -> None:
        await self.pool.acquire_on_behalf_of(borrower)
        try:
            await self.threads.total.acquire_on_behalf_of(borrower)
        except BaseException:
            self.pool.release_on_behalf_of(borrower)
            raise

    def release_on_behalf_of(self, borrower: object) -> None:
        try:
            self.threads.total.release_on_behalf_of(borrower)
        finally:
            self.pool.release_on_behalf_of(borrower)
            self.threads.idle(self.caller)


@final
class StepThreads:
    """The worker threads of a server's sync steps, shared fairly: at most
    ``total`` at once (``--step-threads``), of which one caller (a principal,
    or a 2025-11-25 session) holds at most ``per_caller``
    (``--step-threads-per-caller``). A caller's further steps wait for its
    own share, not for everyone's."""

    def __init__(self, total: int, per_caller: int) -> None:
        self.total = trio.CapacityLimiter(total)
        self.per_caller = per_caller
        self._callers: dict[str, trio.CapacityLimiter] = {}

    def resize(self, total: int, per_caller: int) -> None:
        self.total.total_tokens = total
        self.per_caller = per_caller
        for pool in self._callers.values():
            pool.total_tokens = per_caller

    def limiter(self, caller: str | None) -> trio.CapacityLimiter:
        """What a step of ``caller`` runs under (None: a caller the server
        cannot tell apart from others: the whole pool only)."""
        if caller is None:
            return self.total
        pool = self._callers.get(caller)
        if pool is None:
            pool = self._callers[caller] = trio.CapacityLimiter(self.per_caller)
        # trio takes any object with its limiter protocol.
        return cast(trio.CapacityLimiter, _Share(self, caller, pool))

    def idle(self, caller: str) -> None:
        """Forget a caller's share once none of its threads is left."""
        pool = self._callers.get(caller)
        if pool is not None and pool.borrowed_tokens == 0:
            del self._callers[caller]


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

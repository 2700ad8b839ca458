"""The trio driver: runs a stepper against an executor, concurrently.

The stepper decides; this module waits. It runs in two modes:

* **Serial** (how every call starts): while at most one peer question is
  outstanding and no branch timer runs, nothing can happen but that question's
  answer, so the driver asks it inline, in the caller's task: no nursery, no
  task per question, no channel. A sequential tool (most tools) never leaves
  this mode, and a parked call costs only its coroutine frames.
* **Concurrent** (from the first step that leaves two questions outstanding,
  or starts a timer, until the call ends): every pending peer question runs in
  its own cancel scope inside the call's nursery, so sibling branches can
  sample at the same time; a withdrawn question has its scope cancelled (the
  executor sees ``trio.Cancelled`` and, for MCP, tells the peer). A branch's
  time limit is a timer task that reports back on expiry.

Both modes handle events in the order the stepper produced them: notices are
delivered inline, local questions are answered inline, and peer questions are
asked after the notices of the same step. A step (``ctx.step``) is performed
as a peer question is, by :func:`~runtime.steps.runner.perform_step` instead of
the executor (whose ``step_stub``, if it has one, may replace its function):
a sync function in a worker thread under ``limiter``, an ``async def`` in the
question's task, so two steps in a branch run at the same time.

If the call itself is cancelled, every generator is closed first (their
``finally`` blocks run) and then ``trio.Cancelled`` propagates.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar, cast

import attrs
import trio

from ..effects.base import LocalQuestion, Notice, PeerQuestion, Question
from ..errors import InternalError
from ..principal import Principal
from ..steps.effect import Step
from ..steps.runner import perform_step, step_key
from ..tools.value import Tool
from .events import (
    Ask,
    Cancelled,
    Event,
    Finished,
    Raised,
    Returned,
    StartTimer,
    StopTimer,
    Tell,
    Withdraw,
)
from .journal import Journal
from .observe import performing
from .stepper import Stepper

__all__ = ["Executor", "run"]

R = TypeVar("R")


class Executor(Protocol):
    """What answers a tool's questions: an MCP peer, a provider, a script.

    ``perform`` may take as long as it needs and is cancelled (with
    ``trio.Cancelled``) when the question is withdrawn. ``notify`` delivers
    fire-and-forget notices in the order the tool produced them.
    """

    async def perform(self, key: str, question: PeerQuestion[Any]) -> Any: ...

    async def notify(self, key: str, notice: Notice) -> None: ...


@attrs.frozen
class _Done:
    key: str
    reply: Any = None
    error: BaseException | None = None


@attrs.frozen
class _Expired:
    key: str


async def run(
    tool: Tool[Any, R],
    arguments: Mapping[str, Any] | Any,
    executor: Executor,
    *,
    journal: Journal | None = None,
    clock: Callable[[], float] = time.time,
    rng: random.Random | None = None,
    principal: Principal | None = None,
    limiter: trio.CapacityLimiter | None = None,
) -> R:
    """Run ``tool`` with ``arguments``, answering its questions with ``executor``.

    Args:
        tool: the tool to run.
        arguments: a mapping validated by the tool's params model, or the model.
        executor: answers samples and elicitations, receives notices.
        journal: record every answer here; recorded answers are replayed.
        clock: source of ``ctx.now()``; rng: source of ``ctx.random()`` (by
            default the :mod:`random` module's shared generator).
        principal: who the call acts for (``ctx.principal``).
        limiter: bounds the worker threads of sync steps (default: trio's
            shared limiter of 40).

    Returns:
        The tool's result.

    Raises:
        pydantic.ValidationError: if ``arguments`` do not match the params model.
        Exception: whatever the tool raises.
    """
    params = tool.parse_arguments(arguments)
    ctx = tool.context(principal)
    stepper = Stepper(tool.program(params), ctx, journal=journal)
    # Not through drive(): one coroutine frame less for as long as the call lasts.
    return await _Driver(stepper, executor, clock, rng, limiter).run()


async def drive(
    stepper: Stepper,
    executor: Executor,
    *,
    clock: Callable[[], float] = time.time,
    rng: random.Random | None = None,
    limiter: trio.CapacityLimiter | None = None,
) -> Any:
    """Run an unstarted ``stepper`` to its outcome (see :func:`run`).

    Without ``rng``, randomness comes from the :mod:`random` module's shared
    generator.
    """
    return await _Driver(stepper, executor, clock, rng, limiter).run()


class _Driver:
    __slots__ = (
        "_bits",
        "clock",
        "executor",
        "limiter",
        "scopes",
        "send",
        "stepper",
        "timers",
    )

    def __init__(
        self,
        stepper: Stepper,
        executor: Executor,
        clock: Callable[[], float],
        rng: random.Random | None,
        limiter: trio.CapacityLimiter | None = None,
    ) -> None:
        self.stepper = stepper
        self.executor = executor
        self.limiter = limiter
        self.clock = clock
        # Without an rng, the random module's shared generator: seeding one
        # per call would cost more than the call.
        self._bits = random.getrandbits if rng is None else rng.getrandbits
        # Concurrent mode only (see the module doc):
        self.scopes: dict[str, trio.CancelScope] = {}
        self.timers: dict[str, trio.CancelScope] = {}
        self.send: trio.MemorySendChannel[_Done | _Expired] | None = None

    async def run(self) -> Any:
        try:
            self.stepper.start()
            deferred = await self._serial()
            if self.stepper.outcome is None:
                await self._concurrent(deferred)
        finally:
            # On cancellation (or a crash here) close every generator first.
            self.stepper.cancel()
        return _unwrap(self.stepper)

    async def _serial(self) -> list[Ask | StartTimer]:
        """Run while one question at a time is outstanding, asking it inline.

        Returns the asks and timers, in event order, that need the concurrent
        mode (empty once the call has an outcome).
        """
        stepper = self.stepper
        while True:
            deferred: list[Ask | StartTimer] = []
            events = stepper.events()
            while events:
                for event in events:
                    await self._serial_one(event, deferred)
                events = stepper.events()
            if stepper.outcome is not None:
                return []
            if len(deferred) != 1 or not isinstance(deferred[0], Ask):
                return deferred
            key, question = (
                deferred[0].key,
                cast("PeerQuestion[Any]", deferred[0].question),
            )
            try:
                reply = await self._perform_one(key, question)
            except Exception as exc:
                stepper.fail(key, exc)
            else:
                stepper.answer(key, reply)

    async def _perform_one(self, key: str, question: Question[Any]) -> Any:
        """The executor's answer to a peer question; a step's reply to a step."""
        if type(question) is not Step:
            with performing(self.stepper.observer, key):  # the effect's span, if any
                peer = cast("PeerQuestion[Any]", question)
                return await self.executor.perform(key, peer)
        step = question
        stub = getattr(self.executor, "step_stub", None)
        idempotency = step_key(self.stepper.call_id, step, key)
        return await perform_step(step, idempotency, limiter=self.limiter, stub=stub)

    async def _serial_one(self, event: Event, deferred: list[Ask | StartTimer]) -> None:
        match event:
            case Ask(key, question) if isinstance(question, LocalQuestion):
                self._answer_locally(key, question)
            case Ask() | StartTimer():
                deferred.append(event)
            case Tell(key, notice):
                await self.executor.notify(key, notice)
            case Withdraw(key):
                # Asked in this same step: never sent, so drop it.
                deferred[:] = [
                    d for d in deferred if not (isinstance(d, Ask) and d.key == key)
                ]
            case StopTimer(key):
                deferred[:] = [
                    d
                    for d in deferred
                    if not (isinstance(d, StartTimer) and d.key == key)
                ]
            case Finished():
                pass

    async def _concurrent(self, deferred: list[Ask | StartTimer]) -> None:
        self.send, receive = trio.open_memory_channel[_Done | _Expired](math.inf)
        async with trio.open_nursery() as nursery:
            for event in deferred:
                await self._one(nursery, event)
            while True:
                await self._handle(nursery, self.stepper.events())
                if self.stepper.outcome is not None:
                    nursery.cancel_scope.cancel()
                    break
                self._feed(await receive.receive())

    async def _handle(self, nursery: trio.Nursery, events: list[Event]) -> None:
        while events:
            for event in events:
                await self._one(nursery, event)
            events = self.stepper.events()

    async def _one(self, nursery: trio.Nursery, event: Event) -> None:
        match event:
            case Ask(key, question) if isinstance(question, LocalQuestion):
                self._answer_locally(key, question)
            case Ask(key, question):
                scope = trio.CancelScope()
                self.scopes[key] = scope
                peer_question = cast("PeerQuestion[Any]", question)
                nursery.start_soon(self._perform, key, peer_question, scope)
            case Tell(key, notice):
                await self.executor.notify(key, notice)
            case Withdraw(key):
                self.scopes.pop(key).cancel()
            case StartTimer(key, seconds):
                scope = trio.CancelScope()
                self.timers[key] = scope
                nursery.start_soon(self._timer, key, seconds, scope)
            case StopTimer(key):
                timer = self.timers.pop(key, None)
                if timer is not None:  # None once the timer itself fired
                    timer.cancel()
            case Finished():
                pass

    def _answer_locally(self, key: str, question: LocalQuestion[Any]) -> None:
        try:
            reply = question.compute(self.clock, self._bits)
        except Exception as exc:
            self.stepper.fail(key, exc)
        else:
            self.stepper.answer(key, reply)

    async def _perform(
        self, key: str, question: PeerQuestion[Any], scope: trio.CancelScope
    ) -> None:
        with scope:
            assert self.send is not None
            try:
                reply = await self._perform_one(key, question)
            except Exception as exc:
                self.send.send_nowait(_Done(key, error=exc))
            else:
                self.send.send_nowait(_Done(key, reply))

    async def _timer(self, key: str, seconds: float, scope: trio.CancelScope) -> None:
        with scope:
            await trio.sleep(seconds)
            assert self.send is not None
            self.send.send_nowait(_Expired(key))

    def _feed(self, message: _Done | _Expired) -> None:
        if isinstance(message, _Expired):
            self.timers.pop(message.key, None)
            self.stepper.expire(message.key)
            return
        self.scopes.pop(message.key, None)
        if not self.stepper.is_pending(message.key):
            return  # withdrawn while the answer was in flight: drop it
        if message.error is not None:
            self.stepper.fail(message.key, message.error)
        else:
            self.stepper.answer(message.key, message.reply)


def _unwrap(stepper: Stepper) -> Any:
    outcome = stepper.outcome
    if isinstance(outcome, Returned):
        return outcome.value
    if isinstance(outcome, Raised):
        raise outcome.error
    if isinstance(outcome, Cancelled):
        raise InternalError("the call was cancelled without trio.Cancelled")
    raise InternalError("the stepper stopped without an outcome")

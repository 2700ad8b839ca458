"""The trio driver: a call's machine carried out against an executor.

The machine (:mod:`runtime.call.machine`) decides; this module waits. It is the
driver of an in-process host and of any executor (an MCP session that cannot
send without waiting, a scripted peer). It runs in two modes:

* **Serial** (how every call starts): while at most one question or step is
  outstanding and no branch timer runs, nothing can happen but that one
  answer, so the driver performs it inline, in the caller's task: no
  nursery, no task per question, no channel. A sequential tool (most tools)
  never leaves this mode, and a parked call costs only its coroutine frames.
* **Concurrent** (from the first batch that leaves two outstanding, or starts
  a timer, until the call ends): every outstanding question or step runs in
  its own cancel scope inside the call's nursery, so sibling branches sample
  at the same time; a withdrawn one has its scope cancelled (the executor
  sees ``trio.Cancelled`` and, for MCP, tells the peer). A branch's deadline,
  or a sleep's (``ctx.sleep``: this driver sleeps for real, for what is left
  of the recorded deadline), is a timer task that reports back.

Notices are delivered inline, in order, before what follows them. A step
(``ctx.step``) is performed by :func:`~runtime._step_runner.perform_step`
instead of the executor (whose ``step_stub``, if it has one, may replace its
function): a sync function in a worker thread under ``limiter``, an ``async
def`` in the question's task. ``Persist`` is acknowledged through ``log``
when one is given (an async callable that makes records durable), at once
otherwise.

If the call itself is cancelled, every generator is closed first (their
``finally`` blocks run) and then ``trio.Cancelled`` propagates.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

import attrs
import trio

from ..effects.base import Notice, PeerQuestion
from ..errors import InternalError
from ..principal import Principal
from ..steps.runner import perform_step
from ..tools.value import Tool
from .commands import (
    AskPeer,
    CancelTimer,
    Finish,
    Notify,
    Persist,
    RunStep,
    SetTimer,
    WithdrawQuestion,
    carry_out,
)
from .events import Cancelled, Raised, Returned
from .journal import Journal, Record
from .machine import CallMachine, open_call
from .observe import performing
from .stepper import Stepper

__all__ = ["Executor", "drive", "run"]

R = TypeVar("R")

Log = Callable[[Sequence[Record]], Awaitable[None]]
"""Makes a call's records durable (a store's append)."""


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
    log: Log | None = None,
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
        log: make the call durable: every record is written with ``log``
            before the call shows what follows it.

    Returns:
        The tool's result.

    Raises:
        pydantic.ValidationError: if ``arguments`` do not match the params model.
        Exception: whatever the tool raises.
    """
    params = tool.parse_arguments(arguments)
    ctx = tool.context(principal)
    bits = None if rng is None else rng.getrandbits
    opened = open_call(
        tool.program(params),
        ctx,
        journal=journal,
        durable=log is not None,
        clock=clock,
        bits=bits,
    )
    if not isinstance(opened, CallMachine):
        return _unwrap(opened)
    return await _Driver(opened, executor, limiter, log).run()


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
    stepper.start()
    bits = None if rng is None else rng.getrandbits
    machine = CallMachine(stepper, clock=clock, bits=bits)
    return await _Driver(machine, executor, limiter, None).run()


class _Driver:
    """Carries a machine's commands out (a :class:`~runtime.call.commands.Carrier`)."""

    __slots__ = (
        "deferred",
        "executor",
        "limiter",
        "log",
        "machine",
        "nursery",
        "scopes",
        "send",
        "timers",
    )

    def __init__(
        self,
        machine: CallMachine,
        executor: Executor,
        limiter: trio.CapacityLimiter | None,
        log: Log | None,
    ) -> None:
        self.machine = machine
        self.executor = executor
        self.limiter = limiter
        self.log = log
        # Serial mode: what waits to be performed, in order.
        self.deferred: list[AskPeer | RunStep | SetTimer] = []
        # Concurrent mode only (see the module doc):
        self.nursery: trio.Nursery | None = None
        self.scopes: dict[str, trio.CancelScope] = {}
        self.timers: dict[str, trio.CancelScope] = {}
        self.send: trio.MemorySendChannel[_Done | _Expired] | None = None

    async def run(self) -> Any:
        machine = self.machine
        try:
            await self._serial()
            if machine.outcome is None:
                await self._concurrent()
        finally:
            # On cancellation (or a crash here) close every generator first.
            machine.cancel()
        return _unwrap(machine.outcome)

    async def _carry_out_all(self) -> None:
        commands = self.machine.commands()
        while commands:
            for command in commands:
                pending = carry_out(command, self)
                if pending is not None:
                    await pending
            commands = self.machine.commands()

    async def _serial(self) -> None:
        """Perform one question at a time, inline, while only one is out."""
        machine = self.machine
        while True:
            await self._carry_out_all()
            if machine.outcome is not None:
                return
            deferred = self.deferred
            if len(deferred) != 1 or type(deferred[0]) is SetTimer:
                return
            command = deferred.pop()
            assert not isinstance(command, SetTimer)
            try:
                reply = await self._perform(command)
            except Exception as exc:
                machine.fail(command.key, exc)
            else:
                machine.answer(command.key, reply)

    async def _concurrent(self) -> None:
        self.send, receive = trio.open_memory_channel[_Done | _Expired](math.inf)
        machine = self.machine
        async with trio.open_nursery() as nursery:
            self.nursery = nursery
            deferred, self.deferred = self.deferred, []
            for command in deferred:
                self._start(command)
            while True:
                await self._carry_out_all()
                if machine.outcome is not None:
                    nursery.cancel_scope.cancel()
                    break
                message = await receive.receive()
                if isinstance(message, _Expired):
                    self.timers.pop(message.key, None)
                    machine.timer_fired(message.key)
                    continue
                self.scopes.pop(message.key, None)
                if message.error is not None:
                    machine.fail(message.key, message.error)
                else:
                    machine.answer(message.key, message.reply)

    # --- the Carrier -----------------------------------------------------------------

    def ask(self, command: AskPeer) -> None:
        self._later(command)

    def run_step(self, command: RunStep) -> None:
        self._later(command)

    def set_timer(self, command: SetTimer) -> None:
        self._later(command)

    def withdraw(self, command: WithdrawQuestion) -> None:
        key = command.key
        scope = self.scopes.pop(key, None)
        if scope is not None:
            scope.cancel()
            return
        self.deferred[:] = [
            d for d in self.deferred if type(d) is SetTimer or d.key != key
        ]

    def cancel_timer(self, command: CancelTimer) -> None:
        key = command.key
        timer = self.timers.pop(key, None)
        if timer is not None:
            timer.cancel()  # None once the timer itself fired
            return
        self.deferred[:] = [
            d for d in self.deferred if type(d) is not SetTimer or d.key != key
        ]

    def notify(self, command: Notify) -> Awaitable[None]:
        return self.executor.notify(command.key, command.notice)

    def persist(self, command: Persist) -> Awaitable[None] | None:
        if self.log is None:
            self.machine.persisted()
            return None
        return self._write(command)

    def finish(self, command: Finish) -> None:
        pass

    # --- performing ------------------------------------------------------------------

    def _later(self, command: AskPeer | RunStep | SetTimer) -> None:
        if self.nursery is None:
            self.deferred.append(command)
        else:
            self._start(command)

    def _start(self, command: AskPeer | RunStep | SetTimer) -> None:
        assert self.nursery is not None
        scope = trio.CancelScope()
        if type(command) is SetTimer:
            self.timers[command.key] = scope
            # The deadline is wall-clock time (recorded, so replays keep it);
            # trio waits on its own clock, for the time that was left.
            at = trio.current_time() + command.seconds
            self.nursery.start_soon(self._timer, command.key, at, scope)
        else:
            assert not isinstance(command, SetTimer)
            self.scopes[command.key] = scope
            self.nursery.start_soon(self._perform_in, command, scope)

    async def _perform(self, command: AskPeer | RunStep) -> Any:
        """The executor's answer to a peer question; a step's reply to a step."""
        if type(command) is AskPeer:
            with performing(self.machine.observer, command.key):  # its span, if any
                return await self.executor.perform(command.key, command.question)
        assert isinstance(command, RunStep)
        stub = getattr(self.executor, "step_stub", None)
        return await perform_step(
            command.step, command.idempotency, limiter=self.limiter, stub=stub
        )

    async def _perform_in(
        self, command: AskPeer | RunStep, scope: trio.CancelScope
    ) -> None:
        with scope:
            assert self.send is not None
            try:
                reply = await self._perform(command)
            except Exception as exc:
                self.send.send_nowait(_Done(command.key, error=exc))
            else:
                self.send.send_nowait(_Done(command.key, reply))

    async def _timer(self, key: str, at: float, scope: trio.CancelScope) -> None:
        with scope:
            await trio.sleep_until(at)
            assert self.send is not None
            self.send.send_nowait(_Expired(key))

    async def _write(self, command: Persist) -> None:
        assert self.log is not None
        try:
            await self.log(command.records)
        except Exception as exc:
            self.machine.persist_failed(exc)
        else:
            self.machine.persisted()


def _unwrap(outcome: object) -> Any:
    if isinstance(outcome, Returned):
        return outcome.value
    if isinstance(outcome, Raised):
        raise outcome.error
    if isinstance(outcome, Cancelled):
        raise InternalError("the call was cancelled without trio.Cancelled")
    raise InternalError("the stepper stopped without an outcome")

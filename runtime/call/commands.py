"""What a call tells its driver to do: commands, as values, and the one dispatch.

A :class:`~runtime.call.machine.CallMachine` never waits and never does I/O;
it hands its driver *commands*, oldest first, and the driver carries each out:

* :class:`AskPeer`: put a question to the peer (sample, elicit, roots, URL); its
  answer comes back with :meth:`~runtime.call.machine.CallMachine.answer` or
  :meth:`~runtime.call.machine.CallMachine.fail`;
* :class:`RunStep`: run a step of the tool's own work (its result comes back
  the same way);
* :class:`WithdrawQuestion`: a question or step asked earlier is no longer wanted: a
  late answer must not be delivered (the machine drops one anyway);
* :class:`Notify`: deliver a notice (log, progress, release of the stream);
* :class:`Persist`: make these journal records durable. It is a *barrier*:
  the machine hands out nothing after it until the driver says
  :meth:`~runtime.call.machine.CallMachine.persisted`, so whatever the call
  shows after an answer (a notification, a question, a step, its result)
  happens only once the answer is written (write-ahead);
* :class:`SetTimer` / :class:`CancelTimer`: a branch's deadline, or a
  sleep's (seconds since the epoch), reported with
  :meth:`~runtime.call.machine.CallMachine.timer_fired`
  (:meth:`~runtime.call.machine.CallMachine.is_sleeping` tells a sleep, for
  a driver that parks a sleeping call instead of waiting);
* :class:`Finish`: the call is over, with its outcome, and so is every timer.

A driver implements :class:`Carrier` (one method per command) and hands every
command to :func:`carry_out`: the only place that takes commands apart by
kind. A method may return an awaitable, which an async driver awaits before
the next command (a trio driver delivering notices in order); a driver that
never waits returns None.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, Protocol, TypeAlias, final

import attrs

from ..effects.base import Notice, PeerQuestion
from ..steps.effect import Step
from .events import Outcome
from .journal import Record

__all__ = [
    "AskPeer",
    "CancelTimer",
    "Carrier",
    "Command",
    "Finish",
    "Notify",
    "Persist",
    "RunStep",
    "SetTimer",
    "WithdrawQuestion",
    "carry_out",
]


@final
@attrs.frozen
class AskPeer:
    """Ask the peer ``question``; its answer is for key ``key``."""

    key: str
    question: PeerQuestion[Any]


@final
@attrs.frozen
class RunStep:
    """Run ``step`` (the tool's own work) under ``idempotency`` (the same in
    every replay of the call); ``deadline``: when the time limits of the
    branches around it run out (seconds since the epoch), or None."""

    key: str
    step: Step
    idempotency: str
    deadline: float | None


@final
@attrs.frozen
class WithdrawQuestion:
    """The question or step at ``key`` is no longer wanted."""

    key: str


@final
@attrs.frozen
class Notify:
    key: str
    notice: Notice


@final
@attrs.frozen
class Persist:
    """Make ``records`` durable, then say so (a barrier: module doc)."""

    records: tuple[Record, ...]


@final
@attrs.frozen
class SetTimer:
    """The branch or the sleep at ``key`` ends at ``deadline`` (seconds since
    the epoch), ``seconds`` from when the machine handed this out (a driver
    waiting on another clock than the machine's, trio's for one, waits that
    long; 0 if the deadline passed before it was handed out: at once)."""

    key: str
    deadline: float
    seconds: float


@final
@attrs.frozen
class CancelTimer:
    key: str


@final
@attrs.frozen
class Finish:
    outcome: Outcome


Command: TypeAlias = (
    AskPeer
    | RunStep
    | WithdrawQuestion
    | Notify
    | Persist
    | SetTimer
    | CancelTimer
    | Finish
)


class Carrier(Protocol):
    """What carries a call's commands out: a driver (module doc)."""

    def ask(self, command: AskPeer, /) -> Any: ...
    def run_step(self, command: RunStep, /) -> Any: ...
    def withdraw(self, command: WithdrawQuestion, /) -> Any: ...
    def notify(self, command: Notify, /) -> Any: ...
    def persist(self, command: Persist, /) -> Any: ...
    def set_timer(self, command: SetTimer, /) -> Any: ...
    def cancel_timer(self, command: CancelTimer, /) -> Any: ...
    def finish(self, command: Finish, /) -> Any: ...


_METHOD: Final[dict[type[Any], Callable[[Carrier, Any], Any]]] = {
    AskPeer: lambda carrier, command: carrier.ask(command),
    RunStep: lambda carrier, command: carrier.run_step(command),
    WithdrawQuestion: lambda carrier, command: carrier.withdraw(command),
    Notify: lambda carrier, command: carrier.notify(command),
    Persist: lambda carrier, command: carrier.persist(command),
    SetTimer: lambda carrier, command: carrier.set_timer(command),
    CancelTimer: lambda carrier, command: carrier.cancel_timer(command),
    Finish: lambda carrier, command: carrier.finish(command),
}


def carry_out(command: Command, carrier: Carrier) -> Any:
    """Hand ``command`` to the ``carrier`` method for its kind; what it returns
    (None, or an awaitable for an async driver to await)."""
    return _METHOD[type(command)](carrier, command)

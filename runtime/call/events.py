"""What the stepper reports, and how a call ends: events and outcomes, as values.

Owns the events a :class:`~runtime.call.stepper.Stepper` hands to whoever drives it
(:class:`Ask`, :class:`Tell`, :class:`Withdraw`, :class:`StartTimer`,
:class:`StopTimer`, :class:`Marked`, :class:`Finished`) and the outcomes of a call
(:class:`Returned`, :class:`Raised`, :class:`Cancelled`). Each is a frozen attrs
value; drivers dispatch on their exact type.

It does not say when each event happens or what a driver must do about it: that
is the stepper's theory of operation (:mod:`runtime.call.stepper`).
"""

from __future__ import annotations

from typing import Any, final

import attrs

from ..effects.base import Notice, Question

__all__ = [
    "Ask",
    "Cancelled",
    "Event",
    "Finished",
    "Marked",
    "Outcome",
    "Raised",
    "Returned",
    "StartTimer",
    "StopTimer",
    "Tell",
    "Withdraw",
]


@final
@attrs.frozen
class Ask:
    key: str
    question: Question[Any]


@final
@attrs.frozen
class Tell:
    key: str
    notice: Notice


@final
@attrs.frozen
class Withdraw:
    key: str


@final
@attrs.frozen
class StartTimer:
    key: str
    seconds: float


@final
@attrs.frozen
class StopTimer:
    key: str


@final
@attrs.frozen
class Marked:
    """The call took patch point ``name`` (``ctx.patched`` was True there):
    a durable call writes its marker like an answer."""

    name: str
    taken: bool


@final
@attrs.frozen
class Returned:
    value: Any


@final
@attrs.frozen
class Raised:
    error: BaseException


@final
@attrs.frozen
class Cancelled:
    pass


Outcome = Returned | Raised | Cancelled


@final
@attrs.frozen
class Finished:
    outcome: Outcome


Event = Ask | Tell | Withdraw | StartTimer | StopTimer | Marked | Finished

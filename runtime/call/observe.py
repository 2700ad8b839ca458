"""Watching a call: what the stepper reports to an observer, besides its events.

Owns the :class:`Observer` protocol and :data:`OBSERVING`, the context variable
a stepper reads once, when it is made, to find the observer of its call. The
stepper's events say what a driver must do; an observer also hears what needs
no doing — a question answered from the journal (replayed, not asked again), a
branch started or joined, an answer delivered — so that it can draw the call
(OpenTelemetry spans in :mod:`bridge.telemetry`, the picture in
:mod:`runtime.picture`).

It does not decide anything, and nothing it does changes the call: an observer
that raises is a bug in the observer. Without an observer (the default) the
stepper pays one ``None`` check at each point.

Effects are named generically, by kind (:func:`effect_kind`: the effect's class
name in snake case, ``Sample`` → ``"sample"``), so a new kind of effect is
drawn with no code specific to it.
"""

from __future__ import annotations

import contextlib
import re
from contextvars import ContextVar
from typing import Any, Protocol

__all__ = ["OBSERVING", "Observer", "effect_kind", "performing"]


class Observer(Protocol):
    """Hears what happens in one call, in the order it happens (keys as the
    stepper's: ``"3.1/0"``)."""

    def began(self, call_id: str) -> None:
        """The call started; ``call_id`` is the same in every replay of it
        (each 2026-07-28 round), so it ties the rounds together."""
        ...

    def asked(self, key: str, question: Any) -> None:
        """``question`` waits at ``key`` for the outside world (fresh work)."""
        ...

    def replayed(self, key: str, question: Any, recorded: Any) -> None:
        """``question`` at ``key`` was answered from the journal (JSON)."""
        ...

    def answered(self, key: str, reply: Any) -> None: ...

    def failed(self, key: str, error: BaseException) -> None: ...

    def withdrawn(self, key: str) -> None:
        """The question at ``key`` is no longer wanted (its frame closed)."""
        ...

    def told(self, key: str, notice: Any, fresh: bool) -> None:
        """A notice; ``fresh`` is False when a replay had sent it already."""
        ...

    def branched(self, key: str, limits: Any, children: int) -> None: ...

    def joined(self, key: str, error: BaseException | None) -> None:
        """The branch at ``key`` ended: its results went back, or ``error``."""
        ...

    def finished(self, outcome: Any) -> None: ...

    def performing(self, key: str) -> contextlib.AbstractContextManager[None]:
        """Entered around carrying out the question at ``key`` (sending it)."""
        ...


OBSERVING: ContextVar[Observer | None] = ContextVar("yieldmcp_observing", default=None)
"""The observer of the call whose stepper is made in this context, if any."""


_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


def effect_kind(effect: object) -> str:
    """The kind of ``effect``, by its class name: ``ElicitUrl`` → ``elicit_url``."""
    return _CAMEL.sub("_", type(effect).__name__).lower()


_NOTHING = contextlib.nullcontext()


def performing(
    observer: Observer | None, key: str
) -> contextlib.AbstractContextManager[None]:
    """``observer.performing(key)``, or a shared do-nothing context without
    an observer (no object made per question)."""
    return _NOTHING if observer is None else observer.performing(key)

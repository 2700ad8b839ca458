"""The sans-IO interpreter: steps tool generators and reports what they need.

Theory of operation
-------------------
A call is a tree of *frames*. The root frame runs the tool's generator; a
``Branch`` effect parks its frame and starts one child frame per child. The
stepper advances frames until each is parked on something only the outside world
can supply, and reports what it needs as *events* (:mod:`runtime._events`):

* ``Ask(key, question)``: answer with :meth:`Stepper.answer` or :meth:`fail`.
* ``Tell(key, notice)``: deliver a log/progress notice; nothing comes back.
* ``Withdraw(key)``: a pending question is no longer wanted (its frame was
  cancelled); a late answer must not be delivered.
* ``StartTimer(key, seconds)`` / ``StopTimer(key)``: a branch's time limit; call
  :meth:`expire` when it runs out.
* ``Finished(outcome)``: the call is over.

It never waits and never imports trio: the driver (``_driver.py``) turns the
events into I/O, the MRTR carrier turns pending ``Ask``s into ``inputRequests``.

Rules (the single source of truth for both protocol eras):

1. Every yield gets a key: the frame's prefix plus its yield ordinal. The root's
   yields are ``"0"``, ``"1"``...; child ``i`` of the branch at key ``k`` has the
   prefix ``"k.i/"``. Keys are stable for the same program and answers.
2. to 4. Branches: children start left to right and return in child order; the
   first failure, or a limit, cancels the siblings. :mod:`runtime._branches`
   states these rules in full and carries them out.
5. With a journal, a recorded question is answered from the journal, in
   recorded order, and a changed one is asked again: :mod:`runtime._dispatch`
   states the rule in full and carries it out.

This module is the driving API (:class:`Stepper`, :func:`start`) and the loop
that advances frames. What a yielded value does is
:class:`~runtime._dispatch.Dispatching`'s, and the frame tree and branches are
:class:`~runtime._branches.Branching`'s: :class:`Stepper` extends both, so one
stepper object holds the whole state of a call.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Generator
from typing import Any, Final, cast, final

from ..effects.base import AtOnce, Question
from ..errors import BranchTimeout, LocalProtocolError
from .branches import SEND, THROW, Frame, RunningBranch, outcome_of
from .dispatch import Dispatching
from .events import Ask as Ask
from .events import Cancelled as Cancelled
from .events import Event as Event
from .events import Finished as Finished
from .events import Outcome as Outcome
from .events import Raised as Raised
from .events import Returned as Returned
from .events import StartTimer as StartTimer
from .events import StopTimer as StopTimer
from .events import Tell as Tell
from .events import Withdraw as Withdraw
from .journal import Journal
from .observe import OBSERVING

__all__ = [
    "Ask",
    "Cancelled",
    "Event",
    "Finished",
    "Outcome",
    "Raised",
    "Returned",
    "StartTimer",
    "Stepper",
    "StopTimer",
    "Tell",
    "Withdraw",
    "start",
]


_ENDED: Final = (Returned, Raised)  # an ``A | B`` would be built on every check


# --- the stepper --------------------------------------------------------------------


@final
class Stepper(Dispatching):
    """Interprets one call of a tool program. Pure: no I/O, no clock, no trio.

    Args:
        program: called once with ``context`` to produce the root generator.
            If it has a ``finish`` method (a tool's :class:`~runtime.tools.Program`),
            the call's result is ``finish(returned)``, and an exception it
            raises is the call's.
        context: handed to the program and to every branch child.
        journal: record answers here; answer recorded questions from it.
    """

    __slots__ = (
        "_branches",
        "_call_id",
        "_context",
        "_events",
        "_last_progress",
        "_pending",
        "_positions",
        "_program",
        "_replays",
        "_root",
        "_work",
        "journal",
        "observer",
        "outcome",
    )

    def __init__(
        self,
        program: Callable[[Any], Generator[Any, Any, Any]],
        context: Any,
        *,
        journal: Journal | None = None,
    ) -> None:
        self._program = program
        self._context = context
        self.journal = journal
        self._events: list[Event] = []
        # Frames to advance, oldest first. A list, swapped out per batch in
        # _run (FIFO all the same): an idle stepper keeps an empty list, not a
        # deque's 600-byte block, for as long as its call is parked.
        self._work: list[tuple[Frame, int, Any]] = []
        self._pending: dict[str, tuple[Frame, Question[Any], str | None]] = {}
        # Replay (with a journal) and branches only: made when first needed,
        # so a parked call without them holds no empty containers.
        self._replays: list[tuple[int, str, Frame, Question[Any], Any]] | None = (
            [] if journal is not None else None
        )
        self._positions: dict[str, int] | None = (
            {key: i for i, key in enumerate(journal.keys())} if journal else None
        )
        self._branches: dict[str, RunningBranch] | None = None
        self._root: Frame | None = None
        self._last_progress: float | None = None
        self._call_id: str | None = None
        self.outcome: Outcome | None = None
        self.observer = OBSERVING.get()  # who watches this call, if anyone

    @property
    def call_id(self) -> str:
        """The call's id, the same in every replay with its journal: with a
        step's name and key, the step's idempotency key."""
        if self.journal is not None:
            return self.journal.call_id
        if self._call_id is None:
            self._call_id = uuid.uuid4().hex
        return self._call_id

    # --- driving ---------------------------------------------------------------------

    def start(self) -> None:
        """Run the program until every frame waits on the outside world."""
        if self._root is not None or self.outcome is not None:
            raise LocalProtocolError("this stepper has already started")
        made = _make(self._program, self._context)
        if isinstance(made, _ENDED):
            self._finish(made)
        else:
            self._begin(made)

    def _begin(self, gen: Generator[Any, Any, Any]) -> None:
        if self.observer is not None:
            self.observer.began(self.call_id)
        self._root = Frame(gen, "", None, 0, 0)
        self._work.append((self._root, SEND, None))
        self._run()

    def events(self) -> list[Event]:
        """The events produced since the last call, oldest first."""
        events, self._events = self._events, []
        return events

    def pending(self) -> dict[str, Question[Any]]:
        """The questions waiting for an answer, by key."""
        return {key: q for key, (_f, q, _d) in self._pending.items()}

    def is_pending(self, key: str) -> bool:
        return key in self._pending

    def question(self, key: str) -> Question[Any] | None:
        """The question pending at ``key``, or None if none is."""
        entry = self._pending.get(key)
        return None if entry is None else entry[1]

    def digest(self, key: str) -> str:
        """The digest of the question pending at ``key``: the one its journal
        lookup used, so a question with context is not digested again.

        Raises:
            LocalProtocolError: no question is pending at ``key``.
        """
        entry = self._pending.get(key)
        if entry is None:
            raise LocalProtocolError(f"no question is pending at key {key!r}")
        _frame, question, dig = entry
        return question.digest() if dig is None else dig

    def answer(self, key: str, reply: Any) -> None:
        """Deliver ``reply`` for the pending question ``key`` and run on."""
        frame, question, dig = self._take(key)
        if self.journal is not None:
            if dig is None:
                dig = question.digest()
            self.journal.record(
                key, dig, question.reply_to_json(reply), question.label()
            )
        if self.observer is not None:
            self.observer.answered(key, reply)
        self._deliver(frame, key, question, reply)
        self._run()

    def fail(self, key: str, error: BaseException) -> None:
        """Raise ``error`` into the frame waiting on ``key`` and run on."""
        frame, _question, _dig = self._take(key)
        if self.observer is not None:
            self.observer.failed(key, error)
        self._work.append((frame, THROW, error))
        self._run()

    def expire(self, key: str) -> None:
        """The time limit of the branch at ``key`` ran out (ignored if it ended)."""
        branch = self._branches.get(key) if self._branches else None
        if branch is None:
            return
        seconds = branch.limits.timeout if branch.limits else None
        error = BranchTimeout(
            f"branch {key!r} exceeded its time limit of {seconds} s", branch_key=key
        )
        self._abort(branch, error, group=False)
        self._run()

    def cancel(self) -> None:
        """Cancel the whole call: close every generator, withdraw every question."""
        if self.outcome is not None:
            return
        errors: list[Exception] = []
        if self._root is not None and not self._root.done:
            self._close(self._root, errors)
        self._work.clear()
        self._finish(Cancelled())

    # --- internals -------------------------------------------------------------------

    def _take(self, key: str) -> tuple[Frame, Question[Any], str | None]:
        try:
            entry = self._pending.pop(key)
        except KeyError:
            raise LocalProtocolError(f"no question is pending at key {key!r}") from None
        entry[0].waiting = None
        return entry

    def _run(self) -> None:
        while self._work or self._replays:
            if not self._work:
                self._replay_next()
                continue
            batch, self._work = self._work, []
            for frame, mode, value in batch:
                if frame.done:
                    continue
                try:
                    if mode == SEND:
                        effect = frame.gen.send(value)
                    else:
                        effect = frame.gen.throw(value)
                except StopIteration as stop:
                    self._returned(frame, stop.value)
                except Exception as exc:
                    self._raised(frame, exc)
                else:
                    self._dispatch(frame, effect)


def start(
    program: Callable[[Any], Generator[Any, Any, Any]],
    context: Any,
    *,
    journal: Journal | None = None,
) -> Stepper | Returned | Raised:
    """A :class:`Stepper` for ``program``, started; or, for a program that
    ends before it starts (a plain function's value, :class:`AtOnce`, or an
    error making the generator), just that outcome: there is nothing to step
    and nothing to wait for, so no stepper is made.

    ``Stepper(program, context, journal=journal).start()`` gives the same
    outcome, as the stepper's ``Finished`` event.
    """
    made = _make(program, context)
    if isinstance(made, _ENDED):
        return made
    stepper = Stepper(program, context, journal=journal)
    stepper._begin(made)  # pyright: ignore[reportPrivateUsage]
    return stepper


def _make(
    program: Callable[[Any], Generator[Any, Any, Any]], context: Any
) -> Generator[Any, Any, Any] | Returned | Raised:
    """The program's generator, or its outcome if it has ended already."""
    try:
        gen = program(context)
    except Exception as exc:
        return Raised(exc)
    if type(gen) is AtOnce:  # a plain function's value: nothing to step
        return outcome_of(program, cast("AtOnce[Any]", gen).value)
    return gen

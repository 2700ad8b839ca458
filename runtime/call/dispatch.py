"""What the stepper does with each value a frame yields: the dispatch on effects.

A yielded value is dispatched on its kind, in one place:

* a **question** is parked and asked (an ``Ask`` event), or, with a journal
  that recorded its key with the same digest, answered from the journal
  (rule 5 below);
* a **notice** is told (a ``Tell`` event), once per key across replays, and a
  ``Progress`` that does not increase on the call's last one is refused;
* a **branch** is started (:class:`~runtime._branches.Branching`);
* anything else is thrown back into the frame as ``InvalidEffect``, naming the
  likely mistake (most often a ``yield`` that meant ``yield from``).

Rule 5 of the stepper: with a journal, a question whose key is recorded with the
same digest is answered from the journal with no event — in recorded order,
once the frames have moved as far as they can, as the answers first arrived —
and a changed question is asked again.

:class:`Dispatching` is this half of :class:`~runtime._stepper.Stepper`, and
delivers answers (recorded or live) to the frames that asked. It does not run
the loop that advances frames, take answers from the driver or end the call
(:mod:`runtime._stepper`), and keeps no state of its own.
"""

from __future__ import annotations

import heapq
from collections.abc import Generator
from typing import Any, cast

from ..effects.base import Notice, Question
from ..effects.branch import Branch
from ..effects.notices import Progress
from ..errors import InvalidEffect, ProgressNotIncreasing, ReplayDivergence
from .branches import SEND, THROW, Branching, Frame
from .events import Ask, Tell
from .journal import Journal
from .observe import Observer

__all__ = ["Dispatching"]


def _bad_yield(value: object) -> InvalidEffect:
    if isinstance(value, Generator):
        hint = "a generator; did you mean `yield from` instead of `yield`?"
    elif callable(value):
        hint = "a callable; did you forget to call it, or mean `yield from f(...)`?"
    else:
        hint = "not an effect; yield effects built by the context (ctx.sample(...))."
    return InvalidEffect(f"a tool yielded {value!r}, which is {hint}")


class Dispatching(Branching):
    """The dispatch half of :class:`~runtime._stepper.Stepper` (see the module
    docstring). It works on the stepper's state, which the stepper declares in
    its ``__slots__``."""

    __slots__ = ()

    _last_progress: float | None
    _positions: dict[str, int] | None
    _replays: list[tuple[int, str, Frame, Question[Any], Any]] | None
    journal: Journal | None
    observer: Observer | None

    def _dispatch(self, frame: Frame, effect: object) -> None:
        key = f"{frame.prefix}{frame.ordinal}"
        frame.ordinal += 1
        if isinstance(effect, Question):
            self._ask(frame, key, cast("Question[Any]", effect))
        elif isinstance(effect, Notice):
            self._tell(frame, key, effect)
        elif isinstance(effect, Branch):
            self._branch(frame, key, effect)
        else:
            self._work.append((frame, THROW, _bad_yield(effect)))

    def _ask(self, frame: Frame, key: str, question: Question[Any]) -> None:
        journal = self.journal
        if journal is None:
            self._park(frame, key, question, None)
            return
        dig = question.digest()
        try:
            recorded = journal.lookup(key, dig, question.label())
        except ReplayDivergence as exc:
            self._work.append((frame, THROW, exc))
            return
        if recorded is None:
            self._park(frame, key, question, dig)
        elif not self._branches and not self._replays:
            self._replay_in_row(frame, key, question, recorded)
        else:
            self._queue_replay(frame, key, question, recorded)

    def _park(
        self, frame: Frame, key: str, question: Question[Any], dig: str | None
    ) -> None:
        self._pending[key] = (frame, question, dig)
        frame.waiting = key
        self._events.append(Ask(key, question))
        if self.observer is not None:
            self.observer.asked(key, question)

    def _queue_replay(
        self, frame: Frame, key: str, question: Question[Any], recorded: Any
    ) -> None:
        if self.observer is not None:
            self.observer.replayed(key, question, recorded)
        try:
            reply = question.reply_from_json(recorded)
        except Exception as exc:
            self._work.append((frame, THROW, exc))
            return
        # Delivered later, in recorded order: see _replay_next.
        assert self._positions is not None
        assert self._replays is not None
        position = self._positions.get(key, len(self._positions))
        heapq.heappush(self._replays, (position, key, frame, question, reply))
        frame.waiting = key

    def _replay_in_row(
        self, frame: Frame, key: str, question: Question[Any], recorded: Any
    ) -> None:
        """Answer the root frame from the journal, question after question, for
        as long as the journal has the answers.

        Only the root frame runs and no recorded answer waits its turn, so each
        answer is the next one due anyway (rule 5), and no budget is charged
        outside a branch. So the root goes on at once, without a trip through
        the work queue per answer; anything but a recorded question goes back
        to the general path.
        """
        journal = self.journal
        assert journal is not None
        gen = frame.gen
        while True:
            if self.observer is not None:
                self.observer.replayed(key, question, recorded)
            try:
                result: Any = question.resolve_recorded(recorded, key)
            except Exception as exc:
                self._work.append((frame, THROW, exc))
                return
            try:
                effect = gen.send(result)
            except StopIteration as stop:
                self._returned(frame, stop.value)
                return
            except Exception as exc:
                self._raised(frame, exc)
                return
            if not isinstance(effect, Question):
                self._dispatch(frame, effect)
                return
            key = f"{frame.prefix}{frame.ordinal}"
            frame.ordinal += 1
            question = cast("Question[Any]", effect)
            dig = question.digest()
            try:
                recorded = journal.lookup(key, dig, question.label())
            except ReplayDivergence as exc:
                self._work.append((frame, THROW, exc))
                return
            if recorded is None:
                self._park(frame, key, question, dig)
                return

    def _replay_next(self) -> None:
        """Deliver the earliest-recorded journaled answer that is still wanted.

        A replay must reach the same point as the original run, so recorded
        answers arrive as they first did: one at a time, in the order they were
        recorded, each once every frame has moved as far as it can. Delivering
        them at the moment they are asked would let one branch child run ahead
        of its siblings and, say, fail first where it failed second before.
        """
        assert self._replays is not None
        _position, key, frame, question, reply = heapq.heappop(self._replays)
        if frame.done or frame.waiting != key:
            return  # closed (its branch failed) before its answer came round
        frame.waiting = None
        self._deliver(frame, key, question, reply)

    def _deliver(
        self, frame: Frame, key: str, question: Question[Any], reply: Any
    ) -> None:
        self._charge(frame, question, reply)
        if frame.done:
            return
        try:
            result: Any = question.resolve(reply, key)
        except Exception as exc:
            self._work.append((frame, THROW, exc))
        else:
            self._work.append((frame, SEND, result))

    def _tell(self, frame: Frame, key: str, notice: Notice) -> None:
        if isinstance(notice, Progress):
            last = self._last_progress
            if last is not None and notice.progress <= last:
                error = ProgressNotIncreasing(
                    f"progress must increase: got {notice.progress} after {last}"
                )
                self._work.append((frame, THROW, error))
                return
            self._last_progress = notice.progress
        journal = self.journal
        fresh = journal is None or journal.note(key)
        if fresh:
            self._events.append(Tell(key, notice))
        if self.observer is not None:
            self.observer.told(key, notice, fresh)
        self._work.append((frame, SEND, None))

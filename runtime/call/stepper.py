"""The sans-IO interpreter: steps tool generators and reports what they need.

Theory of operation
-------------------
A call is a tree of *frames*. The root frame runs the tool's generator; a
``Branch`` effect parks its frame and starts one child frame per child. The
stepper advances frames until each is parked on something only the outside world
can supply, and reports what it needs as *events* (:mod:`runtime.call.events`):

* ``Ask(key, question)``: answer with :meth:`Stepper.answer` or :meth:`fail`.
* ``Tell(key, notice)``: deliver a log/progress notice; nothing comes back.
* ``Withdraw(key)``: a pending question is no longer wanted (its frame was
  cancelled); a late answer must not be delivered.
* ``StartTimer(key, seconds)`` / ``StopTimer(key)``: a branch's time limit; call
  :meth:`expire` when it runs out.
* ``Finished(outcome)``: the call is over.

It never waits and never imports trio: the driver (``driver.py``) turns the
events into I/O, the MRTR carrier turns pending ``Ask``s into ``inputRequests``.

A yielded value is dispatched on its kind, in one place:

* a **question** is parked and asked (an ``Ask`` event), or, with a journal
  that recorded its key with the same digest, answered from the journal
  (rule 5 below);
* a **notice** is told (a ``Tell`` event), once per key across replays, and a
  ``Progress`` that does not increase on the call's last one is refused;
* a **branch** is started (rules 2 to 4 below);
* a **patch point** (``ctx.patched``) is answered at once, from its marker
  in the journal or from whether the journal went past it (rule 6 below);
* anything else is thrown back into the frame as ``InvalidEffect``, naming the
  likely mistake (most often a ``yield`` that meant ``yield from``).

While the tool's code runs, the effects its context makes are noted
(:mod:`runtime.effects.made`) and struck out as they are yielded, and so are
its ops (``ctx.step``'s generator) once they have started; those left when
the call ends (``ctx.sample("hi")`` or ``ctx.step(save)`` with no ``yield
from``) are reported as :class:`~runtime.errors.EffectNeverYielded` warnings
at the line that made them, unless the call was cancelled.

When a frame ends, its value or error goes to its branch; at the root it ends
the call, where the program's ``finish`` checks the value. A program that
returns an effect or a generator (``return ctx.sample(...)``, ``return
helper(ctx)``: ``yield from`` forgotten) fails the call with
``InvalidEffect``, whatever runs it.

Rules (the single source of truth for both protocol eras):

1. Every yield gets a key: the frame's prefix plus its yield ordinal. The root's
   yields are ``"0"``, ``"1"``...; child ``i`` of the branch at key ``k`` has the
   prefix ``"k.i/"``. Keys are stable for the same program and answers.
2. Children start left to right in one step. Results return in child order.
3. The first child failure cancels its running siblings: their subtrees are
   closed in reverse start order (``finally`` runs), their pending questions are
   withdrawn, and an ``ExceptionGroup`` is thrown into the parent at the yield.
4. A limit failure (depth, tokens, time) cancels the same way and throws the
   limit's own error, bare. Samples are charged to the token budgets of every
   enclosing branch; the stepper does not keep time (the driver turns
   ``StartTimer`` into a clock and calls :meth:`expire`).
5. With a journal, a question whose key is recorded with the same digest is
   answered from the journal with no event — in recorded order, once the
   frames have moved as far as they can, as the answers first arrived — and a
   changed question is asked again.
6. A patch point takes no key. Its value is the marker recorded for its name
   in the journal; without one, False if the journal holds something at the
   frame's current ordinal or after it (the call went past the point under
   code without the patch), else True; the value is then kept as the
   marker. A True one is also written (a :class:`Marked` event, before
   anything after the point), since what the call records after the point
   would make a later replay say False; a False one is not: what made it
   False stays recorded (a store's records only grow), so a later replay
   says False again, and a replayed call shows nothing new before the
   questions it had asked.

This module is the whole interpreter: the driving API (:class:`Stepper`,
:func:`start`), the loop that advances frames, the dispatch on what they
yield, and the frame tree with its branches. One :class:`Stepper` object holds
the whole state of a call.
"""

from __future__ import annotations

import heapq
import uuid
from collections.abc import Callable, Generator
from types import GeneratorType
from typing import Any, Final, cast, final

from ..effects.base import AtOnce, Effect, Notice, Question, spelling
from ..effects.branch import Branch
from ..effects.made import MADE, Made, report, settle, strike
from ..effects.notices import Progress
from ..effects.patch import Patched
from ..errors import (
    BranchDepthExceeded,
    BranchTimeout,
    EffectNeverYielded,
    InvalidEffect,
    LocalProtocolError,
    ProgressNotIncreasing,
    ReplayDivergence,
    TokenBudgetExceeded,
    call_failure,
)
from ..replies import SampleReply
from ..sampling.effect import Sample
from .events import (
    Ask,
    Cancelled,
    Event,
    Finished,
    Marked,
    Outcome,
    Raised,
    Returned,
    StartTimer,
    StopTimer,
    Tell,
    Withdraw,
)
from .journal import Journal
from .observe import OBSERVING

__all__ = ["Stepper", "start"]

# How a frame is resumed: what is sent into its generator, or thrown.
SEND: Final = 0
THROW: Final = 1

_ENDED: Final = (Returned, Raised)  # an ``A | B`` would be built on every check


# --- the tree of a call -------------------------------------------------------------


class Frame:
    """One generator of a call: its key prefix and yield ordinal, its place in
    its branch, and the key it waits on (a question's, or a branch's)."""

    __slots__ = (
        "depth",
        "done",
        "gen",
        "index",
        "ordinal",
        "parent",
        "prefix",
        "waiting",
    )

    def __init__(
        self,
        gen: Generator[Any, Any, Any],
        prefix: str,
        parent: RunningBranch | None,
        index: int,
        depth: int,
    ) -> None:
        self.gen = gen
        self.prefix = prefix
        self.parent = parent
        self.index = index
        self.depth = depth  # number of enclosing branches
        self.ordinal = 0
        self.waiting: str | None = None
        self.done = False


class RunningBranch:
    """A ``Branch`` in progress: its parked frame, its children and their
    results so far, its limits and the tokens its samples used."""

    __slots__ = (
        "children",
        "depth",
        "depth_bound",
        "frame",
        "key",
        "limits",
        "remaining",
        "results",
        "timed",
        "tokens",
    )

    def __init__(self, key: str, frame: Frame, effect: Branch, depth_bound: int | None):
        self.key = key
        self.frame = frame
        self.limits = effect.limits
        self.depth = frame.depth + 1
        self.depth_bound = depth_bound
        self.children: list[Frame] = []
        self.results: list[Any] = []
        self.remaining = 0
        self.tokens = 0
        self.timed = effect.limits is not None and effect.limits.timeout is not None


def _bad_yield(value: object) -> InvalidEffect:
    if isinstance(value, Generator):
        hint = "a generator; did you mean `yield from` instead of `yield`?"
    elif callable(value):
        hint = "a callable; did you forget to call it, or mean `yield from f(...)`?"
    else:
        hint = "not an effect; yield effects built by the context (ctx.sample(...))."
    return InvalidEffect(f"a tool yielded {value!r}, which is {hint}")


# --- the stepper --------------------------------------------------------------------


@final
class Stepper:
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
        "_made",
        "_pending",
        "_positions",
        "_program",
        "_replays",
        "_root",
        "_unyielded",
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
        # Effects made and not yielded (yet): by the tool code running now
        # (the list MADE holds while _run runs), and by code that ran before.
        self._made: list[Made] | None = None
        self._unyielded: list[Made] | None = None
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
        made, notes = _make(self._program, self._context)
        if isinstance(made, _ENDED):
            self._finish(made)
        else:
            self._begin(made, notes)

    def _begin(self, gen: Generator[Any, Any, Any], notes: list[Made]) -> None:
        if self.observer is not None:
            self.observer.began(self.call_id)
        if notes:
            self._unyielded = notes
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
        made: list[Made] = []
        self._made = made
        token = MADE.set(made)
        try:
            self._advance()
        finally:
            MADE.reset(token)
            self._made = None
            if made:  # made by this run and not yielded by it
                self._keep(made)

    def _advance(self) -> None:
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
                except BaseException as exc:
                    self._raised(frame, call_failure(exc))
                else:
                    self._dispatch(frame, effect)

    # --- effects made and never yielded ----------------------------------------------

    def _yielded(self, effect: object) -> None:
        """``effect`` was yielded: strike its note, if the context made it,
        and drop the ops noted after it that have started (``ctx.step``'s
        generator, which yielded it): the notes of a call of many steps stay
        short."""
        made = self._made
        if made:
            settle(made)
            if made and strike(made, effect):
                settle(made)
                return
        unyielded = self._unyielded
        if unyielded:
            settle(unyielded)
            if unyielded:
                strike(unyielded, effect)

    def _keep(self, made: list[Made]) -> None:
        """Keep the notes of a run that ended: a later run may yield them."""
        settle(made)
        if not made:
            return
        if self._unyielded is None:
            self._unyielded = list(made)
        else:
            self._unyielded.extend(made)
        made.clear()

    def _never_yielded(self) -> list[Made]:
        """The notes left at the end of the call, taken (each reported once)."""
        notes = self._unyielded or []
        self._unyielded = None
        if self._made:
            notes = [*notes, *self._made]
            self._made.clear()
        return notes

    # --- dispatch: what a yielded value does (rule 5) -------------------------------

    def _dispatch(self, frame: Frame, effect: object) -> None:
        made = self._made
        if made and made[-1][0] is effect:  # made and yielded at once: the usual
            made.pop()
            if made:
                settle(made)  # the op that made it, if an op did (sample_schema)
        elif made or self._unyielded:
            self._yielded(effect)
        if type(effect) is Patched:
            self._patched(frame, effect)  # rule 6: no key
            return
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

    def _patched(self, frame: Frame, effect: Patched) -> None:
        journal = self.journal
        if journal is None:  # nothing recorded: every point is reached live
            self._work.append((frame, SEND, True))
            return
        taken = journal.patch(effect.name)
        if taken is None:
            taken = not journal.passed(frame.prefix, frame.ordinal)
            journal.mark_patch(effect.name, taken)
            if taken:  # a False needs no record: what made it False stays
                self._events.append(Marked(effect.name, taken))
        self._work.append((frame, SEND, taken))

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
            except BaseException as exc:
                self._raised(frame, call_failure(exc))
                return
            if not isinstance(effect, Question):
                self._dispatch(frame, effect)
                return
            key = f"{frame.prefix}{frame.ordinal}"
            frame.ordinal += 1
            question = cast("Question[Any]", effect)
            if self._made or self._unyielded:
                self._yielded(question)
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

    # --- ending frames, and branches (rules 2 to 4) ----------------------------------

    def _finish(self, outcome: Outcome) -> None:
        notes = self._never_yielded()
        if notes and type(outcome) is not Cancelled:
            outcome = _reported(notes, outcome)
        self.outcome = outcome
        self._events.append(Finished(outcome))
        if self.observer is not None:
            self.observer.finished(outcome)

    def _branch(self, frame: Frame, key: str, effect: Branch) -> None:
        bound = self._depth_bound(frame, effect)
        if bound is not None and frame.depth + 1 > bound:
            error = BranchDepthExceeded(
                f"branch {key!r} would nest {frame.depth + 1} deep, over its limit "
                f"of {bound}",
                branch_key=key,
            )
            self._work.append((frame, THROW, error))
            return
        branch = RunningBranch(key, frame, effect, bound)
        try:
            gens = self._start_children(effect)
        except BaseException as exc:
            failed = ExceptionGroup(f"branch {key!r}", [call_failure(exc)])
            self._work.append((frame, THROW, failed))
            return
        frame.waiting = key
        if self.observer is not None:
            self.observer.branched(key, effect.limits, len(gens))
        if not gens:
            if self.observer is not None:
                self.observer.joined(key, None)
            self._work.append((frame, SEND, ()))
            return
        if self._branches is None:
            self._branches = {}
        self._branches[key] = branch
        branch.results = [None] * len(gens)
        branch.remaining = len(gens)
        for index, gen in enumerate(gens):
            child = Frame(gen, f"{key}.{index}/", branch, index, branch.depth)
            branch.children.append(child)
            self._work.append((child, SEND, None))
        if branch.timed:
            assert effect.limits is not None
            assert effect.limits.timeout is not None
            self._events.append(StartTimer(key, effect.limits.timeout))

    def _depth_bound(self, frame: Frame, effect: Branch) -> int | None:
        inherited = frame.parent.depth_bound if frame.parent is not None else None
        own = effect.limits.max_depth if effect.limits is not None else None
        if own is None:
            return inherited
        own_bound = frame.depth + own
        return own_bound if inherited is None else min(inherited, own_bound)

    def _start_children(self, effect: Branch) -> list[Generator[Any, Any, Any]]:
        gens: list[Generator[Any, Any, Any]] = []
        try:
            for factory in effect.children:
                gens.append(self._start_child(factory))
        except BaseException:
            for gen in reversed(gens):
                gen.close()
            raise
        return gens

    def _start_child(
        self, factory: Callable[[Any], Generator[Any, Any, Any]]
    ) -> Generator[Any, Any, Any]:
        gen = factory(self._context)
        if not isinstance(gen, Generator):
            raise InvalidEffect(
                f"branch child {factory!r} returned {gen!r}, not a generator; "
                f"children must be generator functions taking the context"
            )
        return gen

    def _returned(self, frame: Frame, value: Any) -> None:
        frame.done = True
        branch = frame.parent
        if branch is None:
            self._finish(outcome_of(self._program, value))
            return
        branch.results[frame.index] = value
        branch.remaining -= 1
        if branch.remaining == 0:
            assert self._branches is not None
            del self._branches[branch.key]
            if branch.timed:
                self._events.append(StopTimer(branch.key))
            if self.observer is not None:
                self.observer.joined(branch.key, None)
            branch.frame.waiting = None
            self._work.append((branch.frame, SEND, tuple(branch.results)))

    def _raised(self, frame: Frame, error: Exception) -> None:
        frame.done = True
        if frame.parent is None:
            self._finish(Raised(error))
            return
        self._abort(frame.parent, error, group=True)

    def _abort(self, branch: RunningBranch, error: Exception, *, group: bool) -> None:
        """Cancel ``branch``'s running children and throw ``error`` into its parent."""
        teardown: list[Exception] = []
        for child in reversed(branch.children):
            if not child.done:
                self._close(child, teardown)
        if self._branches is not None:
            self._branches.pop(branch.key, None)
        if branch.timed:
            self._events.append(StopTimer(branch.key))
        if self.observer is not None:
            self.observer.joined(branch.key, error)
        branch.frame.waiting = None
        if group or teardown:
            thrown: Exception = ExceptionGroup(
                f"branch {branch.key!r} failed", [error, *teardown]
            )
        else:
            thrown = error
        self._work.append((branch.frame, THROW, thrown))

    def _close(self, frame: Frame, errors: list[Exception]) -> None:
        """Close ``frame`` and everything under it, innermost first."""
        waiting = frame.waiting
        if waiting is not None:
            nested = self._branches.pop(waiting, None) if self._branches else None
            if nested is not None:
                for child in reversed(nested.children):
                    if not child.done:
                        self._close(child, errors)
                if nested.timed:
                    self._events.append(StopTimer(nested.key))
                if self.observer is not None:
                    self.observer.joined(nested.key, None)
            elif self._pending.pop(waiting, None) is not None:
                self._events.append(Withdraw(waiting))
                if self.observer is not None:
                    self.observer.withdrawn(waiting)
            frame.waiting = None
        frame.done = True
        made = self._made
        mark = len(made) if made is not None else 0
        try:
            frame.gen.close()
        except RuntimeError as exc:
            if str(exc) != "generator ignored GeneratorExit":
                errors.append(exc)
                return
            errors.append(_ignored_exit(frame.gen, exc))
            try:
                frame.gen.close()  # once more, to end it
            except RuntimeError:
                pass  # it ignored GeneratorExit again: reported once is enough
            except Exception as again:
                errors.append(again)
            # What it yielded is lost: not an effect never yielded (its note
            # would say to write `yield from`), but one it may not ask.
            if made is not None:
                del made[mark:]
        except Exception as exc:
            errors.append(exc)

    # --- token budgets ---------------------------------------------------------------

    def _charge(self, frame: Frame, question: Question[Any], reply: Any) -> None:
        if frame.parent is None or not isinstance(reply, SampleReply):
            return
        tokens = _tokens(cast("Sample[Any]", question), reply)
        exceeded: RunningBranch | None = None
        branch = frame.parent
        while branch is not None:
            branch.tokens += tokens
            limit = branch.limits.max_tokens if branch.limits else None
            if limit is not None and branch.tokens > limit:
                exceeded = branch  # keep walking: the outermost one wins
            branch = branch.frame.parent
        if exceeded is not None:
            limit = exceeded.limits.max_tokens if exceeded.limits else None
            error = TokenBudgetExceeded(
                f"branch {exceeded.key!r} used {exceeded.tokens} tokens, over its "
                f"budget of {limit}",
                branch_key=exceeded.key,
            )
            self._abort(exceeded, error, group=False)


def _ignored_exit(gen: Generator[Any, Any, Any], raised: RuntimeError) -> InvalidEffect:
    """The error for ``gen``, closed as its branch was cancelled, which caught
    ``GeneratorExit`` and yielded again (``raised``: Python's ``generator
    ignored GeneratorExit``)."""
    inner: Any = gen
    while type(getattr(inner, "gi_yieldfrom", None)) is GeneratorType:
        inner = inner.gi_yieldfrom  # the generator that yielded, innermost
    frame = getattr(inner, "gi_frame", None)
    code = getattr(inner, "gi_code", None)
    where = (
        f"{code.co_name}() at {code.co_filename}:{frame.f_lineno}"
        if frame is not None and code is not None
        else repr(gen)
    )
    error = InvalidEffect(
        f"{where} caught GeneratorExit and yielded again as its branch was "
        f"cancelled: let GeneratorExit through (catch Exception, not "
        f"BaseException or GeneratorExit, or re-raise it); a cancelled child "
        f"cannot ask anything"
    )
    error.__cause__ = raised
    return error


def _tokens(question: Sample[Any], reply: SampleReply) -> int:
    if reply.usage is not None:
        return reply.usage.total
    chars = sum(len(m.text) for m in question.messages) + len(reply.text)
    return chars // 4 + 1


def _reported(notes: list[Made], outcome: Outcome) -> Outcome:
    """``outcome``, once ``notes`` are reported; when the warning is an error
    (``-W error``), a returned call raises it, and a raised error carries it
    as a note (the first error stays the call's)."""
    try:
        report(notes)
    except EffectNeverYielded as warning:
        if isinstance(outcome, Raised):
            outcome.error.add_note(str(warning))
            return outcome
        return Raised(warning)
    return outcome


def outcome_of(program: Callable[..., Any], value: Any) -> Returned | Raised:
    """The call's outcome for what the program returned, checked by the
    program's ``finish`` when it has one (a tool's output type). An effect
    or a generator returned is refused: its ``yield from`` was forgotten, and
    the caller would get the object (or, on the wire, a generator drained
    into a list)."""
    generator = type(value) is GeneratorType
    if generator or isinstance(value, Effect):
        made = spelling(cast(object, value))
        kind = "a generator" if generator else "an effect"
        return Raised(
            InvalidEffect(
                f"the tool returned {made}, {kind}, not its result: write "
                f"`return (yield from {made})`"
            )
        )
    finish: Callable[[Any], Any] | None = getattr(program, "finish", None)
    if finish is None:
        return Returned(value)
    try:
        return Returned(finish(value))
    except Exception as exc:
        return Raised(exc)


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
    made, notes = _make(program, context)
    if isinstance(made, _ENDED):
        return made
    stepper = Stepper(program, context, journal=journal)
    stepper._begin(made, notes)  # pyright: ignore[reportPrivateUsage]
    return stepper


def _make(
    program: Callable[[Any], Generator[Any, Any, Any]], context: Any
) -> tuple[Generator[Any, Any, Any] | Returned | Raised, list[Made]]:
    """The program's generator, or its outcome if it has ended already (a
    plain function's, with the effects it made reported); and the effects
    made while making the generator, which it may yield later."""
    notes: list[Made] = []
    token = MADE.set(notes)
    try:
        gen = program(context)
    except BaseException as exc:
        return _ended(Raised(call_failure(exc)), notes), []
    finally:
        MADE.reset(token)
    if type(gen) is AtOnce:  # a plain function's value: nothing to step
        ended = outcome_of(program, cast("AtOnce[Any]", gen).value)
        return _ended(ended, notes), []
    return gen, notes


def _ended(outcome: Returned | Raised, notes: list[Made]) -> Returned | Raised:
    """A program's outcome before it was stepped, with ``notes`` reported."""
    if not notes:
        return outcome
    reported = _reported(notes, outcome)
    assert isinstance(reported, _ENDED)
    return reported

"""Frames and branches: the tree of generators a call is, and what ``Branch`` does.

A call is a tree of *frames*. The root frame runs the tool's generator; a
``Branch`` effect parks its frame and starts one child frame per child. This
module owns that tree and the rules of branching (the single source of truth
for both protocol eras; the numbers are the stepper's, see
:mod:`runtime._stepper`):

2. Children start left to right in one step. Results return in child order.
3. The first child failure cancels its running siblings: their subtrees are
   closed in reverse start order (``finally`` runs), their pending questions are
   withdrawn, and an ``ExceptionGroup`` is thrown into the parent at the yield.
4. A limit failure (depth, tokens, time) cancels the same way and throws the
   limit's own error, bare.

:class:`Branching` is the half of :class:`~runtime._stepper.Stepper` that
carries these out: starting a branch, ending a frame (handing its value or
error to its branch, or ending the call at the root, where the program's
``finish`` checks the value), aborting and closing subtrees, and charging
samples to token budgets.

It does not step generators (:mod:`runtime._stepper`), ask or answer questions
or replay a journal (:mod:`runtime._dispatch`), or keep time (the driver turns
``StartTimer`` into a clock).
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any, Final, cast

from ..effects.base import Question
from ..effects.branch import Branch
from ..errors import BranchDepthExceeded, InvalidEffect, TokenBudgetExceeded
from ..replies import SampleReply
from ..sampling.effect import Sample
from .events import (
    Event,
    Finished,
    Outcome,
    Raised,
    Returned,
    StartTimer,
    StopTimer,
    Withdraw,
)
from .observe import Observer

__all__ = ["SEND", "THROW", "Branching", "Frame", "RunningBranch", "outcome_of"]

# How a frame is resumed: what is sent into its generator, or thrown.
SEND: Final = 0
THROW: Final = 1


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


class Branching:
    """The branch half of :class:`~runtime._stepper.Stepper` (see the module
    docstring). It keeps no state of its own: it works on the stepper's, which
    the stepper declares in its ``__slots__``."""

    __slots__ = ()

    _branches: dict[str, RunningBranch] | None
    _context: Any
    _events: list[Event]
    _pending: dict[str, tuple[Frame, Question[Any], str | None]]
    _program: Callable[[Any], Generator[Any, Any, Any]]
    _work: list[tuple[Frame, int, Any]]
    observer: Observer | None
    outcome: Outcome | None

    def _finish(self, outcome: Outcome) -> None:
        self.outcome = outcome
        self._events.append(Finished(outcome))
        if self.observer is not None:
            self.observer.finished(outcome)

    # --- branches --------------------------------------------------------------------

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
        except Exception as exc:
            self._work.append((frame, THROW, ExceptionGroup(f"branch {key!r}", [exc])))
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
        try:
            frame.gen.close()
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


def _tokens(question: Sample[Any], reply: SampleReply) -> int:
    if reply.usage is not None:
        return reply.usage.total
    chars = sum(len(m.text) for m in question.messages) + len(reply.text)
    return chars // 4 + 1


def outcome_of(program: Callable[..., Any], value: Any) -> Returned | Raised:
    """The call's outcome for what the program returned, checked by the
    program's ``finish`` when it has one (a tool's output type)."""
    finish: Callable[[Any], Any] | None = getattr(program, "finish", None)
    if finish is None:
        return Returned(value)
    try:
        return Returned(finish(value))
    except Exception as exc:
        return Raised(exc)

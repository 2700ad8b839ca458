"""Small generated tool programs and a reference interpreter for them.

A program is a list of steps: sample, elicit, log, raise, work (a
``ctx.step`` whose function may fail), read the clock or draw a random
number (``ctx.now()``, ``ctx.random()``), sleep (``ctx.sleep``), or a branch
of sub-programs, which may have a time limit. :func:`execute` runs one as a
real tool body (generators yielding effects); :func:`reference` computes
what it must return by plain recursion. Answers are a pure function of the
question (its label), so the result does not depend on the order answers
arrive in, only on which labels fail and which timed branches ran out of
time (the driver's choice, so the reference is told: ``expired``). What the
clock and the random draws gave is not in the result but in the
:class:`Trace`, by the step's path, so a test can check that a replay sees
the values of the first run.

``programs`` draws the steps every driver can run; ``timed_programs`` adds
the clock, random draws, sleeps and time limits, for drivers that keep a
clock. A sleep gives its label back once its deadline passed; which timed
branches ran out first is the driver's choice, as for any branch.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

import attrs
import trio
from hypothesis import strategies as st
from pydantic import BaseModel

from runtime import Context, Limits, Op, StepFailed, Tool, idempotency_key, tool
from runtime.lowlevel import BranchTimeout, PeerError
from runtime.testing import accept, text


@attrs.frozen
class SampleStep:
    label: str


@attrs.frozen
class ElicitStep:
    label: str


@attrs.frozen
class LogStep:
    label: str


@attrs.frozen
class RaiseStep:
    label: str


@attrs.frozen
class WorkStep:
    label: str
    fails: bool


@attrs.frozen
class NowStep:
    label: str


@attrs.frozen
class RandomStep:
    label: str


@attrs.frozen
class SleepStep:
    label: str
    seconds: float


@attrs.frozen
class BranchStep:
    children: tuple[tuple[Any, ...], ...]
    timeout: float | None = None  # seconds: the branch's Limits(timeout=...)


Program = tuple[Any, ...]


class Answer(BaseModel):
    label: str


class ProgramError(Exception):
    def __init__(self, label: str) -> None:
        super().__init__(label)
        self.label = label


labels = st.text(alphabet="abcdefgh", min_size=1, max_size=2)
leaves = st.one_of(
    st.builds(SampleStep, labels),
    st.builds(ElicitStep, labels),
    st.builds(LogStep, labels),
    st.builds(RaiseStep, labels),
    st.builds(WorkStep, labels, st.booleans()),
)

worked: list[str] = []  # the idempotency key of every run of a work step


def work_now(label: str, fails: bool) -> str:
    """A work step's function, synchronously (``run_scripted`` stubs with it)."""
    worked.append(idempotency_key())
    if fails:
        raise ValueError(label)
    return label * 2


async def work(label: str, fails: bool) -> str:
    """A work step's function: async, so trio sees it wait like a peer."""
    await trio.lowlevel.checkpoint()
    return work_now(label, fails)


def _with_branches(inner: st.SearchStrategy[Program]) -> st.SearchStrategy[Program]:
    branch = st.builds(BranchStep, st.lists(inner, max_size=3).map(tuple))
    return st.lists(st.one_of(leaves, branch), max_size=4).map(tuple)


programs: st.SearchStrategy[Program] = st.recursive(
    st.lists(leaves, max_size=4).map(tuple), _with_branches, max_leaves=12
)

TIME_LIMITS = (1.0, 10.0, 100.0)  # seconds: a timed branch's Limits(timeout=...)
SLEEPS = (0.0, 0.5, 5.0, 50.0)  # seconds: a SleepStep's ctx.sleep(...)

# The clock, random draws and time limits besides; questions (and steps) most
# often, raises rarely, so that more calls get far, and branch, before they end.
_questions = (
    st.builds(SampleStep, labels),
    st.builds(ElicitStep, labels),
    st.builds(WorkStep, labels, st.sampled_from([False, False, True])),
)
timed_leaves = st.one_of(
    *_questions,
    *_questions,
    *_questions,
    st.builds(LogStep, labels),
    st.builds(NowStep, labels),
    st.builds(RandomStep, labels),
    st.builds(SleepStep, labels, st.sampled_from(SLEEPS)),
    st.builds(RaiseStep, labels),
)


def _with_timed_branches(
    inner: st.SearchStrategy[Program],
) -> st.SearchStrategy[Program]:
    children = st.lists(inner, min_size=1, max_size=3).map(tuple)
    limits = st.one_of(st.none(), st.sampled_from(TIME_LIMITS))
    branch = st.builds(BranchStep, children, limits)
    return st.lists(st.one_of(timed_leaves, branch), max_size=4).map(tuple)


timed_programs: st.SearchStrategy[Program] = st.recursive(
    st.lists(timed_leaves, max_size=4).map(tuple), _with_timed_branches, max_leaves=12
)


@attrs.define
class Trace:
    """Which generators started and which finished (their ``finally`` ran);
    what each clock reading and random draw gave, by the step's path; and
    each branch that started: its effect key (by its path), how it ended (by
    its key: "ok", "failed", "timeout" or "closed") and, for those that ran
    out of time, the key their ``BranchTimeout`` named (by path)."""

    started: list[str] = attrs.field(factory=list)
    finished: list[str] = attrs.field(factory=list)
    seen: dict[str, float] = attrs.field(factory=dict)
    branches: dict[str, str] = attrs.field(factory=dict)
    ended: dict[str, str] = attrs.field(factory=dict)
    timeouts: dict[str, str] = attrs.field(factory=dict)


def execute(
    ctx: Context, program: Program, path: str, trace: Trace, prefix: str = ""
) -> Op[Program]:
    """Run ``program`` as a tool body. ``path`` names each step for the
    reference (``r/2`` is the root's third step, ``r/2.1`` its second child);
    ``prefix`` is the effect-key prefix the stepper gives this generator
    (its rule 1), so each branch's key can be traced without asking it."""
    trace.started.append(path)
    yields = 0  # this generator's yields so far: the ordinal of its next key
    try:
        out: list[Any] = []
        for index, step in enumerate(program):
            here = f"{path}/{index}"
            match step:
                case SampleStep(label):
                    reply = yield from ctx.sample(label)
                    out.append(reply.text)
                case ElicitStep(label):
                    answer = yield from ctx.elicit("k", label)
                    assert answer.content is not None
                    out.append(("elicited", answer.content.label))
                case LogStep(label):
                    yield ctx.log("info", label)
                case RaiseStep(label):
                    raise ProgramError(label)
                case WorkStep(label, fails):
                    out.append((yield from ctx.step(work, label, fails)))
                case NowStep(label):
                    trace.seen[here] = yield from ctx.now()
                    out.append(("now", label))
                case RandomStep(label):
                    trace.seen[here] = yield from ctx.random()
                    out.append(("random", label))
                case SleepStep(label, seconds):
                    yield from ctx.sleep(seconds)
                    out.append(("slept", label))
                case BranchStep(children, timeout):
                    key = f"{prefix}{yields}"
                    trace.branches[here] = key
                    factories = [
                        functools.partial(
                            execute,
                            program=child,
                            path=f"{here}.{i}",
                            trace=trace,
                            prefix=f"{key}.{i}/",
                        )
                        for i, child in enumerate(children)
                    ]
                    limits = None if timeout is None else Limits(timeout=timeout)
                    try:
                        results = yield from ctx.branch(*factories, limits=limits)
                    except BranchTimeout as exc:
                        trace.ended[key] = "timeout"
                        trace.timeouts[here] = exc.branch_key
                        raise ProgramError(f"timeout {here}") from exc
                    except GeneratorExit:
                        trace.ended[key] = "closed"
                        raise
                    except BaseException:
                        trace.ended[key] = "failed"
                        raise
                    trace.ended[key] = "ok"
                    out.append(tuple(results))
            yields += 1  # every step but a raise (which ends here) yields once
        return tuple(out)
    finally:
        trace.finished.append(path)


def program_tool(program: Program, trace: Trace) -> Tool[Any, Any]:
    def body(ctx: Context) -> Op[Program]:
        return execute(ctx, program, "r", trace)

    return tool(name="program", elicits={"k": Answer})(body)


def answer_for(question: Any, failing: frozenset[str]) -> Any:
    """The deterministic answer to a question, or the peer error it gets."""
    label = (
        question.messages[-1].text
        if hasattr(question, "messages")
        else question.message
    )
    if label in failing:
        return PeerError(-32603, label)
    if hasattr(question, "messages"):
        return text(label.upper())
    return accept(label=label)


# --- the reference ------------------------------------------------------------------


@attrs.frozen
class Ok:
    value: Program


@attrs.frozen
class Failed:
    candidates: frozenset[str]  # the labels the failure may come from


def reference(
    program: Program,
    failing: frozenset[str],
    expired: frozenset[str] = frozenset(),
    path: str = "r",
) -> Ok | Failed:
    """What ``program`` returns when the labels in ``failing`` fail and the
    timed branches at the paths in ``expired`` ran out of time."""
    out: list[Any] = []
    for index, step in enumerate(program):
        here = f"{path}/{index}"
        match step:
            case SampleStep(label) | ElicitStep(label) if label in failing:
                return Failed(frozenset({label}))
            case SampleStep(label):
                out.append(label.upper())
            case ElicitStep(label):
                out.append(("elicited", label))
            case LogStep():
                pass
            case RaiseStep(label) | WorkStep(label, True):
                return Failed(frozenset({label}))
            case WorkStep(label):
                out.append(label * 2)
            case NowStep(label):
                out.append(("now", label))
            case RandomStep(label):
                out.append(("random", label))
            case SleepStep(label):
                out.append(("slept", label))
            case BranchStep() if here in expired:
                return Failed(frozenset({f"timeout {here}"}))
            case BranchStep(children):
                results = [
                    reference(child, failing, expired, f"{here}.{i}")
                    for i, child in enumerate(children)
                ]
                failures = [r for r in results if isinstance(r, Failed)]
                if failures:
                    return Failed(frozenset().union(*(f.candidates for f in failures)))
                out.append(tuple(r.value for r in results if isinstance(r, Ok)))
    return Ok(tuple(out))


def failure_label(error: BaseException) -> str:
    """The label of the leaf error under any nesting of exception groups."""
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    if isinstance(error, ProgramError):
        return error.label
    if isinstance(error, PeerError):
        return error.message
    if isinstance(error, StepFailed):
        return error.message
    raise error


def all_labels(program: Iterable[Any]) -> set[str]:
    found: set[str] = set()
    for step in program:
        if isinstance(step, BranchStep):
            for child in step.children:
                found |= all_labels(child)
        else:
            found.add(step.label)
    return found

"""Small generated tool programs and a reference interpreter for them.

A program is a list of steps: sample, elicit, log, raise, work (a
``ctx.step`` whose function may fail), or a branch of sub-programs.
:func:`execute` runs one as a real tool body (generators yielding effects);
:func:`reference` computes what it must return by plain recursion.
Answers are a pure function of the question (its label), so the result does not
depend on the order answers arrive in, only on which labels fail.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

import attrs
import trio
from hypothesis import strategies as st
from pydantic import BaseModel

from runtime import Context, Op, StepFailed, Tool, idempotency_key, tool
from runtime.lowlevel import PeerError
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
class BranchStep:
    children: tuple[tuple[Any, ...], ...]


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


@attrs.define
class Trace:
    """Which generators started and which finished (their ``finally`` ran)."""

    started: list[str] = attrs.field(factory=list)
    finished: list[str] = attrs.field(factory=list)


def execute(ctx: Context, program: Program, path: str, trace: Trace) -> Op[Program]:
    trace.started.append(path)
    try:
        out: list[Any] = []
        for index, step in enumerate(program):
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
                case BranchStep(children):
                    factories = [
                        functools.partial(
                            execute,
                            program=child,
                            path=f"{path}/{index}.{i}",
                            trace=trace,
                        )
                        for i, child in enumerate(children)
                    ]
                    results = yield from ctx.branch(*factories)
                    out.append(tuple(results))
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


def reference(program: Program, failing: frozenset[str]) -> Ok | Failed:
    out: list[Any] = []
    for step in program:
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
            case BranchStep(children):
                results = [reference(child, failing) for child in children]
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

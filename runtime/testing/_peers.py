"""Scripted executors for tests, and a synchronous runner over the stepper."""

from __future__ import annotations

import collections
import difflib
import functools
import random
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeAlias, TypeVar, cast, final

import attrs
import trio

from ..call.commands import (
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
from ..call.events import Raised, Returned
from ..call.journal import Journal
from ..call.machine import CallMachine, open_call
from ..effects.base import Notice, PeerQuestion
from ..elicitation.effects import Elicit, ElicitUrl
from ..errors import (
    InternalError,
    InvalidScript,
    InvalidTool,
    ScriptExhausted,
    ScriptNotUsed,
)
from ..sampling.effect import Sample
from ..steps.effect import Step
from ..steps.runner import perform_step_now
from ..tools.value import Tool

__all__ = ["Asked", "HeldPeer", "ScriptedPeer", "run_scripted"]

R = TypeVar("R")

Answer: TypeAlias = Any | BaseException | Callable[[Any], Any]
"""A reply, an exception to raise instead, or a callable computing either."""


@final
@attrs.frozen
class Asked:
    """One question a peer was asked, with its key."""

    key: str
    question: PeerQuestion[Any]


def _queue(answers: Any) -> Any:
    if callable(answers) or isinstance(answers, BaseException):
        return answers
    if isinstance(answers, Iterable) and not isinstance(answers, str | bytes | Mapping):
        return collections.deque[Any](cast(Iterable[Any], answers))
    return collections.deque[Any]([answers])


@final
class ScriptedPeer:
    """Answers questions from a script and records everything it is asked.

    Args:
        samples: replies for ``sample``, in order; or one callable
            ``(Sample) -> reply`` answering every sample.
        elicits: per elicitation key, replies in order or a callable.
        urls: replies for URL elicitations, in order or a callable.
        steps: per step name, what its function returns, attempt after
            attempt (an exception instance is raised by that attempt); or a
            fake function, called with the step's arguments. A step not named
            here runs its own function.

    A scripted answer that is an exception instance is raised instead (to play a
    failing peer). Running out of answers raises ScriptExhausted into the tool.
    When a :func:`run_scripted` call ran a step the script does not stub
    (or asked an elicitation it has no answers for), the names in ``steps``
    (``elicits``) that no call has asked for are a
    :class:`~runtime.errors.ScriptNotUsed` warning as the call ends, with
    the close name the call asked for: a typo there runs the real step.
    """

    def __init__(
        self,
        *,
        samples: Iterable[Answer] | Answer = (),
        elicits: Mapping[str, Iterable[Answer] | Answer] | None = None,
        urls: Iterable[Answer] | Answer = (),
        steps: Mapping[str, Iterable[Any] | Callable[..., Any]] | None = None,
    ) -> None:
        _by_name("elicits", elicits, "each form's key to its answers", "confirm")
        _by_name("steps", steps, "each step's name to its results", "charge_card")
        self._steps: dict[str, Any] = {
            name: v if callable(v) else _queue(v) for name, v in (steps or {}).items()
        }
        self._samples = _queue(samples)
        self._elicits = {k: _queue(v) for k, v in (elicits or {}).items()}
        self._urls = _queue(urls)
        self.asked: list[Asked] = []
        self.notices: list[tuple[str, Notice]] = []
        # The step names and elicitation keys asked, in order (to report the
        # script's names no call asked for), and the names reported already.
        self._asked_names: list[tuple[str, str]] = []
        self._reported: set[tuple[str, str]] = set()

    def reply_for(self, key: str, question: PeerQuestion[Any]) -> Any:
        """The scripted reply to ``question`` (synchronous; raises scripted errors)."""
        self.asked.append(Asked(key, question))
        source = self._source(question)
        if isinstance(source, collections.deque):
            if not source:
                raise ScriptExhausted(
                    f"the script has no more answers for {_describe(question)} "
                    f"(asked at key {key!r})"
                )
            answer: Any = cast(collections.deque[Any], source).popleft()
        else:
            answer = source
        if callable(answer) and not isinstance(answer, BaseException):
            answer = answer(question)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def _source(self, question: PeerQuestion[Any]) -> Any:
        if isinstance(question, Sample):
            return self._samples
        if isinstance(question, Elicit):
            self._asked_names.append(("elicits", question.key))
            if question.key not in self._elicits:
                raise ScriptExhausted(
                    f"the script has no answers for elicit {question.key!r}"
                    + _close_to(question.key, self._unasked("elicits"))
                )
            return self._elicits[question.key]
        if isinstance(question, ElicitUrl):
            return self._urls
        raise ScriptExhausted(f"the script cannot answer {question!r}")

    async def perform(self, key: str, question: PeerQuestion[Any]) -> Any:
        await trio.lowlevel.checkpoint()
        return self.reply_for(key, question)

    def step_stub(self, step: Step) -> Callable[..., Any] | None:
        """The fake function of ``step``, if the script names it (runners ask)."""
        self._asked_names.append(("steps", step.name))
        source = self._steps.get(step.name)
        if source is None or not isinstance(source, collections.deque):
            return source

        def scripted(*args: Any, **kwargs: Any) -> Any:
            queue = cast(collections.deque[Any], source)
            if not queue:
                raise ScriptExhausted(
                    f"the script has no more results for step {step.name!r}"
                )
            result = queue.popleft()
            if isinstance(result, BaseException):
                raise result
            return result

        return scripted

    async def notify(self, key: str, notice: Notice) -> None:
        self.notices.append((key, notice))

    @property
    def samples(self) -> list[Sample[Any]]:
        """Every sample asked, in order."""
        found: list[Sample[Any]] = []
        for asked in self.asked:
            question: Any = asked.question
            if isinstance(question, Sample):
                found.append(cast(Sample[Any], question))
        return found

    def _unasked(self, kind: str) -> list[str]:
        """The names of ``kind`` (``"steps"``, ``"elicits"``) the script
        has and no call asked for."""
        scripted = self._steps if kind == "steps" else self._elicits
        asked = {name for k, name in self._asked_names if k == kind}
        return [name for name in scripted if name not in asked]

    def _unused(self, since: int) -> str | None:
        """One line naming the script's names that no call asked for, when
        the call (its names asked since ``since``, an index) asked for a
        name of the same kind that the script has not: a step that ran its
        own function, an elicitation with no answers. Each name is reported
        once in the peer's life, with the close name the call asked for;
        None if there is nothing to report."""
        called = self._asked_names[since:]
        parts: list[str] = []
        for kind in ("steps", "elicits"):
            scripted = self._steps if kind == "steps" else self._elicits
            missed = list(
                dict.fromkeys(n for k, n in called if k == kind and n not in scripted)
            )
            if not missed:
                continue  # every name asked was scripted: nothing was missed
            unused = [n for n in self._unasked(kind) if (kind, n) not in self._reported]
            self._reported.update((kind, n) for n in unused)
            parts += [
                f"ScriptedPeer({kind}=...) names {name!r}, which no call asked for"
                + _close_to(name, missed, asked=True)
                for name in unused
            ]
        return "; ".join(parts) or None


def _by_name(argument: str, given: object, maps: str, example: str) -> None:
    """Refuse ``given`` for ``argument`` unless it is None or a mapping."""
    if given is None or isinstance(given, Mapping):
        return
    raise InvalidScript(
        f"ScriptedPeer: {argument} maps {maps} ({argument}={{{example!r}: "
        f"[...]}}), got a {type(given).__name__}"
    )


def _close_to(name: str, names: list[str], *, asked: bool = False) -> str:
    """`` (did you mean 'x'?)`` for the name in ``names`` closest to
    ``name``; empty if none is close."""
    close = difflib.get_close_matches(name, names, n=1)
    if not close:
        return ""
    if asked:
        return f" (did you mean {close[0]!r}, which the call asked for?)"
    return f" (the script has answers for {close[0]!r}: a typo?)"


def _describe(question: PeerQuestion[Any]) -> str:
    if isinstance(question, Elicit):
        return f"elicit {question.key!r}"
    return type(question).__name__.lower()


def run_scripted(
    tool: Tool[Any, R],
    arguments: Mapping[str, Any] | Any,
    peer: ScriptedPeer,
    *,
    journal: Journal | None = None,
    clock: Callable[[], float] = lambda: 0.0,
    rng: random.Random | None = None,
) -> R:
    """Run ``tool`` to completion synchronously, answering from ``peer``.

    No trio, no threads: the call's machine is driven directly, which makes
    this usable from plain functions and Hypothesis tests. Nothing waits:
    answers come at once, and when the call waits on nothing but timers
    (``ctx.sleep``), the clock jumps to the earliest deadline, so a tool
    that sleeps an hour runs at once, and ``ctx.now()`` after the sleep reads
    an hour later. A branch's time limit fires only so (when its children
    all sleep past it); use :func:`runtime.lowlevel.run` to test limits
    against work that takes time. A step runs its sync function here,
    retries without waiting, and an ``async def`` step must be stubbed
    (``ScriptedPeer(steps=...)``). An ``async def`` tool, which runs as one
    step, runs here if it returns before awaiting I/O (which needs
    :func:`runtime.lowlevel.run`); one awaiting an effect fails with the hint
    that effects are yielded, as under trio.
    """
    if not isinstance(tool, Tool):
        raise _not_a_tool("run_scripted", tool)
    params = tool.parse_arguments(arguments)
    since = len(peer._asked_names)  # pyright: ignore[reportPrivateUsage]
    bits = (rng or random.Random(0)).getrandbits
    skipped = [0.0]  # seconds the clock jumped over, to the next timer

    def virtual() -> float:
        return clock() + skipped[0]

    opened = open_call(
        tool.program(params), tool.context(), journal=journal, clock=virtual, bits=bits
    )
    if isinstance(opened, CallMachine):
        machine = opened
        carrier = _Scripted(machine, peer)
        while True:
            commands = machine.commands()
            while commands:
                for command in commands:
                    carry_out(command, carrier)
                commands = machine.commands()
            if machine.outcome is not None or not carrier.timers:
                break
            key = min(carrier.timers, key=carrier.timers.__getitem__)
            deadline = carrier.timers.pop(key)
            skipped[0] += max(0.0, deadline - virtual())
            machine.timer_fired(key)
        outcome = machine.outcome
    else:
        outcome = opened
    unused = peer._unused(since)  # pyright: ignore[reportPrivateUsage]
    if unused is not None:
        try:
            warnings.warn(unused, ScriptNotUsed, stacklevel=2)
        except ScriptNotUsed as warning:  # -W error: it fails the call
            if not isinstance(outcome, Raised):
                raise
            outcome.error.add_note(str(warning))  # the call's own error first
    if isinstance(outcome, Returned):
        return outcome.value
    if isinstance(outcome, Raised):
        raise outcome.error
    raise InternalError(f"run_scripted ended without a result: {outcome!r}")


def _not_a_tool(runner: str, given: object) -> InvalidTool:
    name = getattr(given, "__name__", None)
    if callable(given) and isinstance(name, str):
        return InvalidTool(
            f"{runner} runs a tool, and {name!r} is a plain function: decorate "
            f"it with @tool"
        )
    return InvalidTool(
        f"{runner} runs a tool (a function decorated with @tool), got a "
        f"{type(given).__name__}"
    )


@final
class _Scripted:
    """Carries a machine's commands out at once, from a script (a
    :class:`~runtime.call.commands.Carrier`)."""

    __slots__ = ("machine", "peer", "timers")

    def __init__(self, machine: CallMachine, peer: ScriptedPeer) -> None:
        self.machine = machine
        self.peer = peer
        self.timers: dict[str, float] = {}  # set: key -> deadline

    def ask(self, command: AskPeer) -> None:
        key, question = command.key, command.question
        self._settle(key, functools.partial(self.peer.reply_for, key, question))

    def run_step(self, command: RunStep) -> None:
        perform = functools.partial(
            perform_step_now, command.step, command.idempotency, self.peer.step_stub
        )
        self._settle(command.key, perform)

    def notify(self, command: Notify) -> None:
        self.peer.notices.append((command.key, command.notice))

    def persist(self, command: Persist) -> None:
        self.machine.persisted()

    def withdraw(self, command: WithdrawQuestion) -> None:
        pass  # answered at once: nothing is outstanding

    def set_timer(self, command: SetTimer) -> None:
        self.timers[command.key] = command.deadline  # fired once all else waits

    def cancel_timer(self, command: CancelTimer) -> None:
        self.timers.pop(command.key, None)

    def finish(self, command: Finish) -> None:
        self.timers.clear()

    def _settle(self, key: str, compute: Callable[[], Any]) -> None:
        machine = self.machine
        if not machine.is_pending(key):
            return  # withdrawn by an earlier answer in this batch
        try:
            reply = compute()
        except Exception as exc:
            machine.fail(key, exc)
        else:
            machine.answer(key, reply)


@final
class HeldPeer:
    """An executor that holds each question until the test releases it.

    ``await peer.wait_pending(n)`` waits until ``n`` questions are held;
    ``peer.release(key, reply)`` answers one (an exception instance is raised
    into the tool instead). Questions withdrawn by the runtime are listed in
    ``withdrawn``; every question ever asked is in ``asked``.
    """

    def __init__(self) -> None:
        self.asked: list[Asked] = []
        self.withdrawn: list[str] = []
        self.notices: list[tuple[str, Notice]] = []
        self._held: dict[str, tuple[PeerQuestion[Any], trio.Event]] = {}
        self._answers: dict[str, Any] = {}
        self._changed = trio.Event()

    @property
    def held(self) -> dict[str, PeerQuestion[Any]]:
        """The questions currently waiting, by key (in the order asked)."""
        return {k: q for k, (q, _e) in self._held.items()}

    async def wait_pending(self, count: int) -> None:
        """Wait until at least ``count`` questions are held."""
        while len(self._held) < count:
            await self._changed.wait()

    def release(self, key: str, answer: Any) -> None:
        """Answer the held question ``key`` with a reply or an exception."""
        _question, event = self._held.pop(key)
        self._answers[key] = answer
        event.set()

    async def perform(self, key: str, question: PeerQuestion[Any]) -> Any:
        self.asked.append(Asked(key, question))
        event = trio.Event()
        self._held[key] = (question, event)
        self._signal()
        try:
            await event.wait()
        except trio.Cancelled:
            self._held.pop(key, None)
            self.withdrawn.append(key)
            self._signal()
            raise
        answer = self._answers.pop(key)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    async def notify(self, key: str, notice: Notice) -> None:
        self.notices.append((key, notice))

    def _signal(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

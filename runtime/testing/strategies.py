"""Hypothesis strategies for answers: what a model, a user or a peer might say.

* :func:`from_schema` generates JSON values for a (common subset of) JSON Schema.
* :func:`sample_replies` generates model replies for a ``Sample``: valid ones
  (text; tool calls to offered tools — only the named one under a
  ``NamedTool`` choice — with schema-valid arguments; structured output as a
  ``__schema__`` call, possibly beside calls to other tools, or as JSON
  prose), or invalid ones (calls to unknown tools, calls to offered tools with
  arguments that break the tool's input schema, structured data that breaks
  the schema, prose). Models make parallel calls and call tools they were not
  offered: a structured-output request may be answered with one or several
  calls to tools the conversation used before or that never existed, with or
  without a ``__schema__`` call among them.
* :func:`elicit_replies` generates accept (with valid, or invalid, content),
  decline and cancel.
* :func:`failures` generates peer failures; :func:`answers` mixes them in.
* :func:`step_results` generates what a step's function may give: values of
  its return type, or exceptions to raise; script them with
  ``ScriptedPeer(steps={name: [...]})``.
* :func:`run_in_drawn_order` runs a tool with a :class:`HeldPeer` and releases
  its questions in an order drawn from ``st.data()``.
* :func:`delays` generates how long a peer takes to answer; :class:`DelayedPeer`
  wraps an executor (a :class:`ScriptedPeer`, a :class:`HeldPeer`) so each
  question is answered after its delay, on trio's clock (run under
  ``trio.testing.MockClock(autojump_threshold=0)`` to wait no real time).

This module needs ``hypothesis`` (the ``test`` extra). Generating values from a
JSON Schema, which the reply strategies build on, is ``_schema_values``'s;
:func:`from_schema` is re-exported from there.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, Protocol, cast, final

import trio
import trio.testing
from hypothesis import strategies as st
from pydantic import BaseModel

from ..effects.base import Notice, PeerQuestion
from ..elicitation.effects import Elicit, ElicitUrl, ListRoots
from ..errors import PeerError, RequestTimeout
from ..messages import SCHEMA_TOOL_NAME, NamedTool, Text, ToolSpec, ToolUse
from ..replies import ElicitReply, Root, RootsReply, SampleReply
from ..sampling.effect import Sample
from ..steps.spelling import adapter_of as _step_adapter
from ..tools.value import Tool
from ._peers import HeldPeer
from ._schema_values import from_schema as from_schema
from ._schema_values import invalid_arguments, invalid_for, texts

__all__ = [
    "DelayedPeer",
    "answers",
    "delays",
    "elicit_replies",
    "failures",
    "from_schema",
    "run_in_drawn_order",
    "sample_replies",
    "step_results",
]

_ids = st.integers(min_value=0, max_value=10**9).map(lambda n: f"call_{n}")


# --- replies ------------------------------------------------------------------------


def _reply(*blocks: Any, stop: str = "endTurn") -> SampleReply:
    return SampleReply(content=tuple(blocks), model="hypothesis", stop_reason=stop)


def _calls(name: str, inputs: st.SearchStrategy[Any]) -> st.SearchStrategy[ToolUse]:
    def build(call_id: str, data: Any) -> ToolUse:
        return ToolUse(call_id, name, data)

    return st.builds(build, _ids, inputs)


def _called(uses: list[ToolUse]) -> SampleReply:
    return _reply(*uses, stop="toolUse")


def sample_replies(
    sample: Sample[Any], *, valid: bool | None = None
) -> st.SearchStrategy[SampleReply]:
    """Replies a model might give to ``sample``: valid, invalid, or both (None)."""
    parts: list[st.SearchStrategy[SampleReply]] = []
    if valid is not False:
        parts.append(_valid_sample_replies(sample))
    if valid is not True:
        parts.append(_invalid_sample_replies(sample))
    return st.one_of(parts)


def _callable_tools(sample: Sample[Any]) -> list[ToolSpec]:
    """The tools a valid reply may call: the named one, or every offered one."""
    choice = sample.tool_choice
    if isinstance(choice, NamedTool):
        return [t for t in sample.tools if t.name == choice.name]
    return list(sample.tools)


def _foreign_calls(sample: Sample[Any]) -> st.SearchStrategy[ToolUse]:
    """Calls to tools ``sample`` does not offer: tools its conversation used
    before (a model that keeps calling them), and made-up ones."""
    offered = {t.name for t in sample.tools} | {SCHEMA_TOOL_NAME}
    earlier = sorted(
        {
            block.name
            for message in sample.messages
            for block in message.content
            if isinstance(block, ToolUse) and block.name not in offered
        }
    )
    made_up = st.from_regex(r"\A[a-z]{1,8}\Z").filter(lambda n: n not in offered)
    names = st.sampled_from(earlier) | made_up if earlier else made_up
    return names.flatmap(lambda n: _calls(n, st.just({})))


def _beside(
    call: st.SearchStrategy[ToolUse], others: st.SearchStrategy[ToolUse]
) -> st.SearchStrategy[SampleReply]:
    """``call`` among zero to two ``others``, at any place (ids distinct)."""

    def turn(mine: ToolUse, rest: list[ToolUse], at: int) -> list[ToolUse]:
        return [*rest[:at], mine, *rest[at:]]

    turns = st.builds(
        turn, call, st.lists(others, max_size=2), st.integers(min_value=0, max_value=2)
    )
    return turns.filter(lambda uses: len({u.id for u in uses}) == len(uses)).map(
        _called
    )


def _valid_sample_replies(sample: Sample[Any]) -> st.SearchStrategy[SampleReply]:
    schema_tool = sample.schema_tool
    if schema_tool is not None:
        data = from_schema(schema_tool.input_schema)
        as_call = _calls(SCHEMA_TOOL_NAME, data)
        as_prose = data.map(lambda d: _reply(Text(json.dumps(d))))
        return (
            as_call.map(lambda u: _called([u]))
            | as_prose
            | _beside(as_call, _foreign_calls(sample))
        )
    if sample.tools and sample.tool_choice != "none":
        calls = st.one_of(
            [
                _calls(tool.name, from_schema(tool.input_schema))
                for tool in _callable_tools(sample)
            ]
        )
        return st.lists(calls, min_size=1, max_size=3, unique_by=lambda u: u.id).map(
            _called
        )
    return texts.map(lambda t: _reply(Text(t)))


def _invalid_sample_replies(sample: Sample[Any]) -> st.SearchStrategy[SampleReply]:
    prose = texts.filter(lambda t: "{" not in t).map(lambda t: _reply(Text(t)))
    schema_tool = sample.schema_tool
    if schema_tool is not None:
        bad = invalid_for(schema_tool.input_schema).filter(
            lambda v: isinstance(v, dict)
        )
        bad_call = _calls(SCHEMA_TOOL_NAME, bad)
        foreign = _foreign_calls(sample)
        return (
            prose
            | bad_call.map(lambda u: _called([u]))
            | _beside(foreign, foreign)  # no __schema__ call at all
            | _beside(bad_call, foreign | bad_call)
        )
    if sample.tools:
        names = {t.name for t in sample.tools}
        unknown_names = st.from_regex(r"\A[a-z]{1,8}\Z").filter(
            lambda n: n not in names
        )
        bad_calls = [unknown_names.flatmap(lambda n: _calls(n, st.just({})))]
        tools = _callable_tools(sample)
        for tool in tools:
            bad_arguments = invalid_arguments(tool.input_schema)
            if bad_arguments is not None:
                bad_calls.append(_calls(tool.name, bad_arguments))
        good_calls = st.one_of(
            [_calls(tool.name, from_schema(tool.input_schema)) for tool in tools]
        )

        def turn(good: list[ToolUse], bad: ToolUse, at: int) -> list[ToolUse]:
            return [*good[:at], bad, *good[at:]]

        def distinct(uses: list[ToolUse]) -> bool:
            return len({u.id for u in uses}) == len(uses)

        # One bad call, alone or among good ones: the whole turn is unusable.
        turns = st.builds(
            turn,
            st.lists(good_calls, max_size=2),
            st.one_of(bad_calls),
            st.integers(min_value=0, max_value=2),
        ).filter(distinct)
        return prose | turns.map(_called)
    return st.just(_reply(stop="maxTokens"))


def elicit_replies(
    elicit: Elicit[Any], *, valid: bool | None = None
) -> st.SearchStrategy[ElicitReply]:
    """accept (with valid/invalid content), decline and cancel for ``elicit``."""
    refusals = st.sampled_from(
        [ElicitReply(action="decline"), ElicitReply(action="cancel")]
    )
    parts: list[st.SearchStrategy[ElicitReply]] = []
    if valid is not False:
        content = from_schema(elicit.requested_schema).filter(
            lambda c: _model_accepts(elicit.model, c)
        )
        parts.append(content.map(lambda c: ElicitReply(action="accept", content=c)))
        parts.append(refusals)
    if valid is not True:
        bad = invalid_for(elicit.requested_schema).filter(lambda v: isinstance(v, dict))
        parts.append(bad.map(lambda c: ElicitReply(action="accept", content=c)))
    return st.one_of(parts)


def _model_accepts(model: type[BaseModel], content: Any) -> bool:
    try:
        model.model_validate(content)
    except ValueError:
        return False
    return True


def failures() -> st.SearchStrategy[BaseException]:
    """Ways a peer fails a question: JSON-RPC errors and timeouts."""
    peer_errors = st.builds(
        PeerError,
        st.sampled_from([-1, -32600, -32602, -32603]),
        st.text(min_size=1, max_size=20),
    )
    return peer_errors | st.just(RequestTimeout("the peer did not answer in time"))


_roots = st.lists(
    st.builds(
        Root,
        st.from_regex(r"\Afile:///[a-z]{1,8}(/[a-z]{1,8}){0,2}\Z"),
        st.none() | st.text(min_size=1, max_size=12),
    ),
    max_size=3,
).map(RootsReply)


def answers(question: PeerQuestion[Any]) -> st.SearchStrategy[Any]:
    """Anything that could come back for ``question``: replies or failures."""
    if isinstance(question, Sample):
        replies: st.SearchStrategy[Any] = sample_replies(cast(Sample[Any], question))
    elif isinstance(question, Elicit):
        replies = elicit_replies(cast(Elicit[Any], question))
    elif isinstance(question, ElicitUrl):
        replies = st.sampled_from(
            [ElicitReply(action=a) for a in ("accept", "decline", "cancel")]
        )
    elif isinstance(question, ListRoots):
        replies = _roots
    else:
        raise TypeError(f"answers: no strategy for {question!r}")
    return replies | failures()


def step_results(fn: Callable[..., Any]) -> st.SearchStrategy[Any]:
    """What a step of ``fn`` may give: a value of its return annotation (made
    from the annotation's JSON Schema and read back through it), or an
    exception its attempt raises (which the step records as ``StepFailed``)."""
    adapter = _step_adapter(fn)
    values = from_schema(adapter.json_schema(mode="serialization")).map(
        adapter.validate_python
    )
    kinds: list[type[Exception]] = [
        ValueError,
        ConnectionError,
        TimeoutError,
        RuntimeError,
    ]
    raised = st.builds(_raised, st.sampled_from(kinds), st.text(max_size=20))
    return values | raised


def _raised(kind: type[Exception], message: str) -> Exception:
    return kind(message)


# --- delays -------------------------------------------------------------------------


def delays(*, max_seconds: float = 10.0) -> st.SearchStrategy[float]:
    """Seconds a peer takes to answer one question: 0 (at once) to ``max_seconds``.

    Shrinks towards 0. Give them to a :class:`DelayedPeer`.
    """
    return st.just(0.0) | st.floats(
        min_value=0.0, max_value=max_seconds, allow_nan=False, allow_infinity=False
    )


class _Executor(Protocol):
    async def perform(self, key: str, question: PeerQuestion[Any]) -> Any: ...

    async def notify(self, key: str, notice: Notice) -> None: ...


@final
class DelayedPeer:
    """An executor that answers through ``peer`` after a delay per question.

    ``delay(key, question)`` gives the seconds to wait before ``peer`` is asked,
    for instance ``lambda key, q: data.draw(delays(), label=key)``. The wait is
    a ``trio.sleep``; under ``MockClock(autojump_threshold=0)`` it costs no real
    time, and the clock shows how long the call took. Withdrawing a question
    cancels its wait. ``delayed`` records each key's delay. Notices pass through
    at once.
    """

    def __init__(
        self,
        peer: _Executor,
        delay: Callable[[str, PeerQuestion[Any]], float],
    ) -> None:
        self.peer = peer
        self._delay = delay
        self.delayed: dict[str, float] = {}

    async def perform(self, key: str, question: PeerQuestion[Any]) -> Any:
        seconds = self._delay(key, question)
        self.delayed[key] = seconds
        await trio.sleep(seconds)
        return await self.peer.perform(key, question)

    async def notify(self, key: str, notice: Notice) -> None:
        await self.peer.notify(key, notice)


# --- orderings ----------------------------------------------------------------------


async def run_in_drawn_order(
    tool: Tool[Any, Any],
    arguments: Mapping[str, Any],
    data: st.DataObject,
    answer: Callable[[PeerQuestion[Any]], Any] | None = None,
) -> Any:
    """Run ``tool``, releasing its held questions in an order drawn from ``data``.

    Each answer is ``answer(question)`` or, by default, drawn from
    :func:`answers`. Returns the tool's result; raises what the tool raises.
    """
    from ..call.driver import run

    peer = HeldPeer()
    outcome: list[Any] = []
    failure: list[BaseException] = []

    async def call() -> None:
        try:
            outcome.append(await run(tool, arguments, peer))
        except Exception as error:
            failure.append(error)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(call)
        while True:
            await trio.testing.wait_all_tasks_blocked()
            if outcome or failure or not peer.held:
                break
            key = data.draw(st.sampled_from(sorted(peer.held)), label="release")
            question = peer.held[key]
            reply = answer(question) if answer else data.draw(answers(question))
            peer.release(key, reply)
    if failure:
        raise failure[0]
    return outcome[0] if outcome else None

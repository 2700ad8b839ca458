"""Hypothesis strategies for answers: what a model, a user or a peer might say.

* :func:`from_schema` generates JSON values for a (common subset of) JSON Schema.
* :func:`sample_replies` generates model replies for a ``Sample``: valid ones
  (text; tool calls to offered tools — only the named one under a
  ``NamedTool`` choice — with schema-valid arguments; structured output as a
  ``__schema__`` call or as JSON prose), or invalid ones (calls to unknown
  tools, calls to offered tools with arguments that break the tool's input
  schema, structured data that breaks the schema, prose).
* :func:`elicit_replies` generates accept (with valid, or invalid, content),
  decline and cancel.
* :func:`failures` generates peer failures; :func:`answers` mixes them in.
* :func:`run_in_drawn_order` runs a tool with a :class:`HeldPeer` and releases
  its questions in an order drawn from ``st.data()``.
* :func:`delays` generates how long a peer takes to answer; :class:`DelayedPeer`
  wraps an executor (a :class:`ScriptedPeer`, a :class:`HeldPeer`) so each
  question is answered after its delay, on trio's clock (run under
  ``trio.testing.MockClock(autojump_threshold=0)`` to wait no real time).

This module needs ``hypothesis`` (the ``test`` extra).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from typing import Any, Protocol, cast, final

import trio
import trio.testing
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from pydantic import BaseModel

from .._effect_base import Notice, PeerQuestion
from .._elicit_effects import Elicit, ElicitUrl, ListRoots
from .._sample_effect import Sample
from .._tool import Tool
from ..errors import PeerError, RequestTimeout
from ..messages import SCHEMA_TOOL_NAME, NamedTool, Text, ToolSpec, ToolUse
from ..replies import ElicitReply, Root, RootsReply, SampleReply
from ._peers import HeldPeer

__all__ = [
    "DelayedPeer",
    "answers",
    "delays",
    "elicit_replies",
    "failures",
    "from_schema",
    "run_in_drawn_order",
    "sample_replies",
]

_ids = st.integers(min_value=0, max_value=10**9).map(lambda n: f"call_{n}")
_texts = st.text(max_size=40)


# --- JSON Schema -> values ------------------------------------------------------------


def from_schema(schema: Mapping[str, Any]) -> st.SearchStrategy[Any]:
    """Values valid against ``schema`` (a common subset; results are checked)."""
    is_valid = _checker(schema)
    defs: Mapping[str, Any] = schema.get("$defs", {})
    return _values(schema, defs).filter(is_valid)


def _checker(schema: Mapping[str, Any]) -> Callable[[Any], bool]:
    validator = Draft202012Validator(dict(schema))

    def is_valid(value: Any) -> bool:
        return bool(validator.is_valid(value))  # pyright: ignore[reportUnknownMemberType]

    return is_valid


def _values(
    schema: Mapping[str, Any], defs: Mapping[str, Any]
) -> st.SearchStrategy[Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str):
        return _values(defs[ref.rsplit("/", 1)[-1]], defs)
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(list(schema["enum"]))
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = cast(list[Mapping[str, Any]], schema[key])
            return st.one_of([_values(o, defs) for o in options])
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = cast(list[str], kind)
        return st.one_of([_values({**schema, "type": k}, defs) for k in kinds])
    maker = _MAKERS.get(str(kind))
    return maker(schema, defs) if maker else _any_json()


def _string(
    schema: Mapping[str, Any], defs: Mapping[str, Any]
) -> st.SearchStrategy[Any]:
    fmt = schema.get("format")
    if fmt == "date":
        return st.dates().map(lambda d: d.isoformat())
    if fmt == "date-time":
        return st.datetimes().map(lambda d: d.isoformat() + "Z")
    if fmt == "email":
        return st.from_regex(r"\A[a-z]{1,8}@[a-z]{1,8}\.com\Z")
    if fmt == "uri":
        return st.from_regex(r"\Ahttps://[a-z]{1,8}\.example/[a-z]{0,8}\Z")
    return st.text(
        min_size=schema.get("minLength", 0),
        max_size=schema.get("maxLength", max(20, schema.get("minLength", 0))),
    )


def _number(
    schema: Mapping[str, Any], defs: Mapping[str, Any]
) -> st.SearchStrategy[Any]:
    low = schema.get("minimum", schema.get("exclusiveMinimum"))
    high = schema.get("maximum", schema.get("exclusiveMaximum"))
    if schema.get("type") == "integer":
        return st.integers(
            min_value=None if low is None else math.ceil(low),
            max_value=None if high is None else math.floor(high),
        )
    return st.floats(
        min_value=low, max_value=high, allow_nan=False, allow_infinity=False
    )


def _array(
    schema: Mapping[str, Any], defs: Mapping[str, Any]
) -> st.SearchStrategy[Any]:
    items = _values(schema.get("items", {}), defs)
    return st.lists(
        items,
        min_size=schema.get("minItems", 0),
        max_size=schema.get("maxItems", 4),
        unique=bool(schema.get("uniqueItems")),
    )


def _object(
    schema: Mapping[str, Any], defs: Mapping[str, Any]
) -> st.SearchStrategy[Any]:
    properties = cast(Mapping[str, Mapping[str, Any]], schema.get("properties", {}))
    required = set(cast(list[str], schema.get("required", [])))
    return st.fixed_dictionaries(
        {k: _values(v, defs) for k, v in properties.items() if k in required},
        optional={
            k: _values(v, defs) for k, v in properties.items() if k not in required
        },
    )


def _any_json() -> st.SearchStrategy[Any]:
    scalars = st.none() | st.booleans() | st.integers() | _texts
    return st.recursive(
        scalars,
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(_texts, inner, max_size=3)
        ),
        max_leaves=6,
    )


_MAKERS: dict[
    str, Callable[[Mapping[str, Any], Mapping[str, Any]], st.SearchStrategy[Any]]
] = {
    "string": _string,
    "integer": _number,
    "number": _number,
    "boolean": lambda schema, defs: st.booleans(),
    "null": lambda schema, defs: st.none(),
    "array": _array,
    "object": _object,
}


def _invalid_for(schema: Mapping[str, Any]) -> st.SearchStrategy[Any]:
    is_valid = _checker(schema)
    return _any_json().filter(lambda v: not is_valid(v))


# Values of every JSON type, and out-of-range ones: whatever a property's schema
# is, those it rejects are wrong types or out of range for it.
_PROBES: tuple[Any, ...] = (
    None,
    True,
    -1,
    0,
    10**9,
    1.5,
    "",
    "x",
    "x" * 1000,
    [],
    [None],
    {},
    {"": None},
)


def _invalid_arguments(
    schema: Mapping[str, Any],
) -> st.SearchStrategy[dict[str, Any]] | None:
    """Argument objects that break ``schema``, or None if it accepts every object.

    Each starts from valid arguments and breaks one thing: a required property
    is left out, a property gets a value its schema rejects (a wrong type, out
    of range), or an unknown property is added where none are allowed. Every
    value is checked against ``schema`` (jsonschema) to be really invalid.
    """
    is_valid = _checker(schema)
    defs: Mapping[str, Any] = schema.get("$defs", {})
    properties = cast(Mapping[str, Mapping[str, Any]], schema.get("properties", {}))
    required = cast(list[str], schema.get("required", []))
    valid = from_schema(schema).filter(lambda v: isinstance(v, dict))
    breaks: list[st.SearchStrategy[dict[str, Any]]] = []

    def without(name: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
        return lambda args: {k: v for k, v in args.items() if k != name}

    def with_value(name: str) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
        return lambda args, value: {**args, name: value}

    breaks.extend(valid.map(without(name)) for name in required)
    for name, sub in properties.items():
        accepts = _checker({**sub, "$defs": defs})
        wrong = [p for p in _PROBES if not accepts(p)]
        if wrong:
            breaks.append(st.builds(with_value(name), valid, st.sampled_from(wrong)))
    if schema.get("additionalProperties") is False:
        unknown = st.from_regex(r"\A[a-z]{1,8}\Z").filter(lambda n: n not in properties)

        def with_unknown(args: dict[str, Any], name: str) -> dict[str, Any]:
            return {**args, name: 1}

        breaks.append(st.builds(with_unknown, valid, unknown))
    if not breaks:
        return None
    return st.one_of(breaks).filter(lambda args: not is_valid(args))


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


def _valid_sample_replies(sample: Sample[Any]) -> st.SearchStrategy[SampleReply]:
    schema_tool = sample.schema_tool
    if schema_tool is not None:
        data = from_schema(schema_tool.input_schema)
        as_call = _calls(SCHEMA_TOOL_NAME, data).map(lambda u: _called([u]))
        as_prose = data.map(lambda d: _reply(Text(json.dumps(d))))
        return as_call | as_prose
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
    return _texts.map(lambda t: _reply(Text(t)))


def _invalid_sample_replies(sample: Sample[Any]) -> st.SearchStrategy[SampleReply]:
    prose = _texts.filter(lambda t: "{" not in t).map(lambda t: _reply(Text(t)))
    schema_tool = sample.schema_tool
    if schema_tool is not None:
        bad = _invalid_for(schema_tool.input_schema).filter(
            lambda v: isinstance(v, dict)
        )
        return prose | _calls(SCHEMA_TOOL_NAME, bad).map(lambda u: _called([u]))
    if sample.tools:
        names = {t.name for t in sample.tools}
        unknown_names = st.from_regex(r"\A[a-z]{1,8}\Z").filter(
            lambda n: n not in names
        )
        bad_calls = [unknown_names.flatmap(lambda n: _calls(n, st.just({})))]
        tools = _callable_tools(sample)
        for tool in tools:
            bad_arguments = _invalid_arguments(tool.input_schema)
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
        bad = _invalid_for(elicit.requested_schema).filter(
            lambda v: isinstance(v, dict)
        )
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
    from .._driver import run

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

"""Turning a model's reply into a ``SampleResult``, and correcting it on retry.

Structured output is read from the ``__schema__`` tool call's input when the
client honoured the meta-tool, and otherwise from JSON in the reply's text (a
naive client that passed the tool to a model that answered in prose, possibly
inside a code fence). Either way the data is validated against the pydantic
model; failure is a ``ParseError`` value, never an exception.

The retry helpers build the *corrective* conversation that ``sample_schema`` and
``sample_tools`` send next: the failed answer followed by what was wrong with it,
always in MCP-valid shape, whatever the model sent: every tool use of the answer
(one or several, to a tool offered or not) is answered by an error tool result
saying what was wrong with it; a prose answer is followed by a user message
with the hint.

Structured output takes the first ``__schema__`` call whose input validates;
its exchange keeps that call alone (with the reply's text), since the other
calls were neither read nor run.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

import attrs
from pydantic import BaseModel, ValidationError

from ..effects.canonical import canonical_json
from ..messages import (
    RAW_ARGUMENTS_KEY,
    SCHEMA_TOOL_NAME,
    Message,
    NamedTool,
    Text,
    ToolCall,
    ToolChoice,
    ToolResult,
    ToolSpec,
    ToolUse,
)
from ..replies import SampleReply
from ..results import Exchange, ParseError, SampleResult
from ..wire.schemas import offline_validator

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError as SchemaError
    from jsonschema.protocols import Validator

P = TypeVar("P")

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def resolve_sample(effect: Any, reply: SampleReply, key: str) -> SampleResult[Any]:
    """The result ``effect`` (a ``Sample``) yields for ``reply``."""
    reply = _unique_ids(reply, effect.messages, key)
    if effect.schema is None:
        return _plain(effect, reply)
    return _structured(effect, reply, key)


def _unique_ids(
    reply: SampleReply, history: Sequence[Message], key: str
) -> SampleReply:
    """``reply`` with tool-use ids unique in the conversation it continues.

    A model or client may reuse an id (or send the same id twice); kept as is,
    the conversation built from it would break MCP's unique-id rule and the next
    sample (e.g. a retry) would be refused. Ids only pair uses with results
    inside this conversation, so a colliding one is renamed, deterministically.
    """
    if not any(isinstance(block, ToolUse) for block in reply.content):
        return reply  # no ids to clash (most replies)
    seen = {b.id for m in history for b in m.content if isinstance(b, ToolUse)}
    blocks: list[Any] = []
    changed = False
    for block in reply.content:
        if isinstance(block, ToolUse):
            if block.id in seen:
                block = attrs.evolve(block, id=_fresh_id(block.id, key, seen))
                changed = True
            seen.add(block.id)
        blocks.append(block)
    return attrs.evolve(reply, content=tuple(blocks)) if changed else reply


def _fresh_id(original: str, key: str, seen: set[str]) -> str:
    base = f"{original}_{re.sub(r'[^A-Za-z0-9_-]', '_', key)}"
    candidate, n = base, 1
    while candidate in seen:
        n += 1
        candidate = f"{base}_{n}"
    return candidate


def _response(reply: SampleReply) -> Message:
    return Message("assistant", reply.content or (Text(""),))


def _plain(effect: Any, reply: SampleReply) -> SampleResult[Any]:
    calls = tuple(ToolCall(u.id, u.name, dict(u.input)) for u in reply.tool_uses)
    return SampleResult(
        text=reply.text,
        content=reply.content,
        model=reply.model,
        stop_reason="toolUse" if calls else reply.stop_reason,
        tool_calls=calls,
        usage=reply.usage,
        exchange=functools.partial(_plain_exchange, effect.messages, reply),
    )


def _plain_exchange(sent: tuple[Message, ...], reply: SampleReply) -> Exchange:
    response = _response(reply)
    return Exchange(messages=(sent[-1], response), history=(*sent, response))


def _structured(effect: Any, reply: SampleReply, key: str) -> SampleResult[Any]:
    model = cast("type[BaseModel]", effect.schema)
    uses = list(reply.tool_uses)
    parsed: BaseModel | None = None
    error: ParseError | None = None
    chosen: ToolUse | None = None
    problems: dict[str, str] = {}
    for use in uses:
        if use.name != SCHEMA_TOOL_NAME:
            problems[use.id] = (
                f"there is no tool named {use.name!r} here; reply by calling "
                f"{SCHEMA_TOOL_NAME} with arguments matching its schema"
            )
            continue
        data: Any = dict(use.input)
        found, problem = _validate(model, data, canonical_json(data).decode())
        if found is not None:
            parsed, chosen = found, use
            break
        assert problem is not None
        problems[use.id] = problem.message
        error = error or problem
    if chosen is None and error is None:
        # No __schema__ call: JSON in the text is the answer (a naive client).
        parsed, error = _from_text(model, reply.text)
        if parsed is None and uses:
            names = ", ".join(sorted({u.name for u in uses}))
            error = ParseError(
                message=f"called {names} instead of {SCHEMA_TOOL_NAME}",
                raw_text=reply.text,
            )
    if parsed is not None:
        error = None
    request: Message = effect.messages[-1]
    if parsed is None and uses:
        messages = _answered(request, reply, uses, problems)
    else:
        messages = _structured_messages(reply, chosen, parsed, error, key, request)
    return SampleResult(
        text=reply.text,
        content=reply.content,
        model=reply.model,
        stop_reason=reply.stop_reason,
        parsed=parsed,
        parse_error=error,
        usage=reply.usage,
        exchange=Exchange(
            messages=messages,
            history=(*effect.messages, *messages[1:]),
            parsed=parsed,
        ),
    )


def _answered(
    request: Message,
    reply: SampleReply,
    uses: Sequence[ToolUse],
    problems: Mapping[str, str],
) -> tuple[Message, ...]:
    """A failed answer that used tools, each use answered with what was wrong."""
    answers = tuple(ToolResult(use.id, problems[use.id], is_error=True) for use in uses)
    return (request, _response(reply), Message("user", answers))


def _structured_messages(
    reply: SampleReply,
    use: ToolUse | None,
    parsed: BaseModel | None,
    error: ParseError | None,
    key: str,
    request: Message,
) -> tuple[Message, ...]:
    if use is not None:
        texts = tuple(b for b in reply.content if isinstance(b, Text) and b.text)
        response = Message("assistant", (*texts, use))
    elif parsed is not None:
        # Prose JSON from a naive client: record it as the tool call it stands for.
        use = ToolUse(
            "call_" + re.sub(r"[^A-Za-z0-9_-]", "_", key),
            SCHEMA_TOOL_NAME,
            parsed.model_dump(mode="json"),
        )
        response = Message("assistant", (use,))
    else:
        return (request, _response(reply))
    ack = ToolResult(
        use.id,
        "Received." if error is None else error.message,
        is_error=error is not None,
    )
    return (request, response, Message("user", (ack,)))


def _validate(
    model: type[BaseModel], data: Any, raw: str
) -> tuple[BaseModel | None, ParseError | None]:
    try:
        return model.model_validate(data), None
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '<root>'}: {e['msg']}"
            for e in exc.errors(include_url=False)
        )
        return None, ParseError(
            message=f"does not match {model.__name__}: {problems}", raw_text=raw
        )


def _from_text(
    model: type[BaseModel], text: str
) -> tuple[BaseModel | None, ParseError | None]:
    data = _json_in(text)
    if data is None:
        return None, ParseError(
            message=f"no JSON object found; expected a call to {SCHEMA_TOOL_NAME}",
            raw_text=text,
        )
    return _validate(model, data, text)


def _json_in(text: str) -> Any:
    candidates = [m.group(1) for m in _FENCE.finditer(text)]
    candidates.append(text)
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return cast("dict[str, Any]", value)
    return None


# --- retries ------------------------------------------------------------------------


def schema_retry_messages(result: SampleResult[Any]) -> tuple[Message, ...]:
    """The conversation to send after a structured answer failed to parse."""
    history = result.exchange.history
    if history[-1].role == "user":
        return history  # ends with the error tool_result naming the problem
    assert result.parse_error is not None
    hint = (
        f"That answer was not valid: {result.parse_error.message}. Reply by "
        f"calling the {SCHEMA_TOOL_NAME} tool with arguments matching its schema."
    )
    return (*history, Message.user(hint))


def tool_call_problems(
    calls: Sequence[ToolCall],
    tools: Sequence[ToolSpec],
    choice: ToolChoice | None = None,
) -> dict[str, str]:
    """What is wrong with each call (by id): an unknown tool, another tool than
    the one ``choice`` names, or invalid arguments."""
    by_name = {t.name: t for t in tools}
    problems: dict[str, str] = {}
    for call in calls:
        spec = by_name.get(call.name)
        if spec is None:
            problems[call.id] = (
                f"there is no tool named {call.name!r}; choose one of {sorted(by_name)}"
            )
            continue
        if isinstance(choice, NamedTool) and call.name != choice.name:
            problems[call.id] = (
                f"the tool to call is {choice.name!r}, not {call.name!r}"
            )
            continue
        if set(call.arguments) == {RAW_ARGUMENTS_KEY}:
            problems[call.id] = (
                f"the arguments for {call.name!r} were not valid JSON: "
                f"{str(call.arguments[RAW_ARGUMENTS_KEY])[:200]!r}"
            )
            continue
        error = _first_schema_error(spec.input_schema, call.arguments)
        if error is not None:
            problems[call.id] = f"invalid arguments for {call.name!r}: {error}"
    return problems


def tools_retry_messages(
    result: SampleResult[Any], problems: Mapping[str, str], tools: Sequence[ToolSpec]
) -> tuple[Message, ...]:
    """The conversation to send after ``sample_tools`` got no usable call:
    every call answered (a call to a tool not offered too: its result says
    there is no such tool, and which there are)."""
    history = result.exchange.history
    names = ", ".join(sorted(t.name for t in tools))
    if not result.tool_calls:
        return (*history, Message.user(f"You must call one of these tools: {names}."))
    answers = tuple(
        ToolResult(
            call.id,
            problems.get(call.id, "Not run: another call in this turn was invalid."),
            is_error=True,
        )
        for call in result.tool_calls
    )
    return (*history, Message("user", answers))


def _first_schema_error(schema: Mapping[str, Any], instance: Any) -> str | None:
    from jsonschema.exceptions import best_match  # pyright: ignore[reportUnknownVariableType]

    errors = _validator(canonical_json(schema)).iter_errors(instance)
    error = cast("SchemaError | None", best_match(errors))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path) or "<root>"
    return f"{where}: {error.message}"


@functools.lru_cache(maxsize=256)
def _validator(schema_json: bytes) -> Validator:
    schema = json.loads(schema_json)
    return offline_validator(schema)

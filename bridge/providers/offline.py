"""``OfflineModel``: a deterministic stand-in model that needs no network.

Owns answering a ``SamplingRequest`` the way a (not very clever) model would,
from a seed and the request alone, so demos and tests replay exactly:

* structured output (``request.schema_tool``): a ``__schema__`` call whose
  input is generated from the schema;
* tools offered and tool choice not ``"none"``: one call to the named tool
  (``NamedTool``) or to a tool chosen at random, with arguments generated from
  its input schema. Under ``"auto"`` (or no choice), a conversation that ends
  with tool results is answered in text instead, so an agent loop ends;
* otherwise a short text reply saying it is the offline model.

Answers are valid against the schemas but know nothing of the task: in
tic-tac-toe any cell 0-8 is valid, so it sometimes picks an occupied one, and
the tool's retry path runs. The one concession to realism is that it does not
repeat arguments that were already answered with an error tool result in the
same conversation (it redraws a few times). Equal seeds and equal requests
give equal replies; different requests give different ones.

The schemas come from the peer, so what one reply may take is bounded (see
:mod:`._jsongen`: 100,000 characters and 10,000 values of arguments, 32 levels
deep, a million steps of work over all its redraws). A schema it cannot answer
within them, or at all (malformed, contradictory, a ``$ref`` loop that must go
on for ever), fails the request with one :class:`~runtime.errors.ProviderError`
(``provider="offline"``, ``code="unsatisfiable_schema"``) whose one line names
the tool, the place and the reason, as a provider refusing a request would.

It does no I/O and owns no schema logic beyond calling :mod:`._jsongen`.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from collections.abc import Sequence
from typing import Any, ClassVar, cast, final

import attrs

from runtime import codec
from runtime.errors import ProviderError
from runtime.messages import (
    SCHEMA_TOOL_NAME,
    Message,
    NamedTool,
    Text,
    ToolResult,
    ToolSpec,
    ToolUse,
    Usage,
)
from runtime.replies import SampleReply
from runtime.requests import SamplingRequest

from ._jsongen import UNSATISFIABLE, SchemaValues

__all__ = ["OfflineModel"]

_REDRAWS = 20
_GIST_WORDS = 10
_CHARS_PER_TOKEN = 4
_OPENINGS = (
    "Offline model here.",
    "This is the offline model speaking.",
    "(offline model)",
)
_CLOSINGS = (
    "keep it simple and check the result.",
    "start with the smallest step that could work.",
    "yes, that sounds reasonable.",
    "nothing to add; I have no network access.",
    "I'd go with the most direct option.",
)


@final
@attrs.frozen
class OfflineModel:
    """A :class:`~bridge.providers.Provider` that answers without a network.

    ``OfflineModel(seed)`` is what ``provider_from_spec("offline:<seed>")``
    builds (``"offline"`` means seed 0). Its replies name the model ``offline``
    (seed 0) or ``offline:<seed>``, so the name is also a spec for it.
    """

    supports_tools: ClassVar[bool] = True  # it answers tool choices too

    seed: int = 0

    @property
    def name(self) -> str:
        """The model name in replies: ``offline`` or ``offline:<seed>``."""
        return "offline" if self.seed == 0 else f"offline:{self.seed}"

    async def complete(self, request: SamplingRequest) -> SampleReply:
        """The offline model's reply to ``request`` (never waits).

        Raises:
            ProviderError: ``code`` ``"unsatisfiable_schema"``: a tool's input
                schema (or the output schema) cannot be answered within the
                bounds, or at all.
        """
        return self.reply(request)

    def reply(self, request: SamplingRequest) -> SampleReply:
        """The reply to ``request``, synchronously (raises as :meth:`complete`)."""
        fingerprint = _fingerprint(request)
        rng = random.Random(_digest(self.seed, fingerprint))
        tool = _tool_to_call(request, rng)
        if tool is None:
            text, stop_reason = _text(request, rng)
            content: tuple[Text | ToolUse, ...] = (Text(text),)
            produced = text
        else:
            use = _call(tool, request, rng)
            content, stop_reason = (use,), "toolUse"
            produced = json.dumps(dict(use.input), sort_keys=True)
        usage = Usage(_tokens(fingerprint), _tokens(produced))
        return SampleReply(
            content=content, model=self.name, stop_reason=stop_reason, usage=usage
        )


# --- what to answer -------------------------------------------------------------------


def _tool_to_call(request: SamplingRequest, rng: random.Random) -> ToolSpec | None:
    schema_tool = request.schema_tool
    if schema_tool is not None:
        return schema_tool
    choice = request.tool_choice
    if not request.tools or choice == "none":
        return None
    if isinstance(choice, NamedTool):
        named = [t for t in request.tools if t.name == choice.name]
        if named:
            return named[0]
    if choice in (None, "auto") and _ends_with_tool_results(request.messages):
        return None
    return rng.choice(request.tools)


def _ends_with_tool_results(messages: Sequence[Message]) -> bool:
    last = messages[-1] if messages else None
    return last is not None and any(isinstance(b, ToolResult) for b in last.content)


def _call(tool: ToolSpec, request: SamplingRequest, rng: random.Random) -> ToolUse:
    messages = request.messages
    rejected = _rejected(messages)
    if tool.name == SCHEMA_TOOL_NAME:
        subject = "the output schema"
    else:
        subject = f"tool {json.dumps(tool.name[:64])}'s input schema"
    values = SchemaValues(tool.input_schema, subject=subject)  # one work budget
    arguments: Any = values.draw(rng)
    for _ in range(_REDRAWS - 1):
        if (tool.name, _canonical(arguments)) not in rejected:
            break
        try:
            arguments = values.draw(rng)
        except ProviderError:
            break  # the budget is spent: answer the last draw again
    if not isinstance(arguments, dict):
        arguments = {"value": arguments}  # the root was not an object schema
    return ToolUse(_fresh_id(messages, rng), tool.name, cast(dict[str, Any], arguments))


def _rejected(messages: Sequence[Message]) -> set[tuple[str, str]]:
    """(tool name, arguments) pairs answered with an error result so far."""
    uses = {b.id: b for m in messages for b in m.content if isinstance(b, ToolUse)}
    return {
        (uses[b.tool_use_id].name, _canonical(dict(uses[b.tool_use_id].input)))
        for m in messages
        for b in m.content
        if isinstance(b, ToolResult) and b.is_error and b.tool_use_id in uses
    }


def _fresh_id(messages: Sequence[Message], rng: random.Random) -> str:
    taken = {b.id for m in messages for b in m.content if isinstance(b, ToolUse)}
    while True:
        candidate = f"call_offline_{rng.getrandbits(48):012x}"
        if candidate not in taken:
            return candidate


def _text(request: SamplingRequest, rng: random.Random) -> tuple[str, str]:
    gist, closing = _gist(request.messages), rng.choice(_CLOSINGS)
    if gist:
        text = f'{rng.choice(_OPENINGS)} On "{gist}": {closing}'
    else:
        text = f"{rng.choice(_OPENINGS)} {closing[0].upper()}{closing[1:]}"
    for stop in request.stop_sequences:
        if stop and stop in text:
            return text[: text.index(stop)], "stopSequence"
    limit = request.max_tokens * _CHARS_PER_TOKEN
    if len(text) > limit:
        return text[:limit], "maxTokens"
    return text, "endTurn"


def _gist(messages: Sequence[Message]) -> str:
    users = [m for m in messages if m.role == "user" and m.text.strip()]
    if not users:
        return ""
    words = users[-1].text.split()
    if len(words) > _GIST_WORDS:
        return " ".join(words[:_GIST_WORDS]) + "..."
    return " ".join(words).rstrip(".!?:;,")


# --- determinism and usage ------------------------------------------------------------


def _fingerprint(request: SamplingRequest) -> str:
    try:
        return _canonical(_request_json(request))
    except (RecursionError, ValueError):  # nested past the stack; a huge number
        raise ProviderError(
            "the offline model cannot answer: the request cannot be written as "
            "JSON (it nests too deeply, or holds a number too long)",
            provider="offline",
            code=UNSATISFIABLE,
        ) from None


def _request_json(request: SamplingRequest) -> dict[str, Any]:
    choice = request.tool_choice
    prefs = request.model_preferences
    return {
        "messages": [codec.message_to_json(m) for m in request.messages],
        "systemPrompt": request.system_prompt,
        "maxTokens": request.max_tokens,
        "temperature": request.temperature,
        "stopSequences": list(request.stop_sequences),
        "modelPreferences": None if prefs is None else attrs.asdict(prefs),
        "includeContext": request.include_context,
        "tools": [[t.name, t.description, dict(t.input_schema)] for t in request.tools],
        "toolChoice": {"name": choice.name}
        if isinstance(choice, NamedTool)
        else choice,
        "metadata": None if request.metadata is None else dict(request.metadata),
    }


def _canonical(value: Any) -> str:
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=repr
    )


def _digest(seed: int, fingerprint: str) -> int:
    data = f"{seed}\n{fingerprint}".encode()
    return int.from_bytes(hashlib.sha256(data).digest(), "big")


def _tokens(text: str) -> int:
    return max(1, math.ceil(len(text) / _CHARS_PER_TOKEN))

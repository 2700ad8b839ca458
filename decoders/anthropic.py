"""Anthropic Messages response → ``SampleReply``, whole or streamed.

Owns reading a ``Message`` body (:func:`decode_response`) and accumulating raw
message stream events (:class:`StreamAccumulator`). Pure: SSE parsing and HTTP
live in ``bridge.providers``. Requests are built by ``encoders.anthropic``.

Mapping: ``text`` blocks become text, ``tool_use`` blocks become ``ToolUse``.
``thinking``, ``redacted_thinking`` and every other block type are continuity
data kept in the next block's ``meta`` under :data:`META_KEY` (see
``decoders._common``), so the encoder can send them back, signature intact.
``stop_reason`` ``end_turn`` → ``endTurn``, ``max_tokens`` and
``model_context_window_exceeded`` → ``maxTokens``, ``stop_sequence`` →
``stopSequence``, ``refusal`` → ``refusal``; others (``pause_turn``) pass
through. Input usage counts ``input_tokens`` plus both cache counters, which
Anthropic reports separately.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from runtime.errors import ProviderError, RemoteProtocolError
from runtime.messages import Block, Text, ToolUse, Usage
from runtime.replies import SampleReply

from ._common import (
    Continuity,
    JSONObject,
    arguments_object,
    finish_reply,
    lookup,
    malformed,
    model_name,
    obj,
    parse_arguments,
    stream_object,
    token_count,
)

__all__ = ["META_KEY", "StreamAccumulator", "decode_response"]

PROVIDER = "anthropic"

META_KEY = "io.yieldmcp/anthropic"
"""Block ``meta`` key holding Anthropic continuity data."""

_STOP: dict[str, str | None] = {
    "end_turn": "endTurn",
    "tool_use": "endTurn",
    "max_tokens": "maxTokens",
    "model_context_window_exceeded": "maxTokens",
    "stop_sequence": "stopSequence",
    "refusal": "refusal",
}
_INPUT_COUNTERS = (
    "input_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
)


def decode_response(
    body: Mapping[str, Any], *, structured: bool = False
) -> SampleReply:
    """The reply for a ``Message`` JSON body.

    Raises:
        RemoteProtocolError: the body is not a message.
    """
    with malformed(PROVIDER):
        continuity = Continuity(META_KEY)
        blocks: list[Block] = []
        for block in body["content"]:
            if block["type"] == "text":
                blocks.append(continuity.attach(Text(block["text"])))
            elif block["type"] == "tool_use":
                use = ToolUse(
                    block.get("id") or "",
                    block["name"],
                    arguments_object(block["input"]),
                )
                blocks.append(continuity.attach(use))
            else:
                continuity.hold(block)
        reason = body.get("stop_reason")
        return finish_reply(
            blocks + continuity.trailing(),
            model=model_name(body.get("model")),
            stop=lookup(_STOP, reason),
            usage=_usage(body.get("usage")),
            structured=structured,
            seed=body.get("id"),
        )


def _usage(usage: Mapping[str, Any] | None) -> Usage | None:
    if not usage:
        return None
    prompt = sum(token_count(usage.get(key)) for key in _INPUT_COUNTERS)
    return Usage(prompt, token_count(usage.get("output_tokens")))


@attrs.define
class StreamAccumulator:
    """Accumulates Messages stream events into one reply.

    Feed each SSE ``data`` payload, parsed. Content blocks are tracked by
    ``index``: text, thinking and signature deltas extend their block, and
    ``input_json_delta`` fragments are buffered per block and parsed at
    ``content_block_stop``, so the reply only ever holds whole calls.
    ``message_delta`` usage is cumulative and overwrites; ``ping`` is ignored.
    """

    structured: bool = False
    _message: JSONObject | None = attrs.field(default=None, init=False)
    _blocks: dict[int, JSONObject] = attrs.field(
        factory=dict[int, JSONObject], init=False
    )
    _json: dict[int, str] = attrs.field(factory=dict[int, str], init=False)
    _open: set[int] = attrs.field(factory=set[int], init=False)
    _stopped: bool = attrs.field(default=False, init=False)

    def feed(self, event: object) -> None:
        """Take one parsed stream event (any JSON: what is not an object is
        malformed).

        Raises:
            ProviderError: an ``error`` event.
            RemoteProtocolError: the event is malformed or out of order.
        """
        event = stream_object(event, PROVIDER, "event")
        kind = event.get("type")
        if kind == "error":
            error = obj(event.get("error"))
            code = error.get("type")
            raise ProviderError(
                str(error.get("message", "stream error")),
                provider=PROVIDER,
                code=code if isinstance(code, str) else None,
            )
        with malformed(PROVIDER):
            if kind == "message_start":
                self._message = dict(event["message"])
            elif kind == "content_block_start":
                index = event["index"]
                if type(index) is not int:  # blocks are put in order by it
                    raise TypeError(f"a block index is {index!r}")
                self._blocks[index] = dict(event["content_block"])
                self._open.add(index)
            elif kind == "content_block_delta":
                self._delta(event["index"], event["delta"])
            elif kind == "content_block_stop":
                self._stop_block(event["index"])
            elif kind == "message_delta":
                self._message_delta(event)
            elif kind == "message_stop":
                self._stopped = True

    def _delta(self, index: int, delta: Mapping[str, Any]) -> None:
        block = self._blocks[index]
        kind = delta["type"]
        if kind == "input_json_delta":
            self._json[index] = self._json.get(index, "") + delta["partial_json"]
        elif kind == "text_delta":
            block["text"] = block.get("text", "") + delta["text"]
        elif kind == "thinking_delta":
            block["thinking"] = block.get("thinking", "") + delta["thinking"]
        elif kind == "signature_delta":
            block["signature"] = delta["signature"]

    def _stop_block(self, index: int) -> None:
        if index not in self._open:  # stopping it again would reset a tool's input
            raise ValueError(f"content_block_stop for block {index}, which is not open")
        block = self._blocks[index]
        if block["type"] in ("tool_use", "server_tool_use"):
            block["input"] = parse_arguments(self._json.pop(index, "") or "{}")
        self._open.discard(index)

    def _message_delta(self, event: Mapping[str, Any]) -> None:
        message = self._require_message()
        message.update(obj(event.get("delta")))
        usage = dict(obj(message.get("usage")))
        usage.update(
            {k: v for k, v in obj(event.get("usage")).items() if v is not None}
        )
        message["usage"] = usage

    def _require_message(self) -> JSONObject:
        if self._message is None:
            raise ValueError("an event arrived before message_start")
        return self._message

    def finish(self) -> SampleReply:
        """The reply for everything fed.

        Raises:
            RemoteProtocolError: no ``message_stop`` arrived (a truncated stream),
                or a block never got its ``content_block_stop`` (a tool call's
                input is only whole then).
        """
        if self._message is None or not self._stopped:
            raise RemoteProtocolError(
                f"{PROVIDER}: the stream ended before message_stop"
            )
        if self._open:
            raise RemoteProtocolError(
                f"{PROVIDER}: block {min(self._open)} never got content_block_stop"
            )
        content = [block for _, block in sorted(self._blocks.items())]
        body = {**self._message, "content": content}
        return decode_response(body, structured=self.structured)

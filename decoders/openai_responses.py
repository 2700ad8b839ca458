"""OpenAI Responses API response → ``SampleReply``, whole or streamed.

Owns reading a ``Response`` body (:func:`decode_response`) and accumulating
``ResponseStreamEvent`` events (:class:`StreamAccumulator`). Pure: SSE parsing
and HTTP live in ``bridge.providers``. Requests are built by
``encoders.openai_responses``.

Mapping: ``message`` items' ``output_text`` (and ``refusal``) parts become text;
``function_call`` items become ``ToolUse`` blocks whose id is the ``call_id``
(the item id ``fc_…`` is kept in ``meta`` under :data:`META_KEY` and echoed by
the encoder). Reasoning and other items are kept as continuity data (see
``decoders._common``). ``status`` ``completed`` → ``endTurn``; ``incomplete``
with ``max_output_tokens`` → ``maxTokens``, with ``content_filter`` →
``refusal``; ``failed`` raises ``ProviderError``. Usage is ``input_tokens`` /
``output_tokens``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from runtime.errors import ProviderError, RemoteProtocolError
from runtime.messages import Block, Text, ToolUse, Usage
from runtime.replies import SampleReply

from ._common import (
    Continuity,
    JSONObject,
    finish_reply,
    items,
    lookup,
    malformed,
    model_name,
    obj,
    parse_arguments,
    stream_object,
    token_count,
)

__all__ = ["META_KEY", "StreamAccumulator", "decode_response"]

PROVIDER = "openai-responses"

META_KEY = "io.yieldmcp/openai-responses"
"""Block ``meta`` key holding Responses continuity data."""

_INCOMPLETE: dict[str, str | None] = {
    "max_output_tokens": "maxTokens",
    "content_filter": "refusal",
}
_TERMINAL = ("response.completed", "response.incomplete", "response.failed")


def decode_response(
    body: Mapping[str, Any], *, structured: bool = False
) -> SampleReply:
    """The reply for a ``Response`` JSON body.

    Raises:
        ProviderError: the response has status ``failed``.
        RemoteProtocolError: the body is not a response.
    """
    if body.get("status") == "failed":
        raise _failure(body.get("error"))
    with malformed(PROVIDER):
        blocks, refused = _blocks(items(body["output"]))
        return finish_reply(
            blocks,
            model=model_name(body.get("model")),
            stop="refusal" if refused else _stop(body),
            usage=_usage(body.get("usage")),
            structured=structured,
            seed=body.get("id"),
        )


def _blocks(output: Sequence[Any]) -> tuple[list[Block], bool]:
    continuity = Continuity(META_KEY)
    blocks: list[Block] = []
    refused = False
    for item in output:
        if item["type"] == "message":
            for part in items(item.get("content")):
                refused = refused or part["type"] == "refusal"
                text = part.get("text") if part["type"] == "output_text" else None
                if part["type"] == "refusal":
                    text = part["refusal"]
                if text is not None:
                    blocks.append(continuity.attach(Text(text)))
        elif item["type"] == "function_call":
            use = ToolUse(
                item.get("call_id") or "",
                item["name"],
                parse_arguments(item.get("arguments")),
            )
            blocks.append(continuity.attach(use, id=item.get("id")))
        else:
            continuity.hold(item)
    return blocks + continuity.trailing(), refused


def _stop(body: Mapping[str, Any]) -> str | None:
    status = body.get("status")
    if status == "completed":
        return "endTurn"
    if status == "incomplete":
        return lookup(_INCOMPLETE, obj(body.get("incomplete_details")).get("reason"))
    if status is None or isinstance(status, str):
        return status
    raise TypeError(f"status is {type(status).__name__}, not a string")


def _usage(usage: Mapping[str, Any] | None) -> Usage | None:
    if not usage:
        return None
    return Usage(
        token_count(usage.get("input_tokens")), token_count(usage.get("output_tokens"))
    )


def _index(value: Any, limit: int | None = None) -> int:
    """A position: a whole number >= 0 (and at most ``limit``, when given)."""
    if type(value) is not int or value < 0 or (limit is not None and value > limit):
        raise TypeError(f"an index is {value!r}")
    return value


def _failure(error: Any) -> ProviderError:
    fields = obj(error)
    code = fields.get("code")
    return ProviderError(
        str(fields.get("message") or "the response failed"),
        provider=PROVIDER,
        code=code if isinstance(code, str) else None,
    )


@attrs.define
class StreamAccumulator:
    """Accumulates Responses stream events into one reply.

    Feed each SSE ``data`` payload, parsed. Output items are tracked by
    ``output_index``: text deltas extend their content part, argument deltas
    extend their function call (delta events carry no ``call_id``; it comes
    from ``response.output_item.added``), and ``response.output_item.done``
    replaces an item with its final form. The terminal event supplies status,
    usage and model.
    """

    structured: bool = False
    _items: dict[int, JSONObject] = attrs.field(
        factory=dict[int, JSONObject], init=False
    )
    _final: JSONObject | None = attrs.field(default=None, init=False)

    def feed(self, event: object) -> None:
        """Take one parsed stream event (any JSON: what is not an object is
        malformed).

        Raises:
            ProviderError: an ``error`` event or ``response.failed``.
            RemoteProtocolError: the event is malformed.
        """
        event = stream_object(event, PROVIDER, "event")
        kind = event.get("type")
        if kind == "error":
            raise _failure(event)
        with malformed(PROVIDER):
            if kind in _TERMINAL:
                self._final = dict(event["response"])
            elif kind in ("response.output_item.added", "response.output_item.done"):
                index = _index(event["output_index"])  # items are put in order by it
                self._items[index] = _copy_item(event["item"])
            elif kind == "response.content_part.added":
                content = self._content(event)
                content[_index(event["content_index"])] = dict(event["part"])
            elif kind in ("response.output_text.delta", "response.refusal.delta"):
                key = "text" if kind == "response.output_text.delta" else "refusal"
                part = self._content(event)[_index(event["content_index"])]
                part[key] = part.get(key, "") + event["delta"]
            elif kind == "response.function_call_arguments.delta":
                item = self._items[event["output_index"]]
                item["arguments"] = item.get("arguments", "") + event["delta"]

    def _content(self, event: Mapping[str, Any]) -> list[JSONObject]:
        """The item's content parts, with room for the event's part: the next
        one at most (a part index far ahead would make us pad without end)."""
        content: list[Any] = self._items[event["output_index"]].setdefault(
            "content", []
        )
        if _index(event["content_index"], limit=len(content)) == len(content):
            content.append({"type": "output_text", "text": ""})
        return content

    def finish(self) -> SampleReply:
        """The reply for everything fed.

        Raises:
            ProviderError: the response failed.
            RemoteProtocolError: no terminal event arrived (a truncated stream).
        """
        if self._final is None:
            raise RemoteProtocolError(
                f"{PROVIDER}: the stream ended before response.completed"
            )
        output = [item for _, item in sorted(self._items.items())]
        return decode_response(
            {**self._final, "output": output}, structured=self.structured
        )


def _copy_item(item: Mapping[str, Any]) -> JSONObject:
    out = dict(item)
    if "content" in out:
        out["content"] = [dict(part) for part in out["content"]]
    return out

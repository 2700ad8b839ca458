"""Ollama ``/api/chat`` response → ``SampleReply``, whole or streamed (NDJSON).

Owns reading a chat response (:func:`decode_response`) and accumulating the
NDJSON lines of a streamed one (:class:`StreamAccumulator`). Reads the server's
fields the Python SDK drops (``tool_calls[].id``). Pure: line splitting and HTTP
live in ``bridge.providers``. Requests are built by ``encoders.ollama``.

Mapping: ``message.content`` becomes text (``message.thinking`` is not kept);
``tool_calls`` become ``ToolUse`` blocks, with arguments already objects and ids
synthesized for servers that send none (see ``decoders._common``).
``done_reason`` ``stop`` → ``endTurn`` (a stop sequence cannot be told apart),
``length`` → ``maxTokens``; ``toolUse`` whenever there are calls (the server
still says ``stop``). Usage is ``prompt_eval_count`` / ``eval_count``, present
only on the final object. An ``{"error": …}`` object raises ``ProviderError``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from runtime.errors import ProviderError, RemoteProtocolError
from runtime.messages import Block, Text, ToolUse, Usage
from runtime.replies import SampleReply

from ._common import (
    JSONObject,
    arguments_object,
    finish_reply,
    items,
    lookup,
    malformed,
    model_name,
    obj,
    stream_object,
    token_count,
)

__all__ = ["StreamAccumulator", "decode_response"]

PROVIDER = "ollama"

_STOP: dict[str, str | None] = {"stop": "endTurn", "length": "maxTokens", "": None}
_FINAL_KEYS = (
    "model",
    "created_at",
    "done",
    "done_reason",
    "prompt_eval_count",
    "eval_count",
)


def decode_response(
    body: Mapping[str, Any], *, structured: bool = False
) -> SampleReply:
    """The reply for a (non-streamed) ``/api/chat`` JSON body.

    Raises:
        ProviderError: the body is an error object.
        RemoteProtocolError: the body is not a chat response.
    """
    _raise_error(body)
    with malformed(PROVIDER):
        message = body["message"]
        blocks: list[Block] = (
            [Text(message["content"])] if message.get("content") else []
        )
        blocks += [_call(call) for call in items(message.get("tool_calls"))]
        reason = body.get("done_reason")
        return finish_reply(
            blocks,
            model=model_name(body.get("model")),
            stop=lookup(_STOP, reason),
            usage=_usage(body),
            structured=structured,
            seed=body.get("created_at"),
        )


def _call(call: Mapping[str, Any]) -> ToolUse:
    function = call["function"]
    arguments = arguments_object(function.get("arguments"))
    return ToolUse(call.get("id") or "", function["name"], arguments)


def _usage(body: Mapping[str, Any]) -> Usage | None:
    if "prompt_eval_count" not in body and "eval_count" not in body:
        return None
    return Usage(
        token_count(body.get("prompt_eval_count")), token_count(body.get("eval_count"))
    )


def _raise_error(body: Mapping[str, Any]) -> None:
    if "error" in body:
        raise ProviderError(str(body["error"]), provider=PROVIDER)


@attrs.define
class StreamAccumulator:
    """Accumulates the NDJSON objects of a streamed chat into one reply.

    Feed each line, parsed. Content fragments are concatenated; tool calls
    arrive whole and are appended; the ``done: true`` object supplies the stop
    reason and usage.
    """

    structured: bool = False
    _content: str = attrs.field(default="", init=False)
    _calls: list[Any] = attrs.field(factory=list[Any], init=False)
    _final: JSONObject | None = attrs.field(default=None, init=False)

    def feed(self, line: object) -> None:
        """Take one parsed NDJSON line (any JSON: what is not an object is
        malformed).

        Raises:
            ProviderError: an ``{"error": …}`` line.
            RemoteProtocolError: the line is malformed.
        """
        line = stream_object(line, PROVIDER, "line")
        _raise_error(line)
        with malformed(PROVIDER):
            message = obj(line.get("message"))
            self._content += message.get("content") or ""
            self._calls.extend(items(message.get("tool_calls")))
            if line.get("done"):
                self._final = {k: line[k] for k in _FINAL_KEYS if k in line}

    def finish(self) -> SampleReply:
        """The reply for everything fed.

        Raises:
            RemoteProtocolError: no ``done: true`` object arrived (truncated).
        """
        if self._final is None:
            raise RemoteProtocolError(f"{PROVIDER}: the stream ended before done: true")
        message: JSONObject = {"role": "assistant", "content": self._content}
        if self._calls:
            message["tool_calls"] = self._calls
        return decode_response(
            {**self._final, "message": message}, structured=self.structured
        )

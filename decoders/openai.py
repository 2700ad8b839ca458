"""OpenAI Chat Completions response → ``SampleReply``, whole or streamed.

Owns reading a ``ChatCompletion`` body (:func:`decode_response`) and
accumulating ``ChatCompletionChunk`` events (:class:`StreamAccumulator`), also
for OpenAI-compatible servers. Pure: parsing SSE lines and HTTP live in
``bridge.providers``. Requests are built by ``encoders.openai``.

Mapping: the first choice's ``content`` (and ``refusal``) become text;
``tool_calls`` become ``ToolUse`` blocks (arguments are a JSON string: see
``decoders._common`` for invalid ones and missing ids). ``finish_reason``
``stop`` → ``endTurn`` (a stop sequence cannot be told apart), ``length`` →
``maxTokens``, ``content_filter`` → ``refusal``; ``toolUse`` whenever there are
calls, whatever the finish reason says. Usage is ``prompt_tokens`` /
``completion_tokens``.
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

__all__ = ["StreamAccumulator", "decode_response"]

PROVIDER = "openai"

_STOP = {
    "stop": "endTurn",
    "length": "maxTokens",
    "tool_calls": "endTurn",
    "function_call": "endTurn",
    "content_filter": "refusal",
}


def decode_response(
    body: Mapping[str, Any], *, structured: bool = False
) -> SampleReply:
    """The reply for a ``ChatCompletion`` JSON body.

    Args:
        body: the parsed response JSON.
        structured: the request asked for structured output.

    Raises:
        RemoteProtocolError: the body is not a chat completion.
    """
    with malformed(PROVIDER):
        choice = body["choices"][0]
        message = choice["message"]
        blocks: list[Block] = [
            Text(text)
            for text in (message.get("content"), message.get("refusal"))
            if text
        ]
        blocks += [_call(call) for call in items(message.get("tool_calls"))]
        stop = lookup(_STOP, choice.get("finish_reason"))
        if message.get("refusal"):
            stop = "refusal"
        return finish_reply(
            blocks,
            model=model_name(body.get("model")),
            stop=stop,
            usage=_usage(body.get("usage")),
            structured=structured,
            seed=body.get("id"),
        )


def _call(call: Mapping[str, Any]) -> ToolUse:
    function = call["function"]
    arguments = parse_arguments(function.get("arguments"))
    return ToolUse(call.get("id") or "", function["name"], arguments)


def _usage(usage: Mapping[str, Any] | None) -> Usage | None:
    if not usage:
        return None
    return Usage(
        token_count(usage.get("prompt_tokens")),
        token_count(usage.get("completion_tokens")),
    )


@attrs.define
class StreamAccumulator:
    """Accumulates ``ChatCompletionChunk`` events into one reply.

    Feed each SSE ``data`` payload, parsed, to :meth:`feed`, and call
    :meth:`feed_done` on the ``[DONE]`` sentinel. Text deltas are concatenated;
    tool-call fragments are concatenated per ``index`` (later fragments carry
    no id or name), so the reply only ever holds whole calls.
    """

    structured: bool = False
    _head: JSONObject = attrs.field(factory=dict[str, Any], init=False)
    _texts: dict[str, str] = attrs.field(factory=dict[str, str], init=False)
    _calls: dict[int, JSONObject] = attrs.field(
        factory=dict[int, JSONObject], init=False
    )
    _finish: str | None = attrs.field(default=None, init=False)
    _usage: Any = attrs.field(default=None, init=False)
    _done: bool = attrs.field(default=False, init=False)

    def feed(self, chunk: object) -> None:
        """Take one parsed chunk (any JSON: what is not an object is malformed).

        Raises:
            ProviderError: the stream carried an error object.
            RemoteProtocolError: the chunk is malformed.
        """
        chunk = stream_object(chunk, PROVIDER, "chunk")
        if "error" in chunk:
            raise _stream_error(chunk["error"])
        with malformed(PROVIDER):
            for key in ("id", "model"):
                self._head.setdefault(key, chunk.get(key))
            self._usage = chunk.get("usage") or self._usage
            for choice in items(chunk.get("choices")):
                if choice.get("index", 0) == 0:
                    self._choice(choice)

    def _choice(self, choice: Mapping[str, Any]) -> None:
        delta = obj(choice.get("delta"))
        for key in ("content", "refusal"):
            if delta.get(key):
                self._texts[key] = self._texts.get(key, "") + delta[key]
        for fragment in items(delta.get("tool_calls")):
            self._fragment(fragment)
        self._finish = choice.get("finish_reason") or self._finish

    def _fragment(self, fragment: Mapping[str, Any]) -> None:
        index = fragment["index"]
        if type(index) is not int:  # calls are put in order by it
            raise TypeError(f"a tool call index is {index!r}")
        slot = self._calls.setdefault(index, {"id": "", "name": "", "arguments": ""})
        function = obj(fragment.get("function"))
        call_id, name = fragment.get("id") or "", function.get("name") or ""
        if call_id and slot["id"]:  # the call's head again
            if call_id != slot["id"]:
                raise ValueError(f"tool call {index} has two ids")
            if name == slot["name"]:
                name = ""  # the whole name again, not its next part
        slot["id"] = slot["id"] or call_id
        slot["name"] += name
        slot["arguments"] += function.get("arguments") or ""

    def feed_done(self) -> None:
        """Take the ``[DONE]`` sentinel that ends the stream."""
        self._done = True

    def finish(self) -> SampleReply:
        """The reply for everything fed.

        Raises:
            RemoteProtocolError: the stream ended before its finish reason or
                before ``[DONE]`` (it was truncated), or a tool call has no
                name (its first fragment, which carries it, never came).
        """
        if self._finish is None or not self._done:
            raise RemoteProtocolError(
                f"{PROVIDER}: the stream ended early (no finish_reason or [DONE])"
            )
        for index, call in sorted(self._calls.items()):
            if not call["name"]:
                raise RemoteProtocolError(f"{PROVIDER}: tool call {index} has no name")
        message: JSONObject = {"role": "assistant", **self._texts}
        if self._calls:
            message["tool_calls"] = [
                {"id": c["id"], "type": "function", "function": _function(c)}
                for _, c in sorted(self._calls.items())
            ]
        body: JSONObject = {
            **self._head,
            "choices": [
                {"index": 0, "message": message, "finish_reason": self._finish}
            ],
            "usage": self._usage,
        }
        return decode_response(body, structured=self.structured)


def _function(call: JSONObject) -> JSONObject:
    return {"name": call["name"], "arguments": call["arguments"]}


def _stream_error(error: Any) -> ProviderError:
    fields = obj(error)
    code = fields.get("code") or fields.get("type")
    if type(code) is int:  # compatible servers send the HTTP status
        code = str(code)
    return ProviderError(
        str(fields.get("message") or error),
        provider=PROVIDER,
        code=code if isinstance(code, str) else None,
    )

"""Gemini ``generateContent`` response → ``SampleReply``, whole or streamed.

Owns reading a ``GenerateContentResponse`` body in REST camelCase
(:func:`decode_response`) and accumulating the chunks of
``streamGenerateContent?alt=sse`` (:class:`StreamAccumulator`). Pure: SSE
parsing and HTTP live in ``bridge.providers``. Requests are built by
``encoders.gemini``.

Mapping (first candidate): adjacent text parts are joined into one text block;
``functionCall`` parts become ``ToolUse`` blocks (arguments are objects; ids are
optional, so missing ones are synthesized and flagged ``syntheticId`` in
``meta``, which tells the encoder not to send them). A part's
``thoughtSignature`` is kept in its block's ``meta`` under :data:`META_KEY`;
thought parts (``thought: true``) and part kinds without a canonical block are
continuity data (see ``decoders._common``). ``inlineData`` images and audio
become ``Image``/``Audio``. ``finishReason`` ``STOP`` → ``endTurn`` (a stop
sequence cannot be told apart), ``MAX_TOKENS`` → ``maxTokens``, the safety
family and a blocked prompt → ``refusal``; others (e.g.
``MALFORMED_FUNCTION_CALL``) pass through unchanged so a retry can see them.
Usage counts tool-use prompt tokens as input and thought tokens as output.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from runtime.errors import ProviderError, RemoteProtocolError
from runtime.messages import Audio, Block, Image, Text, ToolUse, Usage
from runtime.replies import SampleReply

from ._common import (
    Continuity,
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

__all__ = ["META_KEY", "StreamAccumulator", "decode_response"]

PROVIDER = "gemini"

META_KEY = "io.yieldmcp/gemini"
"""Block ``meta`` key holding Gemini continuity data."""

_REFUSAL = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
    }
)
_STOP: dict[str, str | None] = {"STOP": "endTurn", "MAX_TOKENS": "maxTokens"}


def decode_response(
    body: Mapping[str, Any], *, structured: bool = False
) -> SampleReply:
    """The reply for a ``GenerateContentResponse`` JSON body.

    Raises:
        ProviderError: the body is an error object.
        RemoteProtocolError: the body has no candidate and no block reason.
    """
    _raise_error(body)
    with malformed(PROVIDER):
        usage = _usage(body.get("usageMetadata"))
        model = model_name(body.get("modelVersion"), "modelVersion")
        candidates = items(body.get("candidates"))
        if not candidates:
            if not obj(body.get("promptFeedback")).get("blockReason"):
                raise ValueError("no candidates and no promptFeedback.blockReason")
            return finish_reply(
                (), model=model, stop="refusal", usage=usage, structured=False
            )
        candidate = candidates[0]
        parts = merge_text_parts(items(obj(candidate.get("content")).get("parts")))
        return finish_reply(
            _blocks(parts),
            model=model,
            stop=_stop(candidate.get("finishReason")),
            usage=usage,
            structured=structured,
            seed=body.get("responseId"),
        )


def merge_text_parts(parts: Any) -> list[JSONObject]:
    """``parts`` with adjacent plain text parts joined (signature kept).

    A streamed answer arrives as many text parts; joining them makes the reply
    independent of chunking. A part with a ``thoughtSignature`` ends a run.
    """
    merged: list[JSONObject] = []
    for part in parts:
        last = merged[-1] if merged else None
        if (
            last is not None
            and "thoughtSignature" not in last
            and _plain_text(last)
            and _plain_text(part)
        ):
            last["text"] += part["text"]
            if "thoughtSignature" in part:
                last["thoughtSignature"] = part["thoughtSignature"]
            continue
        merged.append(dict(part))
    return merged


def _plain_text(part: Mapping[str, Any]) -> bool:
    return (
        "text" in part
        and not part.get("thought")
        and set(part)
        <= {
            "text",
            "thoughtSignature",
        }
    )


def _blocks(parts: list[JSONObject]) -> list[Block]:
    continuity = Continuity(META_KEY)
    blocks: list[Block] = []
    for part in parts:
        block = None if part.get("thought") else _block(part)
        if block is None:
            continuity.hold(part)
            continue
        synthetic = True if isinstance(block, ToolUse) and not block.id else None
        signature = part.get("thoughtSignature")
        blocks.append(
            continuity.attach(block, thoughtSignature=signature, syntheticId=synthetic)
        )
    return blocks + continuity.trailing()


def _block(part: Mapping[str, Any]) -> Block | None:
    if "text" in part:
        return Text(part["text"])
    if "functionCall" in part:
        call = part["functionCall"]
        return ToolUse(
            call.get("id") or "", call["name"], arguments_object(call.get("args"))
        )
    data = part.get("inlineData")
    if data is not None:
        mime = data.get("mimeType", "")
        if mime.startswith("image/"):
            return Image(data["data"], mime)
        if mime.startswith("audio/"):
            return Audio(data["data"], mime)
    return None


def _stop(reason: str | None) -> str | None:
    if reason in _REFUSAL:
        return "refusal"
    return lookup(_STOP, reason)


def _usage(usage: Mapping[str, Any] | None) -> Usage | None:
    if not usage:
        return None
    prompt = token_count(usage.get("promptTokenCount")) + token_count(
        usage.get("toolUsePromptTokenCount")
    )
    output = token_count(usage.get("candidatesTokenCount")) + token_count(
        usage.get("thoughtsTokenCount")
    )
    return Usage(prompt, output)


def _raise_error(body: Mapping[str, Any]) -> None:
    error = body.get("error")
    if isinstance(error, Mapping):
        error_: Mapping[str, Any] = error  # pyright: ignore[reportUnknownVariableType]
        status, code = error_.get("code"), error_.get("status")
        raise ProviderError(
            str(error_.get("message", "error")),
            provider=PROVIDER,
            status=status if type(status) is int else None,
            code=code if isinstance(code, str) else None,
        )


@attrs.define
class StreamAccumulator:
    """Accumulates ``streamGenerateContent`` chunks into one reply.

    Feed each SSE ``data`` payload, parsed. Parts of the first candidate are
    concatenated in order (function calls arrive whole on the Gemini API); the
    last ``finishReason`` and ``usageMetadata`` win.
    """

    structured: bool = False
    _parts: list[Any] = attrs.field(factory=list[Any], init=False)
    _head: JSONObject = attrs.field(factory=dict[str, Any], init=False)
    _finish: str | None = attrs.field(default=None, init=False)

    def feed(self, chunk: object) -> None:
        """Take one parsed chunk (any JSON: what is not an object is malformed).

        Raises:
            ProviderError: an error object in the stream.
            RemoteProtocolError: the chunk is malformed.
        """
        chunk = stream_object(chunk, PROVIDER, "chunk")
        _raise_error(chunk)
        with malformed(PROVIDER):
            for key in (
                "usageMetadata",
                "modelVersion",
                "responseId",
                "promptFeedback",
            ):
                if key in chunk:
                    self._head[key] = chunk[key]
            for candidate in items(chunk.get("candidates"))[:1]:
                self._parts.extend(items(obj(candidate.get("content")).get("parts")))
                self._finish = candidate.get("finishReason") or self._finish

    def finish(self) -> SampleReply:
        """The reply for everything fed.

        Raises:
            RemoteProtocolError: no ``finishReason`` (or block reason) arrived.
        """
        blocked = obj(self._head.get("promptFeedback")).get("blockReason")
        if self._finish is None and not blocked:
            raise RemoteProtocolError(
                f"{PROVIDER}: the stream ended before finishReason"
            )
        body = dict(self._head)
        if self._finish is not None:
            content = {"role": "model", "parts": self._parts}
            body["candidates"] = [{"content": content, "finishReason": self._finish}]
        return decode_response(body, structured=self.structured)

"""The five provider APIs as data: URL path, headers, codec and stream framing.

Owns what differs between providers on the HTTP level: where to POST, how to
authenticate, which encoder, decoder and stream accumulator to use, and whether
a stream is SSE or NDJSON. Does no I/O itself (``_http`` does) and knows nothing
of wire JSON beyond calling ``encoders``/``decoders``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal, Protocol, final
from urllib.parse import quote

import attrs

import decoders.anthropic
import decoders.gemini
import decoders.ollama
import decoders.openai
import decoders.openai_responses
import encoders.anthropic
import encoders.gemini
import encoders.ollama
import encoders.openai
import encoders.openai_responses
from decoders.peer_json import loads
from runtime.replies import SampleReply
from runtime.requests import SamplingRequest

__all__ = [
    "ANTHROPIC_VERSION",
    "Accumulator",
    "Api",
    "anthropic_api",
    "gemini_api",
    "ollama_api",
    "openai_chat_api",
    "openai_responses_api",
]

ANTHROPIC_VERSION = "2026-10-21"
"""``anthropic-version`` header value, as sent by the anthropic SDK 2.x."""

JSONObject = dict[str, Any]


class Accumulator(Protocol):
    """A stream accumulator from ``decoders`` (one per response)."""

    def feed(self, event: Mapping[str, Any], /) -> None: ...

    def finish(self) -> SampleReply: ...


def _feed_json(accumulator: Accumulator, data: str) -> None:
    accumulator.feed(loads(data))


@final
@attrs.frozen(kw_only=True)
class Api:
    """One provider API: everything ``HttpProvider`` needs besides I/O.

    ``encode(request, model, stream)`` builds the body, ``decode(body,
    structured)`` reads a whole response, ``accumulator(structured)`` starts a
    stream, ``feed(accumulator, data)`` hands it one SSE ``data`` payload or
    NDJSON line.
    """

    name: str
    framing: Literal["sse", "ndjson"]
    path: Callable[[str, bool], str]
    headers: Callable[[str | None], dict[str, str]]
    encode: Callable[[SamplingRequest, str, bool], JSONObject]
    decode: Callable[[Mapping[str, Any], bool], SampleReply]
    accumulator: Callable[[bool], Accumulator]
    feed: Callable[[Any, str], None] = attrs.field(default=_feed_json)


def _bearer(key: str | None) -> dict[str, str]:
    return {} if key is None else {"Authorization": f"Bearer {key}"}


def _feed_chat(accumulator: decoders.openai.StreamAccumulator, data: str) -> None:
    if data.strip() == "[DONE]":
        accumulator.feed_done()
    else:
        accumulator.feed(loads(data))


def openai_chat_api(
    *,
    max_tokens_key: Literal["max_completion_tokens", "max_tokens"] = (
        "max_completion_tokens"
    ),
) -> Api:
    """OpenAI Chat Completions (``max_tokens_key="max_tokens"`` for compat servers)."""
    return Api(
        name="openai",
        framing="sse",
        path=lambda model, stream: "/chat/completions",
        headers=_bearer,
        encode=lambda request, model, stream: encoders.openai.encode_request(
            request, model=model, stream=stream, max_tokens_key=max_tokens_key
        ),
        decode=lambda body, structured: decoders.openai.decode_response(
            body, structured=structured
        ),
        accumulator=lambda structured: decoders.openai.StreamAccumulator(structured),
        feed=_feed_chat,
    )


def openai_responses_api() -> Api:
    """The OpenAI Responses API."""
    return Api(
        name="openai-responses",
        framing="sse",
        path=lambda model, stream: "/responses",
        headers=_bearer,
        encode=lambda request, model, stream: encoders.openai_responses.encode_request(
            request, model=model, stream=stream
        ),
        decode=lambda body, structured: decoders.openai_responses.decode_response(
            body, structured=structured
        ),
        accumulator=lambda structured: decoders.openai_responses.StreamAccumulator(
            structured
        ),
    )


def anthropic_api(*, version: str = ANTHROPIC_VERSION) -> Api:
    """The Anthropic Messages API (bearer auth and version header, as SDK 2.x)."""
    return Api(
        name="anthropic",
        framing="sse",
        path=lambda model, stream: "/v1/messages",
        headers=lambda key: {**_bearer(key), "anthropic-version": version},
        encode=lambda request, model, stream: encoders.anthropic.encode_request(
            request, model=model, stream=stream
        ),
        decode=lambda body, structured: decoders.anthropic.decode_response(
            body, structured=structured
        ),
        accumulator=lambda structured: decoders.anthropic.StreamAccumulator(structured),
    )


def ollama_api() -> Api:
    """Ollama's native ``/api/chat`` (NDJSON streams; no key)."""
    return Api(
        name="ollama",
        framing="ndjson",
        path=lambda model, stream: "/api/chat",
        headers=_bearer,
        encode=lambda request, model, stream: encoders.ollama.encode_request(
            request, model=model, stream=stream
        ),
        decode=lambda body, structured: decoders.ollama.decode_response(
            body, structured=structured
        ),
        accumulator=lambda structured: decoders.ollama.StreamAccumulator(structured),
    )


def _gemini_path(model: str, stream: bool) -> str:
    name = quote(model.removeprefix("models/"), safe="-._")
    if stream:
        return f"/v1beta/models/{name}:streamGenerateContent?alt=sse"
    return f"/v1beta/models/{name}:generateContent"


def gemini_api() -> Api:
    """The Gemini Developer API ``generateContent`` (key in ``x-goog-api-key``)."""
    return Api(
        name="gemini",
        framing="sse",
        path=_gemini_path,
        headers=lambda key: {} if key is None else {"x-goog-api-key": key},
        encode=lambda request, model, stream: encoders.gemini.encode_request(request),
        decode=lambda body, structured: decoders.gemini.decode_response(
            body, structured=structured
        ),
        accumulator=lambda structured: decoders.gemini.StreamAccumulator(structured),
    )

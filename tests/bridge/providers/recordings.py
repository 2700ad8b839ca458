"""Loading recorded responses and streams, and replaying them through decoders."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bridge.providers import (
    Api,
    anthropic_api,
    gemini_api,
    ollama_api,
    openai_chat_api,
    openai_responses_api,
)
from runtime.codec import sample_reply_to_json
from runtime.replies import SampleReply
from tests.bridge.providers.cases import DATA

PROVIDERS = ("openai", "openai_responses", "anthropic", "ollama", "gemini")

APIS: dict[str, Api] = {
    "openai": openai_chat_api(),
    "openai_responses": openai_responses_api(),
    "anthropic": anthropic_api(),
    "ollama": ollama_api(),
    "gemini": gemini_api(),
}


def recordings(provider: str, kind: str) -> list[str]:
    """Names (without extension) of ``provider``'s ``response``/``stream`` files."""
    return sorted(p.stem for p in (DATA / provider).glob(f"{kind}_*"))


def stream_path(provider: str, name: str) -> Path:
    """The raw wire file of stream recording ``name``."""
    ext = "ndjson" if provider == "ollama" else "sse"
    return DATA / provider / f"{name}.{ext}"


def stream_payloads(provider: str, text: str) -> list[str]:
    """The SSE ``data`` payloads (or NDJSON lines) of a raw stream."""
    text = text.replace("\r\n", "\n")
    if provider == "ollama":
        return [line for line in text.split("\n") if line.strip()]
    payloads = []
    for event in text.split("\n\n"):
        data = [
            line[5:].lstrip(" ")
            for line in event.split("\n")
            if line.startswith("data:")
        ]
        if data:
            payloads.append("\n".join(data))
    return payloads


def structured(name: str) -> bool:
    """Recordings answering a structured-output request are named so."""
    return "structured" in name


def decode_recording(provider: str, name: str) -> SampleReply:
    """The reply a whole-response recording decodes to."""
    body = json.loads((DATA / provider / f"{name}.json").read_text())
    return APIS[provider].decode(body, structured(name))


def accumulate(
    provider: str, payloads: list[str], *, is_structured: bool = False
) -> SampleReply:
    """The reply a sequence of stream payloads accumulates to."""
    api = APIS[provider]
    accumulator = api.accumulator(is_structured)
    for data in payloads:
        api.feed(accumulator, data)
    return accumulator.finish()


def expected(provider: str, name: str) -> Any:
    """The recorded expected reply JSON for recording ``name``."""
    return json.loads((DATA / provider / f"reply_{name}.json").read_text())


def as_json(reply: SampleReply) -> Any:
    """``reply`` in MCP JSON form (blocks with ``_meta``), for comparisons."""
    return sample_reply_to_json(reply)

"""Fake provider output: one logical answer rendered as each provider's JSON.

:class:`Answer` is what a model said (text, calls); ``whole(provider, answer)``
renders it as a non-streamed response body and ``stream(provider, answer,
cuts)`` as stream payloads whose text and argument fragments are cut at the
given fractions, so tests can check that chunking never changes the reply.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import attrs


@attrs.frozen
class Call:
    id: str
    name: str
    args: dict[str, Any]

    @property
    def arguments(self) -> str:
        return json.dumps(self.args)


@attrs.frozen
class Answer:
    text: str
    calls: tuple[Call, ...]


def pieces(text: str, cuts: list[float]) -> list[str]:
    """``text`` cut at the given fractions (empty pieces are kept: they occur)."""
    points = sorted({int(c * len(text)) for c in cuts})
    bounds = [0, *points, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


# --- whole responses ----------------------------------------------------------------


def whole(provider: str, answer: Answer) -> dict[str, Any]:
    return _WHOLE[provider](answer)


def _openai(answer: Answer) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": answer.text or None}
    if answer.calls:
        message["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments},
            }
            for c in answer.calls
        ]
    finish = "tool_calls" if answer.calls else "stop"
    return {
        "id": "chatcmpl-x",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [
            {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3},
    }


def _responses_items(answer: Answer) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if answer.text:
        part = {"type": "output_text", "text": answer.text, "annotations": []}
        items.append(
            {
                "type": "message",
                "id": "msg_x",
                "status": "completed",
                "role": "assistant",
                "content": [part],
            }
        )
    for n, c in enumerate(answer.calls):
        items.append(
            {
                "type": "function_call",
                "id": f"fc_{n}",
                "call_id": c.id,
                "name": c.name,
                "arguments": c.arguments,
                "status": "completed",
            }
        )
    return items


def _responses(answer: Answer) -> dict[str, Any]:
    return {
        "id": "resp_x",
        "object": "response",
        "created_at": 1,
        "status": "completed",
        "model": "m",
        "output": _responses_items(answer),
        "usage": {"input_tokens": 1, "output_tokens": 2, "total_tokens": 3},
    }


def _anthropic_blocks(answer: Answer) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = (
        [{"type": "text", "text": answer.text}] if answer.text else []
    )
    blocks += [
        {"type": "tool_use", "id": c.id, "name": c.name, "input": c.args}
        for c in answer.calls
    ]
    return blocks


def _anthropic(answer: Answer) -> dict[str, Any]:
    return {
        "id": "msg_x",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": _anthropic_blocks(answer),
        "stop_reason": "tool_use" if answer.calls else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 2},
    }


def _ollama(answer: Answer) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": answer.text}
    if answer.calls:
        message["tool_calls"] = [
            {"id": c.id, "function": {"index": n, "name": c.name, "arguments": c.args}}
            for n, c in enumerate(answer.calls)
        ]
    return {
        "model": "m",
        "created_at": "t",
        "message": message,
        "done": True,
        "done_reason": "stop",
        "prompt_eval_count": 1,
        "eval_count": 2,
    }


def _gemini_parts(answer: Answer) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = [{"text": answer.text}] if answer.text else []
    parts += [
        {"functionCall": {"id": c.id, "name": c.name, "args": c.args}}
        for c in answer.calls
    ]
    return parts


def _gemini(answer: Answer) -> dict[str, Any]:
    return {
        "candidates": [
            {
                "content": {"role": "model", "parts": _gemini_parts(answer)},
                "finishReason": "STOP",
            }
        ],
        "usageMetadata": {
            "promptTokenCount": 1,
            "candidatesTokenCount": 2,
            "totalTokenCount": 3,
        },
        "modelVersion": "m",
        "responseId": "r",
    }


_WHOLE = {
    "openai": _openai,
    "openai_responses": _responses,
    "anthropic": _anthropic,
    "ollama": _ollama,
    "gemini": _gemini,
}


# --- streams -------------------------------------------------------------------------


def stream(provider: str, answer: Answer, cuts: list[float]) -> list[str]:
    """Stream payloads (SSE data or NDJSON lines) for ``answer``."""
    return [
        e if isinstance(e, str) else json.dumps(e)
        for e in _STREAM[provider](answer, cuts)
    ]


def _openai_stream(answer: Answer, cuts: list[float]) -> list[Any]:
    head = {
        "id": "chatcmpl-x",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            **head,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    events: list[Any] = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": p}) for p in pieces(answer.text, cuts)]
    for n, c in enumerate(answer.calls):
        start = {
            "index": n,
            "id": c.id,
            "type": "function",
            "function": {"name": c.name, "arguments": ""},
        }
        events.append(chunk({"tool_calls": [start]}))
        events += [
            chunk({"tool_calls": [{"index": n, "function": {"arguments": p}}]})
            for p in pieces(c.arguments, cuts)
        ]
    events.append(chunk({}, "tool_calls" if answer.calls else "stop"))
    events.append(
        {
            **head,
            "choices": [],
            "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3},
        }
    )
    return [*events, "[DONE]"]


def _responses_stream(answer: Answer, cuts: list[float]) -> list[Any]:
    final = _responses(answer)
    events: list[Any] = [
        {
            "type": "response.created",
            "response": {**final, "status": "in_progress", "output": []},
        }
    ]
    for index, item in enumerate(final["output"]):
        if item["type"] == "message":
            events.append(
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": {**item, "content": []},
                }
            )
            part = {"type": "output_text", "text": "", "annotations": []}
            events.append(
                {
                    "type": "response.content_part.added",
                    "output_index": index,
                    "content_index": 0,
                    "part": part,
                }
            )
            events += [
                {
                    "type": "response.output_text.delta",
                    "output_index": index,
                    "content_index": 0,
                    "delta": p,
                }
                for p in pieces(answer.text, cuts)
            ]
        else:
            events.append(
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": {**item, "arguments": ""},
                }
            )
            events += [
                {
                    "type": "response.function_call_arguments.delta",
                    "output_index": index,
                    "delta": p,
                }
                for p in pieces(item["arguments"], cuts)
            ]
    return [*events, {"type": "response.completed", "response": final}]


def _anthropic_stream(answer: Answer, cuts: list[float]) -> list[Any]:
    final = _anthropic(answer)
    events: list[Any] = [
        {
            "type": "message_start",
            "message": {**final, "content": [], "stop_reason": None},
        }
    ]
    for index, block in enumerate(final["content"]):
        if block["type"] == "text":
            events.append(
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "text", "text": ""},
                }
            )
            events += [
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "text_delta", "text": p},
                }
                for p in pieces(block["text"], cuts)
            ]
        else:
            events.append(
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {**block, "input": {}},
                }
            )
            text = json.dumps(block["input"])
            events += [
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": p},
                }
                for p in pieces(text, cuts)
            ]
        events.append({"type": "content_block_stop", "index": index})
    delta = {"stop_reason": final["stop_reason"], "stop_sequence": None}
    return [
        *events,
        {"type": "message_delta", "delta": delta, "usage": {"output_tokens": 2}},
        {"type": "message_stop"},
    ]


def _ollama_stream(answer: Answer, cuts: list[float]) -> list[Any]:
    final = _ollama(answer)
    lines: list[Any] = [
        {
            "model": "m",
            "created_at": "t",
            "message": {"role": "assistant", "content": p},
            "done": False,
        }
        for p in pieces(answer.text, cuts)
    ]
    for call in final["message"].get("tool_calls", ()):
        lines.append(
            {
                "model": "m",
                "created_at": "t",
                "message": {"role": "assistant", "content": "", "tool_calls": [call]},
                "done": False,
            }
        )
    return [*lines, {**final, "message": {"role": "assistant", "content": ""}}]


def _gemini_stream(answer: Answer, cuts: list[float]) -> list[Any]:
    final = _gemini(answer)
    parts = [{"text": p} for p in pieces(answer.text, cuts) if p] if answer.text else []
    parts += _gemini_parts(Answer("", answer.calls))
    chunks = [
        {
            "candidates": [{"content": {"role": "model", "parts": [p]}}],
            "modelVersion": "m",
            "responseId": "r",
        }
        for p in parts
    ]
    last = {
        **final,
        "candidates": [
            {"content": {"role": "model", "parts": []}, "finishReason": "STOP"}
        ],
    }
    return [*chunks, last]


_STREAM = {
    "openai": _openai_stream,
    "openai_responses": _responses_stream,
    "anthropic": _anthropic_stream,
    "ollama": _ollama_stream,
    "gemini": _gemini_stream,
}

"""Validating what an MCP peer sends, in either era: the checks every decoder shares.

Owns :func:`validate` (a payload accepted if either era's ``mcp-types`` model
accepts it, strict and by wire names; a refusal becomes a
:class:`~runtime.errors.RemoteProtocolError` with a short summary that never
quotes the input), :func:`json_object`, and the sampling-content rule
:func:`check_blocks` (a ``tool_result`` inside a sampling message holds only
text, image and audio), and :func:`plain_text_block`, the text block the
decoders' fast paths read without the models.

It reads no value out of a payload: :mod:`decoders.mcp` and the modules behind
it do.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Iterator, Sequence
from typing import Any, cast

from pydantic import BaseModel, ValidationError

from runtime.errors import RemoteProtocolError, summarize_validation_error
from runtime.lowlevel import check_json

__all__ = [
    "JSONObject",
    "both_eras",
    "check_blocks",
    "content_list",
    "json_object",
    "plain_text_block",
    "short",
    "validate",
]

JSONObject = dict[str, Any]

_MODERN_FIRST = ("mcp_types._v2026_07_28", "mcp_types._v2025_11_25")
_import_models = functools.cache(importlib.import_module)


def both_eras(*, modern: bool = True) -> Iterator[Any]:
    """Each era's ``mcp-types`` models, the modern era first (or last).

    Each module is imported when the loop reaches it, not before: building an
    era's ~150 pydantic models is a fifth of a process's start-up, and a
    payload the first era accepts never needs the second's.
    """
    for name in _MODERN_FIRST if modern else _MODERN_FIRST[::-1]:
        yield _import_models(name)


def short(text: str, limit: int = 160) -> str:
    """``text``, cut to ``limit`` characters for an error message."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def json_object(value: object, what: str) -> JSONObject:
    if not isinstance(value, dict):
        raise RemoteProtocolError(
            f"{what} must be a JSON object, got {type(value).__name__}"
        )
    return cast(JSONObject, value)


def content_list(content: Any) -> list[JSONObject]:
    """A message's or result's content as a list (MCP allows a single block)."""
    return [content] if isinstance(content, dict) else list(content)


def plain_text_block(block: object) -> bool:
    """Whether ``block`` is exactly ``{"type": "text", "text": str}``: a text
    block valid in both eras by construction (no models needed to read it)."""
    return (
        type(block) is dict
        and cast(JSONObject, block).keys() == {"type", "text"}
        and cast(JSONObject, block)["type"] == "text"
        and type(cast(JSONObject, block)["text"]) is str
    )


def check_blocks(blocks: Sequence[JSONObject]) -> None:
    for block in blocks:
        if block["type"] != "tool_result":
            continue
        for inner in block["content"]:
            if inner["type"] not in ("text", "image", "audio"):
                raise RemoteProtocolError(
                    f"tool_result content of type {inner['type']!r} is not "
                    f"supported in sampling messages (only text, image and audio)"
                )


def validate(
    type_name: str, data: JSONObject, what: str, *, modern: bool = True
) -> None:
    """Accept ``data`` if either era's model of ``type_name`` accepts it.

    ``modern`` says which era's model to try first (the one likely to accept,
    so that valid data is validated once); the other is tried only if it
    refuses, and the first refusal is the one reported.
    """
    first: ValidationError | None = None
    for wire in both_eras(modern=modern):
        model: type[BaseModel] = getattr(wire, type_name)
        try:
            check_json(model, data)
        except ValidationError as exc:
            first = first or exc
            continue
        return
    assert first is not None
    raise RemoteProtocolError(
        f"malformed {what}: {summarize_validation_error(first)}"
    ) from None

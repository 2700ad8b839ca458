"""Shared, provider-neutral steps of decoding a provider response.

Owns the rules every provider decoder applies the same way:

* **Tool-call arguments** that are not a JSON object (unparseable JSON, or JSON
  that is not an object) never raise: the call's ``input`` becomes
  ``{"__raw__": "<the text>"}`` (:data:`RAW_ARGUMENTS_KEY`), so the runtime's
  validation and retry path sees invalid output instead of a crash.
* **Missing call ids** are synthesized as ``call_<digest>_<n>``: ``n`` is the
  call's position in the reply, ``digest`` is a hash of the reply's content and
  response id, so ids stay unique across the turns of one conversation (the
  runtime rejects a history that repeats an id) and are the same for the same
  content however a stream was chunked.
* **Structured output** (the request carried ``schema_tool``) answered in text
  becomes ``ToolUse(id, "__schema__", data)`` when the text is a JSON object,
  so callers see one shape; text that is not a JSON object stays text, for the
  runtime to report as a parse error.
* **Stop reason** ``toolUse`` is decided by the presence of calls.
* **Continuity data**: provider items without a canonical block are kept in
  order under ``meta[<provider key>]["before"]`` of the next block (an empty
  ``Text`` carries trailing ones).

Does not know any provider's wire spelling and does no I/O.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Generator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, cast

import attrs

from runtime.codec import block_to_json
from runtime.errors import RemoteProtocolError
from runtime.messages import RAW_ARGUMENTS_KEY as RAW_ARGUMENTS_KEY
from runtime.messages import SCHEMA_TOOL_NAME, Block, Text, ToolUse, Usage
from runtime.replies import SampleReply

from .peer_json import loads

__all__ = [
    "Continuity",
    "JSONObject",
    "RAW_ARGUMENTS_KEY",
    "arguments_object",
    "finish_reply",
    "items",
    "lookup",
    "malformed",
    "model_name",
    "obj",
    "parse_arguments",
    "stream_object",
    "token_count",
]

JSONObject = dict[str, Any]
_MOST_SAID = 300  # characters of an error's own words a malformed response keeps


def parse_arguments(raw: str | None) -> JSONObject:
    """Arguments sent as JSON text, as an object (see the module doc)."""
    if not raw:
        return {}
    try:
        value = loads(raw)
    except ValueError:  # not JSON, or none an MCP message carries
        return {RAW_ARGUMENTS_KEY: raw}
    if isinstance(value, dict):
        return cast(JSONObject, value)
    return {RAW_ARGUMENTS_KEY: raw}


def arguments_object(value: Any) -> JSONObject:
    """Arguments sent as a JSON value, as an object (see the module doc)."""
    if value is None:
        return {}
    if isinstance(value, str):
        return parse_arguments(value)
    if isinstance(value, dict):
        return cast(JSONObject, value)
    return {RAW_ARGUMENTS_KEY: json.dumps(value)}


def obj(value: Any) -> Mapping[str, Any]:
    """``value`` if it is a JSON object, else an empty one (absent or null)."""
    return cast("Mapping[str, Any]", value) if isinstance(value, Mapping) else {}


def stream_object(value: object, provider: str, what: str) -> Mapping[str, Any]:
    """A parsed stream item (``what``: "chunk", "event", "line") as an object.

    Raises:
        RemoteProtocolError: it is other JSON (an array, a string...).
    """
    if not isinstance(value, Mapping):
        raise RemoteProtocolError(f"{provider}: a stream {what} is not an object")
    return cast("Mapping[str, Any]", value)


def items(value: Any) -> Sequence[Any]:
    """``value`` if it is a JSON array, else an empty one (absent or null)."""
    return cast("list[Any]", value) if isinstance(value, list) else ()


def lookup(table: Mapping[str, str | None], reason: Any) -> str | None:
    """``reason`` in MCP spelling per ``table``; unknown strings pass through."""
    if not isinstance(reason, str):
        return None
    return table.get(reason, reason)


@contextmanager
def malformed(provider: str) -> Generator[None, None, None]:
    """Turn a response that lacks what its type promises into RemoteProtocolError."""
    try:
        yield
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
        # Cut: the error may quote the value, which the provider chose (a
        # 20 MB list made a 40 MB line, twice over).
        said = str(exc)
        if len(said) > _MOST_SAID:
            said = f"{said[:_MOST_SAID]}… ({len(said) - _MOST_SAID:,} more characters)"
        raise RemoteProtocolError(
            f"{provider}: malformed response ({type(exc).__name__}: {said})"
        ) from None


@attrs.define
class Continuity:
    """Collects opaque provider items and attaches them to the next block."""

    meta_key: str
    _pending: list[JSONObject] = attrs.field(factory=list[JSONObject], init=False)

    def hold(self, item: Mapping[str, Any]) -> None:
        """Keep ``item`` for the next block."""
        self._pending.append(dict(item))

    def attach(self, block: Block, **own: Any) -> Block:
        """``block`` with the held items (and ``own`` provider data) in its meta."""
        data: JSONObject = {k: v for k, v in own.items() if v is not None}
        if self._pending:
            data["before"] = self._pending
            self._pending = []
        if not data:
            return block
        return attrs.evolve(block, meta={**(block.meta or {}), self.meta_key: data})

    def trailing(self) -> list[Block]:
        """An empty Text carrying items held after the last block, if any."""
        return [self.attach(Text(""))] if self._pending else []


def finish_reply(
    blocks: Sequence[Block],
    *,
    model: str | None,
    stop: str | None,
    usage: Usage | None,
    structured: bool,
    seed: Any = None,
) -> SampleReply:
    """The reply: structured output folded, missing ids filled, stop decided.

    Args:
        blocks: decoded blocks; calls without an id have ``id == ""``.
        model: the model the provider reports.
        stop: the provider's stop reason, already in MCP spelling when known.
        usage: token usage, when reported.
        structured: the request asked for structured output.
        seed: the response id (or anything identifying the response).
    """
    content = _fold_structured(blocks) if structured else list(blocks)
    content = _fill_ids(content, seed)
    has_calls = any(isinstance(b, ToolUse) for b in content)
    return SampleReply(
        content=tuple(content),
        model=model or "unknown",
        stop_reason="toolUse" if has_calls else stop,
        usage=usage,
    )


def _fold_structured(blocks: Sequence[Block]) -> list[Block]:
    if any(isinstance(b, ToolUse) for b in blocks):
        return list(blocks)
    texts = [b for b in blocks if isinstance(b, Text)]
    try:
        data = loads("".join(t.text for t in texts))
    except ValueError:
        return list(blocks)
    if not isinstance(data, dict):
        return list(blocks)
    meta = _merge_meta([t.meta for t in texts if t.meta])
    use = ToolUse("", SCHEMA_TOOL_NAME, cast(JSONObject, data), meta=meta)
    head = blocks[: blocks.index(texts[0])]
    first = sum(1 for b in head if not isinstance(b, Text))
    rest = [b for b in blocks if not isinstance(b, Text)]
    return [*rest[:first], use, *rest[first:]]


def _merge_meta(metas: Sequence[Mapping[str, Any]]) -> JSONObject | None:
    merged: JSONObject = {}
    for meta in metas:
        for key, value in meta.items():
            old = merged.get(key)
            if isinstance(old, dict) and isinstance(value, Mapping):
                before = [*old.get("before", ()), *value.get("before", ())]  # pyright: ignore
                merged[key] = {**old, **value}
                if before:
                    merged[key]["before"] = before
            else:
                merged[key] = value
    return merged or None


def _fill_ids(blocks: list[Block], seed: Any) -> list[Block]:
    if not any(isinstance(b, ToolUse) and not b.id for b in blocks):
        return blocks
    material = json.dumps([seed, [block_to_json(b) for b in blocks]], sort_keys=True)
    digest = hashlib.sha256(material.encode()).hexdigest()[:10]
    out: list[Block] = []
    for n, block in enumerate(blocks):
        if isinstance(block, ToolUse) and not block.id:
            block = attrs.evolve(block, id=f"call_{digest}_{n}")
        out.append(block)
    return out


def model_name(value: Any, field: str = "model") -> str | None:
    """A reply's model name as the provider gave it in ``field`` (absent: None).

    Raises:
        TypeError: anything but a string (the caller reports it as malformed).
    """
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"{field} is {type(value).__name__}, not a string")


def token_count(value: Any) -> int:
    """A token count: absent is 0.

    Raises:
        TypeError: anything but a whole number >= 0 (reported as malformed).
    """
    if value is None:
        return 0
    if type(value) is not int or value < 0:
        raise TypeError(f"a token count is {value!r}")
    return value

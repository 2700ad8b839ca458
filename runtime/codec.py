"""JSON forms of the canonical values, in MCP's wire spelling.

Blocks and messages serialise exactly as MCP spells them (``mimeType``,
``toolUseId``, ``isError``, ``structuredContent``, ``_meta``), so the journal, the
testing kit and the MCP encoder share one mapping. This module is pure and does
no validation beyond shape: MCP wire validation happens with the official models
in ``encoders``/``decoders``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, cast

from .errors import RemoteProtocolError
from .messages import Audio, Block, Image, Message, Text, ToolResult, ToolUse, Usage
from .replies import ElicitReply, Root, RootsReply, SampleReply

__all__ = [
    "CONTEXT_META_KEY",
    "ELICIT_KEY_META_KEY",
    "MAX_MODEL_NAME_CHARS",
    "MAX_SERVER_MODELS",
    "SERVER_MODELS_META_KEY",
    "USAGE_META_KEY",
    "block_from_json",
    "block_to_json",
    "elicit_reply_from_json",
    "elicit_reply_to_json",
    "message_from_json",
    "roots_reply_from_json",
    "roots_reply_to_json",
    "message_to_json",
    "naming_server_models",
    "sample_reply_from_json",
    "sample_reply_to_json",
    "server_models",
    "with_model_name",
    "with_model_names",
]

JSONObject = dict[str, Any]

USAGE_META_KEY = "io.yieldmcp/usage"
"""``_meta`` key under which yieldmcp hosts report token usage of a sample."""

ELICIT_KEY_META_KEY = "io.yieldmcp/key"
"""``_meta`` key under which yieldmcp servers share a form's elicitation key."""

ELICITS_META_KEY = "io.yieldmcp/elicits"
"""``_meta`` key of a listed tool under which yieldmcp servers name the forms
it declares (``elicits=``): the keys a host's scripted answers may use."""

CONTEXT_META_KEY = "x-model-context"
"""``_meta`` key under which yieldmcp servers send an elicitation's context."""

SERVER_MODELS_META_KEY = "io.yieldmcp/server-models"
"""``_meta`` key of a result under which a yieldmcp server names the models of
its own that answered the call's samples (``--model``): the ``model`` each
reply reported, first answer first, each once. A client that answered every
sample itself sees no such key."""

MAX_SERVER_MODELS = 8
"""Names under :data:`SERVER_MODELS_META_KEY`, at most: later ones are dropped."""

MAX_MODEL_NAME_CHARS = 120
"""Characters of one name under :data:`SERVER_MODELS_META_KEY`, at most: a
longer one is cut, and ends with an ellipsis."""


def _with_meta(out: JSONObject, meta: Mapping[str, Any] | None) -> JSONObject:
    if meta is not None:
        out["_meta"] = dict(meta)
    return out


def _with_annotations(out: JSONObject, annotations: Mapping[str, Any] | None) -> None:
    if annotations is not None:
        out["annotations"] = dict(annotations)


def block_to_json(block: Block) -> JSONObject:
    """The MCP content-block JSON for ``block``."""
    match block:
        case Text(text=text):
            out: JSONObject = {"type": "text", "text": text}
            _with_annotations(out, block.annotations)
        case Image(data=data, mime_type=mime):
            out = {"type": "image", "data": data, "mimeType": mime}
            _with_annotations(out, block.annotations)
        case Audio(data=data, mime_type=mime):
            out = {"type": "audio", "data": data, "mimeType": mime}
            _with_annotations(out, block.annotations)
        case ToolUse(id=id_, name=name, input=input_):
            out = {"type": "tool_use", "id": id_, "name": name, "input": dict(input_)}
        case ToolResult():
            out = {
                "type": "tool_result",
                "toolUseId": block.tool_use_id,
                "content": [block_to_json(c) for c in block.content],
            }
            if block.is_error:
                out["isError"] = True
            if block.structured_content is not None:
                out["structuredContent"] = block.structured_content
    return _with_meta(out, block.meta)


def block_from_json(data: Mapping[str, Any]) -> Block:
    """The block for MCP content JSON ``data`` (RemoteProtocolError if malformed)."""
    try:
        return _block_from_json(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise RemoteProtocolError(f"malformed content block: {exc!r}") from None


def _block_from_json(data: Mapping[str, Any]) -> Block:
    meta = data.get("_meta")
    kind = data["type"]
    notes = data.get("annotations")
    if kind == "text":
        return Text(data["text"], meta=meta, annotations=notes)
    if kind == "image":
        return Image(data["data"], data["mimeType"], meta=meta, annotations=notes)
    if kind == "audio":
        return Audio(data["data"], data["mimeType"], meta=meta, annotations=notes)
    if kind == "tool_use":
        return ToolUse(data["id"], data["name"], dict(data["input"]), meta=meta)
    if kind == "tool_result":
        content = [_block_from_json(c) for c in data.get("content", ())]
        return ToolResult(
            data["toolUseId"],
            cast(Any, content),
            is_error=bool(data.get("isError", False)),
            structured_content=data.get("structuredContent"),
            meta=meta,
        )
    raise ValueError(f"unknown content type {kind!r}")


def _content_list(content: Any) -> list[Mapping[str, Any]]:
    # MCP allows a single block or a list of blocks.
    if type(content) is dict or isinstance(content, Mapping):
        return [content]
    return list(content)


def message_to_json(message: Message) -> JSONObject:
    """The MCP ``SamplingMessage`` JSON for ``message`` (content always a list)."""
    return {
        "role": message.role,
        "content": [block_to_json(b) for b in message.content],
    }


def message_from_json(data: Mapping[str, Any]) -> Message:
    """The message for MCP ``SamplingMessage`` JSON (single block or list)."""
    blocks = tuple(block_from_json(c) for c in _content_list(data["content"]))
    return Message(data["role"], blocks)


def sample_reply_to_json(reply: SampleReply) -> JSONObject:
    """``reply`` as an MCP ``CreateMessageResult``-shaped object."""
    out: JSONObject = {
        "role": "assistant",
        "content": [block_to_json(b) for b in reply.content],
        "model": reply.model,
    }
    if reply.stop_reason is not None:
        out["stopReason"] = reply.stop_reason
    if reply.usage is not None:
        out["_meta"] = {
            USAGE_META_KEY: {
                "inputTokens": reply.usage.input_tokens,
                "outputTokens": reply.usage.output_tokens,
            }
        }
    return out


def sample_reply_from_json(data: Mapping[str, Any]) -> SampleReply:
    """The reply for ``CreateMessageResult``-shaped JSON (RemoteProtocolError)."""
    try:
        blocks = tuple(_block_from_json(c) for c in _content_list(data["content"]))
        meta: Any = data.get("_meta") or {}
        usage_json: Any = meta.get(USAGE_META_KEY)
        usage = (
            Usage(int(usage_json["inputTokens"]), int(usage_json["outputTokens"]))
            if usage_json
            else None
        )
        return SampleReply(
            content=blocks,
            model=str(data["model"]),
            stop_reason=data.get("stopReason"),
            usage=usage,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise RemoteProtocolError(f"malformed sampling result: {exc!r}") from None


def elicit_reply_to_json(reply: ElicitReply) -> JSONObject:
    """``reply`` as an MCP ``ElicitResult`` object."""
    out: JSONObject = {"action": reply.action}
    if reply.content is not None:
        out["content"] = dict(reply.content)
    return out


def elicit_reply_from_json(data: Mapping[str, Any]) -> ElicitReply:
    """The reply for ``ElicitResult`` JSON (RemoteProtocolError if malformed)."""
    try:
        content = data.get("content")
        return ElicitReply(
            action=data["action"],
            content=None if content is None else dict(content),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise RemoteProtocolError(f"malformed elicitation result: {exc!r}") from None


def roots_reply_to_json(reply: RootsReply) -> JSONObject:
    """``reply`` as an MCP ``ListRootsResult`` object."""
    roots: list[JSONObject] = []
    for root in reply.roots:
        entry: JSONObject = {"uri": root.uri}
        if root.name is not None:
            entry["name"] = root.name
        roots.append(entry)
    return {"roots": roots}


def roots_reply_from_json(data: Mapping[str, Any]) -> RootsReply:
    """The reply for ``ListRootsResult`` JSON (RemoteProtocolError if malformed)."""
    try:
        roots: list[Any] = list(data["roots"])
        return RootsReply(tuple(Root(str(r["uri"]), r.get("name")) for r in roots))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise RemoteProtocolError(f"malformed roots result: {exc!r}") from None


def with_model_name(names: tuple[str, ...], name: str) -> tuple[str, ...]:
    """``names`` (see :data:`SERVER_MODELS_META_KEY`) with ``name`` after them,
    cut to :data:`MAX_MODEL_NAME_CHARS`, unless already there or the list is
    full (:data:`MAX_SERVER_MODELS`)."""
    if len(name) > MAX_MODEL_NAME_CHARS:
        name = name[: MAX_MODEL_NAME_CHARS - 1] + "\u2026"
    if name in names or len(names) >= MAX_SERVER_MODELS:
        return names
    return (*names, name)


def with_model_names(names: tuple[str, ...], more: Iterable[str]) -> tuple[str, ...]:
    """``names`` with each of ``more`` after them, as :func:`with_model_name`."""
    for name in more:
        names = with_model_name(names, name)
    return names


def naming_server_models(
    result: dict[str, Any], names: tuple[str, ...]
) -> dict[str, Any]:
    """``result`` (a tool's or prompt's) naming ``names`` under
    :data:`SERVER_MODELS_META_KEY` in its ``_meta``, as a new mapping; as it
    is with no names, or with a ``_meta`` that is not an object (left for the
    result's own check to refuse)."""
    meta: Any = result.get("_meta")
    if not names or (meta is not None and not isinstance(meta, Mapping)):
        return result
    merged = dict(cast("Mapping[str, Any]", meta or {}))
    merged[SERVER_MODELS_META_KEY] = list(names)
    return {**result, "_meta": merged}


def server_models(meta: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The names a result's ``meta`` gives under :data:`SERVER_MODELS_META_KEY`,
    bounded as the server bounds them (a peer may not): nothing for a value
    that is not a list, and only its strings."""
    listed: Any = None if meta is None else meta.get(SERVER_MODELS_META_KEY)
    names: tuple[str, ...] = ()
    if isinstance(listed, list):
        for name in cast("list[Any]", listed):
            if len(names) >= MAX_SERVER_MODELS:
                break
            if isinstance(name, str):
                names = with_model_name(names, name)
    return names

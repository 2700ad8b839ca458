"""``SamplingRequest`` → Gemini ``generateContent`` request body (REST, camelCase).

Owns the Gemini Developer API wire spelling of a request, as documented for REST
(camelCase keys, standard base64). Pure: returns the JSON body as a dict; the
model and the streaming choice are part of the URL, built in
``bridge.providers``. Responses are read by ``decoders.gemini``.

Notes on the mapping:

* Tool results become ``functionResponse`` parts named after the call they
  answer, with ``{"output": text}`` or, for a failed call, ``{"error": text}``
  (Gemini's documented convention; there is no error flag). A result's images
  and audio travel in the response's ``parts``.
* Images and audio are sent as ``inlineData``; assistant turns use role
  ``model``.
* Tool choice maps to ``toolConfig.functionCallingConfig`` modes ``AUTO``,
  ``ANY``, ``NONE``; a named tool is ``ANY`` with ``allowedFunctionNames``.
* Structured output uses ``responseMimeType: application/json`` with
  ``responseJsonSchema`` (the schema as given; Gemini supports a subset).
* ``metadata``, ``model_preferences`` and ``include_context`` are not sent.
* ``thoughtSignature`` values and thought parts come back from
  ``decoders.gemini`` in block ``meta`` under :data:`META_KEY` and are echoed in
  place. A call id that the decoder had to synthesize is not sent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from runtime.messages import Audio, Block, Image, NamedTool, Text, ToolResult, ToolUse
from runtime.requests import SamplingRequest

from ._common import (
    JSONObject,
    before_blocks,
    check_assistant_blocks,
    native_tools,
    own_meta,
    prepare_messages,
    split_results,
    tool_choice,
)

__all__ = ["META_KEY", "encode_request"]

META_KEY = "io.yieldmcp/gemini"
"""Block ``meta`` key holding Gemini continuity data (see the module doc)."""

_MODES = {"auto": "AUTO", "required": "ANY", "none": "NONE"}


def encode_request(request: SamplingRequest) -> JSONObject:
    """The ``generateContent`` JSON body for ``request`` (also for streaming).

    Raises:
        InvalidMessages: an assistant turn holding media.
        LocalProtocolError: an inconsistent tool choice.
    """
    body: JSONObject = {"contents": _contents(request)}
    if request.system_prompt is not None:
        body["systemInstruction"] = {"parts": [{"text": request.system_prompt}]}
    body.update(_tools(request))
    body["generationConfig"] = _generation_config(request)
    return body


def _generation_config(request: SamplingRequest) -> JSONObject:
    config: JSONObject = {"maxOutputTokens": request.max_tokens}
    if request.temperature is not None:
        config["temperature"] = request.temperature
    if request.stop_sequences:
        config["stopSequences"] = list(request.stop_sequences)
    if request.schema_tool is not None:
        config["responseMimeType"] = "application/json"
        config["responseJsonSchema"] = dict(request.schema_tool.input_schema)
    return config


def _contents(request: SamplingRequest) -> list[JSONObject]:
    messages = prepare_messages(request)
    uses = {b.id: b for m in messages for b in m.content if isinstance(b, ToolUse)}
    out: list[JSONObject] = []
    for index, message in enumerate(messages):
        if message.role == "assistant":
            check_assistant_blocks(index, message.content)
            out.append({"role": "model", "parts": _model_parts(message.content)})
        else:
            out.append({"role": "user", "parts": _user_parts(message.content, uses)})
    return out


def _model_parts(blocks: Sequence[Block]) -> list[JSONObject]:
    parts: list[JSONObject] = []
    for block in blocks:
        parts.extend(before_blocks(block, META_KEY))
        part = _model_part(block)
        if part is not None:
            signature = own_meta(block, META_KEY).get("thoughtSignature")
            if isinstance(signature, str):
                part["thoughtSignature"] = signature
            parts.append(part)
    return parts


def _model_part(block: Block) -> JSONObject | None:
    if isinstance(block, ToolUse):
        call: JSONObject = {"name": block.name, "args": dict(block.input)}
        if not _synthetic(block):
            call = {"id": block.id, **call}
        return {"functionCall": call}
    assert isinstance(block, Text)
    if block.text or "thoughtSignature" in own_meta(block, META_KEY):
        return {"text": block.text}
    return None


def _synthetic(use: ToolUse) -> bool:
    return own_meta(use, META_KEY).get("syntheticId") is True


def _user_parts(
    blocks: Sequence[Block], uses: Mapping[str, ToolUse]
) -> list[JSONObject]:
    results, others = split_results(blocks)
    parts = [_function_response(r, uses.get(r.tool_use_id)) for r in results]
    parts += [_part(b) for b in others]
    return parts


def _function_response(result: ToolResult, use: ToolUse | None) -> JSONObject:
    texts = [b.text for b in result.content if isinstance(b, Text)]
    payload: Any = "\n".join(texts)
    if not texts and result.structured_content is not None:
        payload = result.structured_content
    response: JSONObject = {"name": use.name if use is not None else ""}
    if use is None or not _synthetic(use):
        response = {"id": result.tool_use_id, **response}
    response["response"] = {"error" if result.is_error else "output": payload}
    media = [_part(b) for b in result.content if isinstance(b, Image | Audio)]
    if media:
        response["parts"] = media
    return {"functionResponse": response}


def _part(block: Text | Image | Audio) -> JSONObject:
    if isinstance(block, Text):
        return {"text": block.text}
    return {"inlineData": {"mimeType": block.mime_type, "data": block.data}}


def _tools(request: SamplingRequest) -> JSONObject:
    choice = tool_choice(request)
    tools = native_tools(request)
    if not tools:
        return {}
    declarations: list[JSONObject] = []
    for spec in tools:
        declaration: JSONObject = {"name": spec.name}
        if spec.description is not None:
            declaration["description"] = spec.description
        declaration["parametersJsonSchema"] = dict(spec.input_schema)
        declarations.append(declaration)
    out: JSONObject = {"tools": [{"functionDeclarations": declarations}]}
    if isinstance(choice, NamedTool):
        config: JSONObject = {"mode": "ANY", "allowedFunctionNames": [choice.name]}
        out["toolConfig"] = {"functionCallingConfig": config}
    elif choice is not None:
        out["toolConfig"] = {"functionCallingConfig": {"mode": _MODES[choice]}}
    return out

"""``SamplingRequest`` → Ollama ``/api/chat`` request body.

Owns Ollama's native chat wire spelling, including the server fields the Python
SDK drops (``tool_call_id`` on tool messages, ``id`` and ``index`` on calls), so
it is meant for raw HTTP. Pure: returns the JSON body as a dict; the HTTP call
lives in ``bridge.providers``, responses are read by ``decoders.ollama``.

What Ollama cannot honour, and what is done instead:

* **Tool choice has no field.** ``auto`` sends the tools as they are; ``none``
  leaves the tools out. ``required`` and a named tool cannot be enforced: the
  tools (for a named tool, only that one) are sent and the system prompt gains
  an instruction to call one. This is best-effort; callers that need a call
  (``sample_tools``) check and retry.
* A failed tool result has no flag: its text gets an ``Error: `` prefix.
* Audio is not accepted: it raises ``InvalidMessages``. Images travel as raw
  base64 in the message's ``images``. Several text blocks join with newlines.
* Structured output uses ``format`` with the JSON schema (grammar-constrained).
* ``stream`` is always sent, because the server defaults it to true.
* ``metadata``, ``model_preferences`` and ``include_context`` are not sent.
"""

from __future__ import annotations

from collections.abc import Sequence

from runtime.errors import InvalidMessages
from runtime.messages import Audio, Block, Image, NamedTool, Text, ToolUse
from runtime.requests import SamplingRequest

from ._common import (
    JSONObject,
    check_assistant_blocks,
    native_tools,
    prepare_messages,
    result_text,
    split_results,
    tool_choice,
)

__all__ = ["encode_request"]


def encode_request(
    request: SamplingRequest, *, model: str, stream: bool = False
) -> JSONObject:
    """The ``/api/chat`` JSON body for ``request``.

    Raises:
        InvalidMessages: content Ollama cannot carry (audio).
        LocalProtocolError: an inconsistent tool choice.
    """
    body: JSONObject = {
        "model": model,
        "messages": _messages(request),
        "stream": stream,
        "options": _options(request),
    }
    tools = _tools(request)
    if tools:
        body["tools"] = tools
    if request.schema_tool is not None:
        body["format"] = dict(request.schema_tool.input_schema)
    return body


def _options(request: SamplingRequest) -> JSONObject:
    options: JSONObject = {"num_predict": request.max_tokens}
    if request.temperature is not None:
        options["temperature"] = request.temperature
    if request.stop_sequences:
        options["stop"] = list(request.stop_sequences)
    return options


def _tools(request: SamplingRequest) -> list[JSONObject]:
    choice = tool_choice(request)
    if choice == "none":
        return []
    tools = native_tools(request)
    if isinstance(choice, NamedTool):
        tools = tuple(t for t in tools if t.name == choice.name)
    out: list[JSONObject] = []
    for spec in tools:
        function: JSONObject = {"name": spec.name}
        if spec.description is not None:
            function["description"] = spec.description
        function["parameters"] = dict(spec.input_schema)
        out.append({"type": "function", "function": function})
    return out


def _system(request: SamplingRequest) -> str | None:
    choice = tool_choice(request)
    if isinstance(choice, NamedTool):
        rule = f"You must answer by calling the tool {choice.name}."
    elif choice == "required":
        rule = "You must answer by calling one of the provided tools."
    else:
        return request.system_prompt
    return (
        rule if request.system_prompt is None else f"{request.system_prompt}\n\n{rule}"
    )


def _messages(request: SamplingRequest) -> list[JSONObject]:
    messages = prepare_messages(request)
    names = {
        b.id: b.name for m in messages for b in m.content if isinstance(b, ToolUse)
    }
    out: list[JSONObject] = []
    system = _system(request)
    if system is not None:
        out.append({"role": "system", "content": system})
    for index, message in enumerate(messages):
        if message.role == "assistant":
            out.append(_assistant(index, message.content))
        else:
            out.extend(_user(index, message.content, names))
    return out


def _assistant(index: int, blocks: Sequence[Block]) -> JSONObject:
    check_assistant_blocks(index, blocks)
    text = "".join(b.text for b in blocks if isinstance(b, Text))
    out: JSONObject = {"role": "assistant", "content": text}
    uses = [b for b in blocks if isinstance(b, ToolUse)]
    if uses:
        out["tool_calls"] = [
            {
                "id": use.id,
                "function": {
                    "index": i,
                    "name": use.name,
                    "arguments": dict(use.input),
                },
            }
            for i, use in enumerate(uses)
        ]
    return out


def _user(
    index: int, blocks: Sequence[Block], names: dict[str, str]
) -> list[JSONObject]:
    results, others = split_results(blocks)
    out: list[JSONObject] = []
    for result in results:
        message: JSONObject = {
            "role": "tool",
            "tool_name": names.get(result.tool_use_id, ""),
            "tool_call_id": result.tool_use_id,
            "content": result_text(result),
        }
        out.append(_with_images(index, message, result.content))
    if others:
        text = "\n".join(b.text for b in others if isinstance(b, Text))
        out.append(_with_images(index, {"role": "user", "content": text}, others))
    return out


def _with_images(
    index: int, message: JSONObject, blocks: Sequence[Text | Image | Audio]
) -> JSONObject:
    if any(isinstance(b, Audio) for b in blocks):
        raise InvalidMessages(
            f"message {index}: Ollama does not accept audio; transcribe it first"
        )
    images = [b.data for b in blocks if isinstance(b, Image)]
    if images:
        message["images"] = images
    return message

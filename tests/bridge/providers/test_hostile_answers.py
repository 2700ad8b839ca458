"""A provider whose answers no MCP message can carry, over real HTTP.

What a hostile or broken provider sends reaches an MCP server once decoded:
errors that quote the API key, JSON nested past what the other side reads,
``NaN``, lone surrogates. Each is refused in one short line without the key,
or mended, here (:mod:`decoders.peer_json`, ``HttpProvider``).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio

from runtime.errors import ProviderError, RemoteProtocolError
from runtime.messages import RAW_ARGUMENTS_KEY, Text, ToolUse
from tests.bridge.providers.cases import CASES
from tests.bridge.providers.fake_server import CONTENT_TYPES, FakeProvider, Reply
from tests.bridge.providers.test_http import KEY, _texts, provider

KEYED = ["openai", "openai_responses", "anthropic", "gemini"]
ECHO: dict[str, Any] = {  # every API's fields, each the key or quoting it
    "candidates": KEY,
    "choices": KEY,
    "content": KEY,
    "message": KEY,
    "output": KEY,
    "status": "failed",
    "error": {"message": f"failed for key {KEY}"},
    "usage": {"prompt_tokens": KEY, "input_tokens": KEY},
}


def _openai(message: dict[str, Any]) -> dict[str, Any]:
    choice = {"index": 0, "message": {"role": "assistant", **message}}
    return {"model": "m", "choices": [{**choice, "finish_reason": "stop"}]}


def _call(arguments: str) -> dict[str, Any]:
    function = {"name": "f", "arguments": arguments}
    return _openai(
        {"tool_calls": [{"id": "c1", "type": "function", "function": function}]}
    )


@pytest.mark.parametrize("name", KEYED)
async def test_a_key_an_answer_quotes_is_never_in_the_error(
    name: str, fake: FakeProvider
) -> None:
    # A 200 answer's own error (openai-responses' "failed", gemini's), or a
    # field of the wrong type quoted by the decoder: the key reached the
    # terminal, the --trace page and the MCP server.
    fake.script.append(Reply.json(ECHO))
    with (
        trio.fail_after(5),
        pytest.raises((ProviderError, RemoteProtocolError)) as raised,
    ):
        await provider(name, fake).complete(CASES["text"])
    assert KEY not in _texts(raised.value)


@pytest.mark.parametrize("name", ["openai", "anthropic", "gemini"])
async def test_a_key_a_stream_event_quotes_is_never_in_the_error(
    name: str, fake: FakeProvider
) -> None:
    event = {"error": {"message": f"bad key {KEY}", "type": "error"}, "type": "error"}
    body = f"data: {json.dumps(event)}\n\n".encode()
    fake.script.append(Reply(body=body, content_type=CONTENT_TYPES["sse"]))
    with (
        trio.fail_after(5),
        pytest.raises((ProviderError, RemoteProtocolError)) as raised,
    ):
        await provider(name, fake, stream=True).complete(CASES["text"])
    assert KEY not in _texts(raised.value)


@pytest.mark.parametrize("name", [*KEYED, "ollama"])
async def test_json_nested_past_python_is_one_line(
    name: str, fake: FakeProvider
) -> None:
    # A 2 KB body nested 1,000 deep was a RecursionError and an 89-line
    # traceback.
    fake.script.append(Reply(body=b"[" * 1000 + b"]" * 1000))
    with trio.fail_after(5), pytest.raises(RemoteProtocolError) as raised:
        await provider(name, fake).complete(CASES["text"])
    assert "nested deeper than 100 levels" in str(raised.value)
    assert len(str(raised.value)) < 400


@pytest.mark.parametrize(
    "arguments",
    [
        '{"a":' * 150 + "1" + "}" * 150,
        '{"cell": NaN}',
        '{"cell": 1e400}',
        '{"a": Infinity}',
    ],
    ids=["deep", "nan", "past-a-float", "infinity"],
)
async def test_arguments_no_mcp_message_carries_are_the_raw_text(
    arguments: str, fake: FakeProvider
) -> None:
    # Nested 150 deep (400 bytes), the answer was dropped unread by the MCP
    # server's reader (about 200 levels there, once wrapped) and the call
    # hung; NaN went on the wire as bare NaN, which is no JSON. As raw text,
    # the runtime's validation sees invalid output and asks again.
    fake.script.append(Reply.json(_call(arguments)))
    with trio.fail_after(5):
        reply = await provider("openai", fake).complete(CASES["text"])
    [use] = [b for b in reply.content if isinstance(b, ToolUse)]
    assert use.input == {RAW_ARGUMENTS_KEY: arguments}


async def test_a_body_holding_nan_is_one_line(fake: FakeProvider) -> None:
    fake.script.append(Reply(body=b'{"model": "m", "choices": [], "x": NaN}'))
    with trio.fail_after(5), pytest.raises(RemoteProtocolError) as raised:
        await provider("openai", fake).complete(CASES["text"])
    assert "NaN is not a JSON number" in str(raised.value)


async def test_a_lone_surrogate_is_read_as_the_replacement_character(
    fake: FakeProvider,
) -> None:
    # "\ud800" made the reply impossible to write to the MCP server: the
    # whole call failed, naming no provider.
    fake.script.append(
        Reply(body=json.dumps(_openai({"content": "a\ud800b"})).encode())
    )
    with trio.fail_after(5):
        reply = await provider("openai", fake).complete(CASES["text"])
    assert [b.text for b in reply.content if isinstance(b, Text)] == ["a\ufffdb"]


async def test_a_long_malformed_answer_is_cut_in_the_error(fake: FakeProvider) -> None:
    # A text field that is a 20 MB list: one stderr line of 40 MB.
    fake.script.append(Reply.json(_openai({"content": ["x" * 100] * 200_000})))
    with trio.fail_after(20), pytest.raises(RemoteProtocolError) as raised:
        await provider("openai", fake).complete(CASES["text"])
    assert len(str(raised.value)) < 1000

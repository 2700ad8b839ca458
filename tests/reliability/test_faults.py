"""Faults and hostile input at the edges: slow peers, broken framing, logs."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import pydantic_core
import trio
import trio.testing
from hypothesis import given
from hypothesis import strategies as st

from bridge.server import Server
from bridge.transports.framing import OVERSIZED, LineBuffer
from runtime.testing.strategies import from_schema
from tests.bridge.server.test_fuzz import check_reply, expected_reply
from tests.bridge.wire import wire_peer
from tests.fixtures import interop_server as fx
from tests.fixtures import slow_tools
from tests.mcp_schema import root


async def test_a_slow_client_trips_the_request_timeout(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = Server([slow_tools.waits], sampling_timeout=30)

    async def never(method: str, params: Mapping[str, Any] | None) -> Any:
        await trio.sleep_forever()

    async with wire_peer(server, answer=never) as peer:
        await peer.initialize({"sampling": {}})
        result = await peer.request("tools/call", {"name": "waits", "arguments": {}})
        frames = peer.server_frames()
    assert result["isError"] is True
    assert "got no reply within" in result["content"][0]["text"]
    asked = [f["id"] for f in frames if f.get("method") == "sampling/createMessage"]
    withdrawn = [
        f["params"]["requestId"]
        for f in frames
        if f.get("method") == "notifications/cancelled"
    ]
    assert withdrawn == asked  # the peer is told to stop
    assert slow_tools.FINALLY[-1] == "waits"


@given(
    st.lists(st.binary(max_size=40).filter(lambda b: b"\n" not in b), max_size=6),
    st.data(),
)
def test_any_chunking_of_a_stream_gives_the_same_lines(
    lines: list[bytes], data: st.DataObject
) -> None:
    stream = b"".join(line + b"\n" for line in lines)
    cuts = sorted(data.draw(st.sets(st.integers(0, len(stream)), max_size=8)))
    chunks = [
        stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True)
    ]
    buffer = LineBuffer()
    out = [line for chunk in chunks for line in buffer.feed(chunk)]
    assert out == [line.rstrip(b"\r") for line in lines if line.strip()]


@given(st.integers(3, 64), st.binary(min_size=1, max_size=200))
def test_an_oversized_line_is_dropped_and_reported_not_buffered(
    limit: int, payload: bytes
) -> None:
    buffer = LineBuffer(max_line=limit)
    long_line = payload.replace(b"\n", b"x") * (limit // len(payload) + 2)
    out = buffer.feed(long_line + b"\nok\n")
    assert out == [OVERSIZED, b"ok"]
    assert buffer.pending == 0


def _mutate(message: dict[str, Any], data: st.DataObject) -> dict[str, Any]:
    """A schema-valid message with one field replaced by arbitrary JSON."""
    target: Any = message
    path: list[str] = []
    while isinstance(target, dict) and target and data.draw(st.booleans()):
        key = data.draw(st.sampled_from(sorted(target)))
        path.append(key)
        target = target[key]
    if not path:
        return message
    junk = data.draw(
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=8),
            lambda inner: (
                st.lists(inner, max_size=3)
                | st.dictionaries(st.text(max_size=4), inner, max_size=3)
            ),
            max_leaves=5,
        )
    )
    mutated = pydantic_core.from_json(pydantic_core.to_json(message))
    node = mutated
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = junk
    return mutated


requests = from_schema(
    {"$defs": root("2025-11-25")["$defs"], "$ref": "#/$defs/ClientRequest"}
)


@given(requests, st.data())
async def test_mutated_schema_messages_get_a_valid_answer_and_harm_nothing(
    request: dict[str, Any], data: st.DataObject
) -> None:
    mutated = {**_mutate({**request, "jsonrpc": "2.0"}, data), "id": "fuzz"}
    frame = pydantic_core.to_json(mutated)
    server = Server([fx.chatty])
    async with wire_peer(server) as peer:
        await peer.initialize({})
        await peer.session.transport.send_raw(frame)  # type: ignore[attr-defined]
        with trio.fail_after(5):
            await trio.testing.wait_all_tasks_blocked()
        # Every reply after the answer to initialize (not just those with our id).
        replies = [f for f in peer.server_frames()[1:] if "method" not in f]
        after = await peer.request("tools/call", {"name": "chatty", "arguments": {}})
    expected = expected_reply(frame, server.tools)
    assert expected is not None, "the id makes it a request, however mangled"
    assert expected[0] == "fuzz"
    check_reply(replies, expected, method=mutated.get("method"))
    assert after["content"][0]["text"] == "done"


async def test_elicited_content_and_bad_answers_stay_out_of_the_logs(
    caplog: Any,
) -> None:
    secret = "hunter2-very-private"

    async def answer(method: str, params: Mapping[str, Any] | None) -> Any:
        return {"action": "accept", "content": {"ok": secret, "note": secret}}

    caplog.set_level(logging.WARNING)  # the CLI's default level
    async with wire_peer(Server([fx.confirm]), answer=answer) as peer:
        await peer.initialize({"elicitation": {}})
        result = await peer.request(
            "tools/call", {"name": "confirm", "arguments": {"prompt": "?"}}
        )
    assert result["isError"] is True  # the answer broke the form's schema
    assert secret not in result["content"][0]["text"]
    assert secret not in caplog.text

"""No input, however malformed, crashes the server or disturbs another call.

Hypothesis sends random bytes, random JSON, JSON-RPC-shaped junk and requests
generated from the official schema, while a call is waiting on the client.
Every frame the server answers must be well-formed JSON-RPC with a standard
error code, and the waiting call must still complete correctly.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pydantic_core
import trio
import trio.testing
from hypothesis import given
from hypothesis import strategies as st

from bridge.server import Server
from runtime.testing.strategies import from_schema
from tests.bridge.wire import wire_peer
from tests.fixtures import slow_tools
from tests.mcp_schema import root

SERVER = Server([slow_tools.waits, slow_tools.quick])
KNOWN_CODES = {-32700, -32600, -32601, -32602, -32603, -32002}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4)
    ),
    max_leaves=10,
)
ids = st.one_of(
    st.integers(), st.text(), st.none(), st.booleans(), st.floats(allow_nan=False)
)
rpc_shaped = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.sampled_from(["2.0", "1.0", 2]),
        "id": ids,
        "method": st.one_of(
            st.text(),
            st.sampled_from(["tools/call", "tools/list", "initialize"]),
            st.integers(),
        ),
        "params": json_values,
        "result": json_values,
        "error": json_values,
    },
)
schema_requests = from_schema(
    {"$defs": root("2025-11-25")["$defs"], "$ref": "#/$defs/ClientRequest"}
).map(lambda r: {**r, "jsonrpc": "2.0"})


def encode(value: Any) -> bytes:
    return pydantic_core.to_json(value)


frames = st.one_of(
    st.binary(max_size=200),
    st.text(max_size=200).map(str.encode),
    json_values.map(encode),
    rpc_shaped.map(encode),
    schema_requests.map(encode),
    st.just(b"[" * 5000 + b"]" * 5000),
    st.just(
        b'{"jsonrpc":"2.0","id":1,"method":"ping","params":'
        + b"[" * 5000
        + b"]" * 5000
        + b"}"
    ),
    st.integers(min_value=10**300).map(
        lambda n: f'{{"jsonrpc":"2.0","id":{n},"method":"ping"}}'.encode()
    ),
)


class LateAnswer:
    def __init__(self) -> None:
        self.asked = trio.Event()
        self.release = trio.Event()

    async def __call__(self, method: str, params: Mapping[str, Any] | None) -> Any:
        self.asked.set()
        await self.release.wait()
        return {
            "role": "assistant",
            "content": {"type": "text", "text": "fine"},
            "model": "m",
        }


def check_frames(frames_out: list[dict[str, Any]]) -> None:
    for frame in frames_out:
        assert frame["jsonrpc"] == "2.0"
        if "error" in frame:
            assert frame["error"]["code"] in KNOWN_CODES, frame
            assert isinstance(frame["error"]["message"], str)


@given(st.lists(frames, min_size=1, max_size=6))
async def test_junk_never_breaks_the_server_or_a_running_call(
    junk: list[bytes],
) -> None:
    answer = LateAnswer()
    async with wire_peer(SERVER, answer=answer) as peer:
        await peer.initialize({"sampling": {}})
        results: list[Any] = []
        async with trio.open_nursery() as nursery:

            async def waiting_call() -> None:
                results.append(
                    await peer.request("tools/call", {"name": "waits", "arguments": {}})
                )

            nursery.start_soon(waiting_call)
            with trio.fail_after(5):
                await answer.asked.wait()
            for frame in junk:
                await peer.session.transport.send_raw(frame)  # type: ignore[attr-defined]
            with trio.fail_after(5):
                await trio.testing.wait_all_tasks_blocked()
            answer.release.set()
        with trio.fail_after(5):
            quick = await peer.request("tools/call", {"name": "quick", "arguments": {}})
        check_frames(peer.server_frames())
    assert results == [{"content": [{"type": "text", "text": "fine"}]}]
    assert quick == {"content": [{"type": "text", "text": "quick"}]}


@given(schema_requests)
async def test_schema_generated_requests_get_a_valid_answer(
    request: dict[str, Any],
) -> None:
    request = {**request, "id": "fuzz"}
    async with wire_peer(SERVER) as peer:
        await peer.initialize({})
        await peer.session.transport.send_raw(encode(request))  # type: ignore[attr-defined]
        with trio.fail_after(5):
            await trio.testing.wait_all_tasks_blocked()
        replies = [f for f in peer.server_frames() if f.get("id") == "fuzz"]
    check_frames(replies)
    assert len(replies) <= 1

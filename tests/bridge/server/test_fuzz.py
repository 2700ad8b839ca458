"""No input, however malformed, crashes the server or disturbs another call.

Hypothesis sends random bytes, random JSON, JSON-RPC-shaped junk and requests
generated from the official schema, while a call is waiting on the client.
Every frame the server answers must be well-formed JSON-RPC with a standard
error code, and the waiting call must still complete correctly.

Each frame also gets exactly the reply its shape calls for
(:func:`expected_reply`, written from JSON-RPC 2.0 and MCP 2025-11-25, not
from the parser): one reply to a request, none to a notification or a
response, and where the input is known to be bad, the one right code: -32700
unparseable, -32600 not a request, -32601 unknown method, -32602 bad params.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any, cast

import pydantic_core
import trio
import trio.testing
from hypothesis import event, given
from hypothesis import strategies as st

from bridge.jsonrpc import coerce_id
from bridge.server import Server
from runtime.effects import LOG_LEVELS
from runtime.testing.strategies import from_schema
from tests.bridge.wire import wire_peer
from tests.fixtures import slow_tools
from tests.mcp_schema import Era, root, validate_message

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


_shapeless = (
    st.binary(max_size=200),
    st.text(max_size=200).map(str.encode),
    json_values.map(encode),
    rpc_shaped.map(encode),
)
_extremes = (
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
frames = st.one_of(*_shapeless, schema_requests.map(encode), *_extremes)
# Without schema requests, which crowd the rest out of a single draw (they have
# their own test below).
junk_frames = st.one_of(*_shapeless, *_extremes)


# --- what each frame calls for ------------------------------------------------------

RESULT = None  # in a set of expected outcomes: a result (not an error)
LISTS = frozenset(
    {"tools/list", "prompts/list", "resources/list", "resources/templates/list"}
)
LEGACY_METHODS = LISTS | {
    "initialize",
    "ping",
    "tools/call",
    "prompts/get",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "completion/complete",
    "logging/setLevel",
}


def _is_id(value: Any) -> bool:
    return isinstance(value, str) or (
        isinstance(value, int) and not isinstance(value, bool)
    )


Outcomes = Callable[[str, Mapping[str, Any], Collection[str]], frozenset[int | None]]


def expected_reply(
    frame: bytes, tools: Collection[str], outcomes: Outcomes | None = None
) -> tuple[Any, frozenset[int | None]] | None:
    """What an initialized 2025-11-25 server with ``tools`` (and no prompts or
    resources) answers to ``frame``: None for no reply, else the id the reply
    echoes (None: no id) and the outcomes allowed (:data:`RESULT` or codes).

    ``outcomes`` says what a well-formed request gets (default:
    :func:`method_outcomes`); the JSON-RPC rules before it are the same in
    both eras."""
    try:
        value: Any = pydantic_core.from_json(frame)
    except ValueError:
        return None, frozenset({-32700})
    if not isinstance(value, dict):
        return None, frozenset({-32600})
    message: dict[str, Any] = value  # pyright: ignore[reportUnknownVariableType]
    method, params = message.get("method"), message.get("params")
    raw_id = message.get("id")
    echo = raw_id if _is_id(raw_id) else None
    if "method" in message and message.get("jsonrpc") != "2.0":
        return echo, frozenset({-32600})
    if method is None and ("result" in message or "error" in message):
        return None  # a response: never answered
    if not isinstance(method, str):
        return echo, frozenset({-32600})
    if params is not None and not isinstance(params, dict):
        return echo, frozenset({-32600})
    if "id" not in message:
        return None  # a notification
    if not _is_id(raw_id):
        return None, frozenset({-32600})
    return raw_id, (outcomes or method_outcomes)(method, params or {}, tools)


def method_outcomes(
    method: str, params: Mapping[str, Any], tools: Collection[str]
) -> frozenset[int | None]:
    """The outcomes allowed for a well-formed legacy request (see above)."""
    bad = frozenset({-32602})
    if method == "initialize":
        version, capabilities = (
            params.get("protocolVersion"),
            params.get("capabilities", {}),
        )
        ok = isinstance(version, str) and isinstance(capabilities, dict)
        return frozenset({RESULT}) if ok else bad
    if method not in LEGACY_METHODS:
        return frozenset({-32601})
    if method in LISTS:
        return bad if params.get("cursor") is not None else frozenset({RESULT})
    if method == "tools/call":
        name, arguments = params.get("name"), params.get("arguments")
        known = isinstance(name, str) and name in tools
        if not known or not isinstance(arguments, dict | None):
            return bad
        # Arguments that fail the tool's schema are an isError result (SEP-1303).
        return frozenset({RESULT})
    if method == "prompts/get":
        return bad  # there are no prompts
    if method == "resources/read":
        return frozenset({-32002}) if isinstance(params.get("uri"), str) else bad
    if method in ("resources/subscribe", "resources/unsubscribe"):
        return frozenset({RESULT}) if isinstance(params.get("uri"), str) else bad
    if method == "logging/setLevel":
        return frozenset({RESULT}) if params.get("level") in LOG_LEVELS else bad
    if method == "completion/complete":
        return frozenset({RESULT}) if completion_is_well_formed(params) else bad
    return frozenset({RESULT})  # ping


def completion_is_well_formed(params: dict[str, Any]) -> bool:
    """``completion/complete`` params our server can answer: a ``ref`` and an
    ``argument`` object, with string ``ref.name``/``ref.uri``, argument name
    and value (the value defaults to "")."""
    ref, argument = params.get("ref"), params.get("argument")
    if not isinstance(ref, dict) or not isinstance(argument, dict):
        return False
    ref = cast("dict[str, Any]", ref)
    argument = cast("dict[str, Any]", argument)
    target = ref.get("name" if ref.get("type") == "ref/prompt" else "uri")
    texts = (target, argument.get("name"), argument.get("value", ""))
    return all(isinstance(text, str) for text in texts)


def check_reply(
    replies: list[dict[str, Any]],
    expected: tuple[Any, frozenset[int | None]] | None,
    *,
    method: Any = None,
    era: Era = "2025-11-25",
) -> None:
    """``replies`` (the server's frames for one input) are what was expected;
    the reply validates against the schema of ``era`` (a result as the answer
    to ``method``)."""
    if expected is None:
        assert replies == [], "a notification or a response was answered"
        return
    echo, allowed = expected
    assert len(replies) == 1, f"expected exactly one reply, got {replies}"
    (reply,) = replies
    assert reply["jsonrpc"] == "2.0", reply
    assert reply.get("id") == echo, reply
    if "error" in reply:
        assert reply["error"]["code"] in allowed, (reply, allowed)
        validate_message(era, reply)
    else:
        assert RESULT in allowed, (reply, allowed)
        assert "result" in reply, reply
        if isinstance(method, str):
            validate_message(era, reply, answering=method)


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


def _claims_id(frame: bytes, ids: set[Any]) -> bool:
    """Whether ``frame`` is an object whose ``id`` is one of ``ids`` as JSON-RPC
    reads ids (``"7"`` is 7; a boolean is no id)."""
    try:
        value = pydantic_core.from_json(frame)
    except ValueError:
        return False
    if not isinstance(value, dict) or "id" not in value:
        return False
    claimed = coerce_id(cast("dict[str, Any]", value)["id"])
    return claimed is not None and claimed in {coerce_id(i) for i in ids}


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
            ours = set(peer.session.outstanding)
            for frame in junk:
                if _claims_id(frame, ours):
                    # A client that reuses the id of its own pending request
                    # may have the server's reply settle that request: the
                    # server cannot tell the two apart, so this is no fault.
                    continue
                await peer.session.transport.send_raw(frame)  # type: ignore[attr-defined]
            with trio.fail_after(5):
                await trio.testing.wait_all_tasks_blocked()
            answer.release.set()
        with trio.fail_after(5):
            quick = await peer.request("tools/call", {"name": "quick", "arguments": {}})
        check_frames(peer.server_frames())
    assert results == [
        {
            "content": [{"type": "text", "text": "fine"}],
            "structuredContent": {"result": "fine"},  # -> str, as the SDK
        }
    ]
    assert quick == {
        "content": [{"type": "text", "text": "quick"}],
        "structuredContent": {"result": "quick"},  # -> str, as the SDK
    }


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
        after_initialize = peer.server_frames()[1:]
    assert replies == after_initialize, "a reply without the request's id"
    check_reply(
        replies, expected_reply(encode(request), SERVER.tools), method=request["method"]
    )


@given(junk_frames)
async def test_each_junk_frame_gets_exactly_the_reply_its_shape_calls_for(
    frame: bytes,
) -> None:
    async with wire_peer(SERVER) as peer:
        await peer.initialize({})
        await peer.session.transport.send_raw(frame)  # type: ignore[attr-defined]
        with trio.fail_after(5):
            await trio.testing.wait_all_tasks_blocked()
        replies = peer.server_frames()[1:]  # after the answer to initialize
    expected = expected_reply(frame, SERVER.tools)
    event("no reply" if expected is None else f"reply: {sorted(expected[1], key=str)}")
    method = _method(frame) if expected and RESULT in expected[1] else None
    check_reply(replies, expected, method=method)


def _method(frame: bytes) -> Any:
    """The method of a frame known to be a JSON-RPC request."""
    return pydantic_core.from_json(frame)["method"]

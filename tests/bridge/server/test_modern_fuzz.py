"""2026-07-28 requests, generated from the official schema, and mangled.

Hypothesis generates ``ClientRequest`` messages of the 2026-07-28 schema (each
carrying the ``_meta`` envelope; mostly with the version we speak, so they get
past it) and mutates them at any path. Each is sent to a server that was never
initialized, as a stateless client would, next to a well-formed two-round
call. Every one gets exactly one reply, with the outcome :func:`modern_outcomes`
allows (written from the 2026-07-28 rules: -32602 for a missing or bad
envelope, -32022 for an unsupported version, -32601 for a method that is not
one of the era's, -32602 for bad params, -32021 for a missing capability); the
reply and everything else the server sends validate against the 2026 schema;
and the well-formed call still completes.
"""

from __future__ import annotations

import copy
from collections.abc import Collection, Iterable, Iterator, Mapping
from typing import Any, cast

import pydantic_core
import trio
import trio.testing
from hypothesis import event, given
from hypothesis import strategies as st

from bridge.server import Server
from bridge.server.limits import ServerLimits
from runtime.testing.strategies import from_schema
from tests.bridge.server.test_fuzz import (
    LISTS,
    RESULT,
    check_reply,
    completion_is_well_formed,
    expected_reply,
    json_values,
    method_outcomes,
)
from tests.bridge.wire import MODERN_META, WirePeer, modern_meta, wire_peer
from tests.fixtures import interop_server as fx
from tests.mcp_schema import Era, root, validate_message

SERVER = Server([fx.confirm, fx.chatty, fx.fails])
CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
MODERN_METHODS = LISTS | {
    "server/discover",
    "tools/call",
    "resources/read",
    "prompts/get",
    "completion/complete",
}


def is_modern(method: Any, params: Mapping[str, Any]) -> bool:
    """Whether the server reads a request as 2026-07-28 (not legacy)."""
    meta = params.get("_meta")
    return method == "server/discover" or (
        isinstance(meta, dict) and MODERN_META in meta
    )


def modern_outcomes(
    method: str, params: Mapping[str, Any], tools: Collection[str]
) -> frozenset[int | None]:
    """The outcomes allowed for a well-formed request to a server that was
    never initialized, with ``tools`` and no prompts or resources."""
    if not is_modern(method, params):  # a legacy request, before initialize
        if method in ("initialize", "ping"):
            return method_outcomes(method, params, tools)
        return frozenset({-32600})
    bad = frozenset({-32602})
    meta: Any = params.get("_meta")
    if (
        not isinstance(meta, dict)
        or MODERN_META not in meta
        or CAPABILITIES not in meta
    ):
        return bad
    if meta[MODERN_META] != "2026-07-28":
        return frozenset({-32022})
    if not isinstance(meta[CAPABILITIES], dict):
        return bad
    if method == "subscriptions/listen":
        return listen_outcomes(params)
    if method not in MODERN_METHODS:
        return frozenset({-32601})
    if method in LISTS:
        return bad if params.get("cursor") is not None else frozenset({RESULT})
    if method in ("resources/read", "prompts/get"):
        return bad  # there are no resources or prompts
    if method == "completion/complete":
        return frozenset({RESULT}) if completion_is_well_formed(params) else bad
    if method == "tools/call":
        name, arguments = params.get("name"), params.get("arguments")
        known = isinstance(name, str) and name in tools
        if not known or not isinstance(arguments, dict | None):
            return bad
        # Arguments, inputResponses and requestState are judged by the tool
        # and the round; a question the client cannot answer is -32021.
        return frozenset({RESULT, -32602, -32021})
    return frozenset({RESULT})  # server/discover


LISTENING: Any = "listening"
"""The outcome of a well-formed ``subscriptions/listen`` over a session: it is
acknowledged and stays open (no reply) until the client cancels it."""


def listen_outcomes(params: Mapping[str, Any]) -> frozenset[int | None]:
    wanted: Any = params.get("notifications")
    if not isinstance(wanted, dict):
        return frozenset({-32602})
    uris: Any = cast("dict[str, Any]", wanted).get("resourceSubscriptions", [])
    if not isinstance(uris, list) or not all(isinstance(u, str) for u in uris):
        return frozenset({-32602})
    if len(set(uris)) > ServerLimits().max_subscriptions:
        return frozenset({-32000})
    if any(len(u.encode("utf-8", "surrogatepass")) > 16 * 1024 for u in uris):
        return frozenset({-32602})
    return frozenset({LISTENING})


# --- requests -----------------------------------------------------------------------


def _requests(type_name: str) -> st.SearchStrategy[dict[str, Any]]:
    return from_schema(
        {"$defs": root("2026-07-28")["$defs"], "$ref": f"#/$defs/{type_name}"}
    )


# Calls, the richest of requests, as often as all the others together.
schema_requests = _requests("ClientRequest") | _requests("CallToolRequest")


@st.composite
def modern_requests(draw: st.DrawFn) -> dict[str, Any]:
    """A schema-valid 2026-07-28 request with id ``"fuzz"``: mostly in our
    version, and a call mostly to a tool the server has."""
    request: dict[str, Any] = draw(schema_requests)
    params = request["params"]
    if draw(st.sampled_from([True, True, True, False])):
        params["_meta"][MODERN_META] = "2026-07-28"
    if request["method"] == "tools/call" and draw(st.sampled_from([True, True, False])):
        params["name"] = draw(st.sampled_from(sorted(SERVER.tools)))
    return {**request, "id": "fuzz"}


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path into ``value`` (the root excluded)."""
    steps: Iterable[tuple[Any, Any]] = ()
    if isinstance(value, dict):
        steps = cast("dict[str, Any]", value).items()
    elif isinstance(value, list):
        steps = enumerate(cast("list[Any]", value))
    for step, item in steps:
        yield (*prefix, step)
        yield from paths(item, (*prefix, step))


def mutated(request: dict[str, Any], data: st.DataObject) -> dict[str, Any]:
    """``request`` with one node, anywhere (the envelope too), dropped or
    replaced by any JSON; the id stays ``"fuzz"``."""
    out = copy.deepcopy(request)
    path = data.draw(st.sampled_from(list(paths(request))), label="path")
    parent = out
    for step in path[:-1]:
        parent = parent[step]
    if data.draw(st.booleans(), label="drop"):
        del parent[path[-1]]
    else:
        parent[path[-1]] = data.draw(json_values, label="new value")
    return {**out, "id": "fuzz"}


# --- the exchange -------------------------------------------------------------------

CONFIRM = {"name": "confirm", "arguments": {"prompt": "Proceed?"}}
ACCEPT = {"confirm": {"action": "accept", "content": {"ok": True}}}


def encode(value: Any) -> bytes:
    return pydantic_core.to_json(value)


async def exchange(request: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
    """Send ``request`` right behind the first round of a well-formed call,
    finish that call, and return the server's replies to ``request`` and what
    the call returned."""
    async with wire_peer(SERVER) as peer:
        first = {"jsonrpc": "2.0", "id": "good", "method": "tools/call"}
        first["params"] = {**CONFIRM, "_meta": modern_meta()}
        send = peer.session.transport.send_raw  # type: ignore[attr-defined]
        await send(encode(first))  # both requests are in flight at once
        await send(encode(request))
        with trio.fail_after(5):
            await trio.testing.wait_all_tasks_blocked()
        frames = peer.server_frames()
        (round_one,) = [f for f in frames if f.get("id") == "good"]
        state = round_one["result"]["requestState"]
        done = await peer.request(
            "tools/call",
            {
                **CONFIRM,
                "_meta": modern_meta(),
                "inputResponses": ACCEPT,
                "requestState": state,
            },
        )
        check_schema(peer, frames, round_one)
    replies = [f for f in frames if "method" not in f and f.get("id") != "good"]
    return replies, done["content"][0]["text"]


def check_schema(
    peer: WirePeer, frames: list[dict[str, Any]], round_one: dict[str, Any]
) -> None:
    """What the server sent, other than the reply under test, is 2026-07-28."""
    for frame in frames:
        if "method" in frame:
            validate_message("2026-07-28", frame)
    validate_message("2026-07-28", round_one, answering="tools/call")
    assert round_one["result"]["resultType"] == "input_required"


def era_of(request: dict[str, Any]) -> Era:
    params: Any = request.get("params")
    if isinstance(params, dict) and is_modern(request.get("method"), params):
        return "2026-07-28"
    return "2025-11-25"


def check(request: dict[str, Any], replies: list[dict[str, Any]], text: str) -> None:
    expected = expected_reply(encode(request), SERVER.tools, modern_outcomes)
    assert expected is not None, "the id makes it a request, however mangled"
    assert text == "accept:True:", "the well-formed call did not complete"
    if expected[1] == {LISTENING}:
        assert replies == [], "a listen is answered only when it ends"
        return
    got = [r.get("error", {}).get("code", "result") for r in replies]
    event(f"{request.get('method')!s:.30}: {sorted(expected[1], key=str)} -> {got}")
    check_reply(replies, expected, method=request.get("method"), era=era_of(request))
    assert text == "accept:True:", "the well-formed call did not complete"


# --- the tests ----------------------------------------------------------------------


@given(modern_requests())
async def test_schema_generated_2026_requests_get_one_valid_reply(
    request: dict[str, Any],
) -> None:
    replies, text = await exchange(request)
    check(request, replies, text)


@given(modern_requests(), st.data())
async def test_mutated_2026_requests_get_one_valid_reply_and_harm_nothing(
    request: dict[str, Any], data: st.DataObject
) -> None:
    request = mutated(request, data)
    replies, text = await exchange(request)
    check(request, replies, text)

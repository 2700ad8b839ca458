"""Property: a call played through a store is the call played statelessly.

Hypothesis builds a tool from a list of operations (steps, questions, log
notices, a branch asking two questions at once), and a client that answers
every question, or none, in each round. The call is played twice: with the
journal sealed in ``requestState`` (no store), and with a store, where some
rounds go to a new server on the same store (a restart). Both plays must give
the same result, ask the same questions in the same rounds, send the same
notices and run each step the same number of times (once). With a store,
the last request sent again to a new server (its reply lost) gets the same
result and runs nothing again; sent with other answers, it is refused.
"""

from __future__ import annotations

import secrets
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from bridge.server import Server
from bridge.stores import JournalStore, MemoryStore, open_store
from runtime import Context, Op, tool
from runtime.errors import PeerError
from tests.bridge.wire import modern_meta, wire_peer

LOG_LEVEL = "io.modelcontextprotocol/logLevel"

Ops = Sequence[tuple[str, int]]


class Note(BaseModel):
    text: str


def _tool(ops: Ops, ran: list[str]) -> Any:
    keys = [f"q{i}" for i, _ in enumerate(ops)]
    keys += [f"b{i}{side}" for i, _ in enumerate(ops) for side in "xy"]

    def work(name: str, seed: int) -> str:
        ran.append(name)
        return f"{name}={seed * 7 % 11}"

    def child(ctx: Context, key: str) -> Op[str]:
        answer = yield from ctx.elicit(key, f"{key}?")
        return answer.content.text if answer.content else "-"

    @tool(name="play", elicits=dict.fromkeys(keys, Note), version="1")
    def play(ctx: Context) -> Op[str]:
        seen: list[str] = []
        for i, (kind, seed) in enumerate(ops):
            if kind == "step":
                seen.append((yield from ctx.step_as(f"s{i}")(work, f"s{i}", seed)))
            elif kind == "ask":
                answer = yield from ctx.elicit(f"q{i}", f"after {seen[-1:]}?")
                seen.append(answer.content.text if answer.content else "-")
            elif kind == "log":
                yield ctx.log("info", f"log {i} after {len(seen)}")
            else:
                pair = yield from ctx.branch(
                    lambda c, k=f"b{i}x": child(c, k),
                    lambda c, k=f"b{i}y": child(c, k),
                )
                seen.extend(pair)
        return " ".join(seen)

    return play


async def _play(
    ops: Ops,
    silent: Sequence[bool],
    *,
    store: JournalStore | None,
    restarts: Sequence[bool],
) -> dict[str, Any]:
    """Play the call to its end; what a client and the tool's steps saw."""
    ran: list[str] = []
    key, shared = secrets.token_bytes(32), store
    program = _tool(ops, ran)

    def fresh() -> Server:
        return Server([program], state_keys=[key], store=shared)

    server = fresh()
    meta = modern_meta({"elicitation": {}}, **{LOG_LEVEL: "debug"})
    params: dict[str, Any] = {"name": "play", "arguments": {}, "_meta": meta}
    asked: list[list[tuple[str, str]]] = []
    notices: list[str] = []
    for number in range(64):
        if store and number < len(restarts) and restarts[number]:
            server = fresh()  # the process restarted between rounds
        async with wire_peer(server) as peer:
            result = await peer.request("tools/call", params)
            notices += [str(n.params["data"]) for n in peer.notifications if n.params]
        if result.get("resultType") != "input_required":
            played = {"result": result["content"], "asked": asked, "ran": ran,
                      "notices": notices}  # fmt: skip
            if store and "requestState" in params:
                played["again"] = await _again(fresh(), params, ran)
            return played
        requests = result["inputRequests"]
        if store:  # a reference to the call in the store, not its journal
            state = server.sealer.open(result["requestState"], purpose="tools/call")
            assert set(state) == {
                "method",
                "name",
                "args",
                "version",
                "call",
                "round",
                "exp",
            }
        asked.append(sorted((k, v["params"]["message"]) for k, v in requests.items()))
        quiet = number < len(silent) and silent[number]
        params = {
            **params,
            "requestState": result["requestState"],
            "inputResponses": {} if quiet else {
                k: {"action": "accept", "content": {"text": f"<{k}>"}}
                for k in requests
            },
        }  # fmt: skip
    raise AssertionError("the call did not end")


async def _again(server: Server, params: dict[str, Any], ran: list[str]) -> Any:
    """The last request sent again, as is and with other answers: what each
    got, and the steps that ran meanwhile (none may)."""
    steps = len(ran)
    async with wire_peer(server) as peer:
        same = await peer.request("tools/call", params)
        other = {k: {"action": "decline"} for k in params["inputResponses"]}
        try:
            await peer.request("tools/call", {**params, "inputResponses": other})
        except PeerError as refused:
            changed: Any = refused.data
        else:
            changed = "answered"
    return same["content"], changed if other else None, ran[steps:]


ops = st.lists(
    st.tuples(st.sampled_from(["step", "ask", "log", "branch"]), st.integers(0, 100)),
    max_size=8,
)


async def _compare(
    operations: Ops, silent: list[bool], restarts: list[bool], store: JournalStore
) -> None:
    stateless = await _play(operations, silent, store=None, restarts=[])
    durable = await _play(operations, silent, store=store, restarts=restarts)
    again = durable.pop("again", None)
    assert durable == stateless
    if again is not None:  # the call took more than one round
        content, changed, ran = again
        assert content == durable["result"]
        assert changed in ({"reason": "request_state_used"}, None)
        assert ran == []
    steps = [f"s{i}" for i, (kind, _) in enumerate(operations) if kind == "step"]
    assert durable["ran"] == steps  # each step ran once, in order


@given(
    ops,
    st.lists(st.booleans(), max_size=10),
    st.lists(st.booleans(), max_size=10),
)
async def test_a_call_through_a_store_equals_the_call_in_request_state(
    operations: Ops, silent: list[bool], restarts: list[bool]
) -> None:
    await _compare(operations, silent, restarts, MemoryStore())


@settings(max_examples=25)  # a file per example, and a thread per store call
@given(
    ops,
    st.lists(st.booleans(), max_size=10),
    st.lists(st.booleans(), max_size=10),
)
async def test_the_same_holds_on_sqlite(
    operations: Ops, silent: list[bool], restarts: list[bool]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(f"sqlite:{Path(tmp) / 'calls.db'}")
        try:
            await _compare(operations, silent, restarts, store)
        finally:
            store.close()

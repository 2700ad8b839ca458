"""A tool's new version going on with the 2026-07-28 calls of an older one.

A call parks on a question under version "1" of ``book``; the server then
runs version "2". With ``continues=("1",)`` the retry goes on under the new
code, which keeps to the old path where the call went past the change
(``ctx.patched`` is False before the question the call was parked on), and a
new call takes the new path. Without it, the state is refused with the
one-line error it always had. The same holds for a call kept in a store
(the state a reference) and for one whose journal travels in its state.
"""

from __future__ import annotations

import secrets
from typing import Any

import pytest
from pydantic import BaseModel

from bridge.server import Server
from bridge.stores import open_store
from runtime import Context, Op, tool
from runtime.errors import PeerError
from tests.bridge.wire import modern_meta, wire_peer


class Confirm(BaseModel):
    ok: bool


def reserve() -> str:
    return "seat 12A"


def insure() -> str:
    return "insured"


def v1() -> Any:
    @tool(name="book", elicits={"confirm": Confirm}, version="1")
    def book(ctx: Context) -> Op[str]:
        seat = yield from ctx.step(reserve)
        answer = yield from ctx.elicit("confirm", "Book it?")
        return f"{seat} {answer.action}"

    return book


def v2(continues: tuple[str, ...]) -> Any:
    @tool(name="book", elicits={"confirm": Confirm}, version="2", continues=continues)
    def book(ctx: Context) -> Op[str]:
        seat = yield from ctx.step(reserve)
        if (yield from ctx.patched("insure")):
            seat += " " + (yield from ctx.step(insure))
        answer = yield from ctx.elicit("confirm", "Book it?")
        return f"{seat} {answer.action}"

    return book


ANSWER = {"confirm": {"action": "accept", "content": {"ok": True}}}


async def _call(server: Server, state: str | None = None) -> Any:
    params: dict[str, Any] = {"name": "book", "arguments": {}, "_meta": modern_meta()}
    if state is not None:
        params |= {"requestState": state, "inputResponses": ANSWER}
    async with wire_peer(server) as peer:
        try:
            return await peer.request("tools/call", params)
        except PeerError as exc:
            return exc


@pytest.fixture(params=["state", "store"])
def servers(request: pytest.FixtureRequest) -> Any:
    key = secrets.token_bytes(32)
    store = open_store("memory:") if request.param == "store" else None

    def make(made: Any) -> Server:
        return Server([made], state_keys=[key], store=store)

    yield make
    if store is not None:
        store.close()


async def test_a_version_that_continues_the_old_one_finishes_its_call(
    servers: Any,
) -> None:
    first = await _call(servers(v1()))
    assert first["resultType"] == "input_required"
    later = servers(v2(continues=("1",)))
    done = await _call(later, first["requestState"])
    # The old call was parked on the question after the patch point: it went
    # past the point under old code, so it keeps the old path.
    assert done["content"][0]["text"] == "seat 12A accept"
    fresh = await _call(later)  # a new call under the new code: the new path
    assert (await _call(later, fresh["requestState"]))["content"][0][
        "text"
    ] == "seat 12A insured accept"


async def test_a_version_that_does_not_continue_it_refuses_the_state(
    servers: Any,
) -> None:
    first = await _call(servers(v1()))
    refused = await _call(servers(v2(continues=())), first["requestState"])
    assert isinstance(refused, PeerError)
    assert refused.code == -32602
    assert refused.message == (
        "requestState was made by another version of 'book' (the server's "
        "code changed during the call); call it again without requestState"
    )

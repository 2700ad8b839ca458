"""The key sealing 2026-07-28 states, on a server with a store and no key
configured: kept in the store, so a restart (or another process on the same
store) opens the states the server before it sealed."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from bridge.server import Server
from bridge.server.state_token import KEY_ENV
from bridge.stores import MemoryStore, open_store
from runtime import Context, Op, tool
from tests.bridge.wire import modern_meta, wire_peer


class Ok(BaseModel):
    ok: bool


@tool(name="ask", elicits={"ok": Ok}, version="1")
def ask(ctx: Context) -> Op[str]:
    answer = yield from ctx.elicit("ok", "Go?")
    return f"got {answer.action}"


async def _call(server: Server, **params: Any) -> Any:
    body: dict[str, Any] = {"name": "ask", "arguments": {}, "_meta": modern_meta()}
    async with wire_peer(server) as peer:
        return await peer.request("tools/call", {**body, **params})


ANSWER = {"ok": {"action": "accept", "content": {"ok": True}}}


async def test_a_restarted_server_without_a_key_opens_its_states(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    url = f"sqlite:{tmp_path / 'calls.db'}"
    first = Server([ask], store=open_store(url))
    state = (await _call(first))["requestState"]
    restarted = Server([ask], store=open_store(url))  # a new process, no key set
    done = await _call(restarted, requestState=state, inputResponses=ANSWER)
    assert done["content"][0]["text"] == "got accept"


async def test_a_configured_key_is_used_not_the_stores(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    store = MemoryStore()
    mine = secrets.token_bytes(32)
    sealed_with_mine = Server([ask], store=store, state_keys=[mine])
    state = (await _call(sealed_with_mine))["requestState"]
    assert Server([ask], store=store, state_keys=[mine]).sealer.open(
        state, purpose="tools/call"
    )
    assert not list(store.scan("meta"))  # a configured key never goes to the store

"""What a replay of a step may and may not do: divergence, versions, size.

A replay answers each step from the journal; it must never take a silently
wrong answer. A tool changed between rounds (or not deterministic between its
yields) meets another kind of entry at a key and fails with
``ReplayDivergence``; a state sealed under another version of the tool is
refused before any replay; a journal past its cap fails the call clearly.
"""

from __future__ import annotations

import secrets
from typing import Any

import pytest
from pydantic import BaseModel

from bridge.server import Server
from bridge.server.limits import ServerLimits
from runtime import Context, Op, ReplayDivergence, tool
from runtime.errors import PeerError
from runtime.lowlevel import Journal, StepNotRecordable, run
from runtime.testing import ScriptedPeer, accept, run_scripted
from tests.bridge.wire import modern_meta, wire_peer


class Confirm(BaseModel):
    ok: bool


def reserve() -> str:
    return "seat 12A"


def charge() -> str:
    return "charged"


def _first(version: str | None = "1") -> Any:
    @tool(name="book", elicits={"confirm": Confirm}, version=version)
    def book(ctx: Context) -> Op[str]:
        seat = yield from ctx.step(reserve)
        answer = yield from ctx.elicit("confirm", "Book it?")
        return f"{seat} {answer.action}"

    return book


def _changed(version: str | None = "1") -> Any:
    @tool(name="book", elicits={"confirm": Confirm}, version=version)
    def book(ctx: Context) -> Op[str]:
        receipt = yield from ctx.step(charge)  # was reserve: the code changed
        answer = yield from ctx.elicit("confirm", "Book it?")
        return f"{receipt} {answer.action}"

    return book


def test_a_tool_changed_between_runs_raises_replay_divergence() -> None:
    journal = Journal()
    peer = ScriptedPeer(elicits={"confirm": [accept({"ok": True})] * 2})
    assert run_scripted(_first(), {}, peer, journal=journal) == "seat 12A accept"
    with pytest.raises(ReplayDivergence) as caught:
        run_scripted(_changed(), {}, peer, journal=journal)
    assert caught.value.key == "0"
    assert caught.value.recorded == "step 'reserve'"
    assert caught.value.asked == "step 'charge'"


async def _round_one(server: Server) -> dict[str, Any]:
    async with wire_peer(server) as peer:
        return await peer.request(
            "tools/call", {"name": "book", "arguments": {}, "_meta": modern_meta()}
        )


async def _round_two(server: Server, state: str) -> Any:
    """The retry's result, or the JSON-RPC error it got."""
    answer = {"confirm": {"action": "accept", "content": {"ok": True}}}
    async with wire_peer(server) as peer:
        try:
            return await peer.request(
                "tools/call",
                {
                    "name": "book",
                    "arguments": {},
                    "_meta": modern_meta(),
                    "requestState": state,
                    "inputResponses": answer,
                },
            )
        except PeerError as exc:
            return exc


async def test_a_tool_changed_between_rounds_fails_with_replay_divergence() -> None:
    key = secrets.token_bytes(32)
    first = await _round_one(Server([_first()], state_keys=[key]))
    assert first["resultType"] == "input_required"
    second = await _round_two(
        Server([_changed()], state_keys=[key]), first["requestState"]
    )
    assert second["isError"] is True
    text = second["content"][0]["text"]
    assert text.startswith("Replay diverged at key '0'")
    assert "step 'reserve'" in text
    assert "step 'charge'" in text


async def test_a_state_sealed_under_another_version_is_refused() -> None:
    key = secrets.token_bytes(32)
    first = await _round_one(Server([_first(version=None)], state_keys=[key]))
    later = Server([_changed(version=None)], state_keys=[key])  # its source hash
    refused = await _round_two(later, first["requestState"])
    assert isinstance(refused, PeerError)
    assert refused.code == -32602
    assert "another version of 'book'" in refused.message


async def test_the_same_version_resumes() -> None:
    key = secrets.token_bytes(32)
    first = await _round_one(Server([_first()], state_keys=[key]))
    second = await _round_two(
        Server([_first()], state_keys=[key]), first["requestState"]
    )
    assert second["content"][0]["text"] == "seat 12A accept"


def big() -> str:
    return "x" * 5000


@tool(elicits={"confirm": Confirm})
def hoards(ctx: Context) -> Op[str]:
    data = yield from ctx.step(big)
    yield from ctx.elicit("confirm", "Keep it?")
    return data[:3]


async def test_a_journal_over_its_cap_fails_the_call_clearly() -> None:
    server = Server([hoards], limits=ServerLimits(max_journal_bytes=4096))
    async with wire_peer(server) as peer:
        result = await peer.request(
            "tools/call", {"name": "hoards", "arguments": {}, "_meta": modern_meta()}
        )
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert text.startswith("The call's journal is ")
    assert "over the server's limit of 4096 (ServerLimits.max_journal_bytes)" in text


async def test_a_journal_near_its_cap_logs_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = Server([hoards], limits=ServerLimits(max_journal_bytes=6000))
    async with wire_peer(server) as peer:
        result = await peer.request(
            "tools/call", {"name": "hoards", "arguments": {}, "_meta": modern_meta()}
        )
    assert result["resultType"] == "input_required"
    assert any("of its limit" in r.getMessage() for r in caplog.records)


class Opaque:
    pass


def opaque() -> Opaque:
    return Opaque()


def unannotated():  # type: ignore[no-untyped-def]
    return Opaque()


@tool
def unrecordable(ctx: Context) -> Op[str]:
    yield from ctx.step(opaque)
    return "never"


@tool
def unrecordable_value(ctx: Context) -> Op[str]:
    yield from ctx.step(unannotated)
    return "never"


async def test_a_value_that_cannot_be_recorded_fails_at_the_first_run() -> None:
    with pytest.raises(StepNotRecordable, match="step 'opaque' returns <class"):
        await run(unrecordable, {}, ScriptedPeer())
    with pytest.raises(StepNotRecordable, match="step 'unannotated' returned Opaque"):
        await run(unrecordable_value, {}, ScriptedPeer())


def test_the_default_journal_cap_is_one_mebibyte() -> None:
    assert ServerLimits().max_journal_bytes == 1024 * 1024


def leaky() -> str:
    raise RuntimeError("db connect failed: password=hunter2")


@tool
def leaks(ctx: Context) -> Op[str]:
    return (yield from ctx.step(leaky))


async def test_a_failed_step_does_not_tell_the_client_its_exception() -> None:
    async with wire_peer(Server([leaks])) as peer:
        result = await peer.request(
            "tools/call", {"name": "leaks", "arguments": {}, "_meta": modern_meta()}
        )
    assert result["isError"] is True
    assert "hunter2" not in result["content"][0]["text"]
    assert "error id" in result["content"][0]["text"]


def test_serve_has_a_flag_for_each_step_limit() -> None:
    import subprocess
    import sys

    shown = subprocess.run(
        [sys.executable, "-m", "bridge.cli", "serve", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "--step-threads INT" in shown
    assert "--max-journal-bytes INT" in shown

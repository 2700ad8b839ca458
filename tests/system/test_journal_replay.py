"""A journal out of a real store, replayed in a test: ``yieldmcp journal``
then ``runtime.testing.replay``.

``yieldmcp serve tests/fixtures/journal_tools.py --http ... --store URL``
runs a task (SQLite, Redis, PostgreSQL) or 2026-07-28 rounds; the
``yieldmcp journal`` process takes the call's journal out of the store as a
user would; the unchanged tool replays it to the same result, and a changed
one raises ``ReplayDivergence`` naming the key. One server per store serves
every assertion of its test.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from bridge.server.state_token import new_key
from runtime import Context, Op, ReplayDivergence, tool
from runtime.testing import JournalExhausted, replay
from tests.bridge.server.tasks.kit import TaskWire
from tests.fixtures.journal_tools import CONFIRM, price, trip
from tests.helpers import ROOT
from tests.processes import one_server

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

SERVED = str(ROOT / "tests/fixtures/journal_tools.py")
YES = {"action": "accept", "content": {"ok": True}}


@tool(name="trip", elicits=[CONFIRM])
def trip_changed(city: str, ctx: Context) -> Op[str]:
    """``trip`` after a change: its question reads differently."""
    answer = yield from ctx.elicit(CONFIRM, f"Really book {city}?")
    if answer.content is None or not answer.content.ok:
        return "not booked"
    cost = yield from ctx.step(price, city)
    return f"{city} booked for {cost}"


@contextlib.asynccontextmanager
async def _serving(
    tmp: Path, *flags: str, env: Mapping[str, str] | None = None
) -> AsyncIterator[str]:
    """``yieldmcp serve`` the journal tools on a free port: its URL."""
    async with one_server(SERVED, tmp, *flags, env=env) as (url, _process):
        yield url


def _journal(
    *words: str, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``yieldmcp journal WORDS...``, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "bridge.cli", "journal", *words],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
        env={**os.environ, **(env or {})},
    )  # fmt: skip


def _document(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


async def test_a_task_from_each_store_replays_and_a_changed_tool_diverges(
    store_url: str, tmp_path: Path
) -> None:
    async with (
        httpx.AsyncClient(timeout=30) as http,
        _serving(tmp_path, "--store", store_url) as url,
    ):
        wire = TaskWire(http, url)
        with trio.fail_after(60):
            task_id = (await wire.call("trip", city="Rome"))["taskId"]
            await wire.until(task_id, "input_required")
            await wire.answer(task_id, "confirm", YES)
            done = await wire.until(task_id)
    result = done["result"]["content"][0]["text"]
    assert result.startswith("Rome booked for 400 at ")

    listed = _journal(store_url)
    assert listed.returncode == 0, listed.stderr
    assert f"task\t{task_id}\ttrip\tcompleted" in listed.stdout.splitlines()

    document = _document(_journal(store_url, task_id))
    assert document["format"] == "yieldmcp.journal/1"
    assert (document["source"], document["tool"]) == ("task", "trip")
    assert document["arguments"] == {"city": "Rome"}
    assert document["ended"]["result"]["content"][0]["text"] == result
    assert replay(trip, document) == result

    with pytest.raises(ReplayDivergence) as caught:
        replay(trip_changed, document)
    assert caught.value.key == "0"
    assert "Really book Rome?" not in caught.value.recorded
    assert "Elicit 'confirm'" in caught.value.asked

    unknown = _journal(store_url, "no-such-task")
    assert unknown.returncode == 1
    assert unknown.stdout == ""
    assert unknown.stderr.count("\n") == 1
    assert "no call or task 'no-such-task'" in unknown.stderr


async def test_journals_of_rounds_states_and_a_2025_call(tmp_path: Path) -> None:
    """A 2026-07-28 call, not a task: the user holds its ``requestState``.
    With a store the state refers to the journal there; without one it
    carries it, sealed: both open with the server's key, and no other. A
    2025-11-25 call on a durable session is found in the store's list."""
    store = f"sqlite:{tmp_path / 'store.sqlite3'}"
    key = {"YIELDMCP_STATE_KEY": new_key()}
    async with (
        httpx.AsyncClient(timeout=30) as http,
        _serving(tmp_path, "--store", store, env=key) as durable,
        _serving(tmp_path, env=key) as stateless,
    ):
        states: list[str] = []
        results: list[str] = []
        for url in (durable, stateless):
            wire = TaskWire(http, url, tasks=False)
            with trio.fail_after(60):
                asked = await wire.call("trip", city="Oslo")
                assert asked["resultType"] == "input_required"
                state = asked["requestState"]
                again = {"name": "trip", "arguments": {"city": "Oslo"}}
                again |= {"requestState": state, "inputResponses": {"confirm": YES}}
                done = await wire.request("tools/call", again)
            states.append(state)
            results.append(done["content"][0]["text"])
        # And a 2025-11-25 call on a durable session, as a user makes one.
        answer = ["--answer", 'confirm={"ok": true}']
        command = ["call", durable, "trip", "--arg", "city=Lima", "--era", "legacy"]
        legacy = subprocess.run(
            [sys.executable, "-m", "bridge.cli", *command, *answer],
            cwd=ROOT, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert legacy.returncode == 0, legacy.stderr

    # The state refers to the call in the store: its whole journal by now.
    from_store = _document(_journal(store, states[0], env=key))
    assert (from_store["source"], from_store["tool"]) == ("round", "trip")
    assert from_store["id"] in _journal(store).stdout
    assert replay(trip, from_store, {"city": "Oslo"}) == results[0]
    listed = _journal(store).stdout.splitlines()
    (call_id,) = [line.split("\t")[1] for line in listed if line.startswith("call\t")]
    from_call = _document(_journal(store, call_id))
    assert (from_call["source"], from_call["arguments"]) == ("call", {"city": "Lima"})
    assert replay(trip, from_call) == legacy.stdout.strip()
    assert from_call["ended"]["result"]["structuredContent"]["result"] == (
        legacy.stdout.strip()
    )
    # A stateless state carries the journal it was sealed with: the first
    # round's ends at the question.
    from_state = _document(_journal("memory:", states[1], env=key))
    assert (from_state["source"], from_state["tool"]) == ("state", "trip")
    with pytest.raises(JournalExhausted, match="key '0' the tool asks Elicit"):
        replay(trip, from_state, {"city": "Oslo"})

    wrong = _journal("memory:", states[1], env={"YIELDMCP_STATE_KEY": new_key()})
    assert wrong.returncode == 1
    assert wrong.stderr.count("\n") == 1
    assert "does not open with the key" in wrong.stderr

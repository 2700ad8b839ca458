"""A process's copy of a 2025-11-25 session never outranks the store.

Two ``yieldmcp serve tests/fixtures/session_tools.py --http ... --store
sqlite:...`` processes, A and B, share one store; raw HTTP (httpx) chooses
which process each request reaches. The session is opened on A; its call is
started on B, which takes the session on (its generation rises: B's event ids
start at ``1 << 32``); the call parks on a question; B is killed (SIGKILL).
The client's ``GET`` with the ``Last-Event-ID`` it last saw from B then
reaches A, which must read the session's current state from the store and
resume the call (the question asked again, or the answer accepted) until it
completes. Issue 37: A kept its own copy of the session, at the older
generation, and answered ``400 ... cannot resume: '<id>' was never sent``:
22 of the 23 calls a randomized kill test lost were lost this way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from tests.bridge.http_kit import Raw, SseReader, message_of
from tests.helpers import ROOT
from tests.processes import serving

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

SERVED = str(ROOT / "tests/fixtures/session_tools.py")
ANSWERS = {"Your name?": {"name": "Bo"}, "Favourite colour?": {"colour": "red"}}


async def _next_message(reader: SseReader) -> tuple[str, dict[str, Any]]:
    while True:
        event = await reader.next()
        assert event is not None, "the stream ended early"
        if event.data:
            assert event.id
            return event.id, message_of(event)


def _answer(ask: dict[str, Any]) -> dict[str, Any]:
    content = ANSWERS[ask["params"]["message"]]
    result = {"action": "accept", "content": content}
    return {"jsonrpc": "2.0", "id": ask["id"], "result": result}


async def test_a_call_whose_process_died_resumes_on_the_process_with_an_older_copy(
    tmp_path: Path, sqlite_url: str
) -> None:
    steps = tmp_path / "steps"
    env = {"SESSION_TOOLS_COUNTER": str(steps)}
    flags = ["--store", sqlite_url, "--session-lease", "1"]
    refused = ""
    final: dict[str, Any] = {}
    with trio.fail_after(90):
        async with (
            serving(SERVED, tmp_path, *flags, env=env, count=2) as (a, b),
            httpx.AsyncClient(timeout=60) as http,
        ):
            raw = Raw(http, a.url)
            await raw.initialize()  # A holds the session
            raw.url = b.url
            call = raw.request(3, "tools/call", {"name": "interview", "arguments": {}})
            async with raw.stream("POST", call) as (_, reader):
                last_id, ask_name = await _next_message(reader)
            _stream, seq = (int(part) for part in last_id.split("-"))
            assert seq >= 1 << 32, f"B did not take the session on: {last_id}"
            b.kill()
            raw.url = a.url
            async with raw.stream("GET", last_event_id=last_id) as (response, reader):
                if response.status_code != 200:
                    refused = f"{response.status_code} {(await response.aread())!r}"
                else:
                    await raw.post(_answer(ask_name))  # as a client re-posts it
                    while not final:
                        _id, message = await _next_message(reader)
                        if message.get("method") == "elicitation/create":
                            await raw.post(_answer(message))
                        elif message.get("id") == 3:
                            final = message
    assert not refused, f"A would not resume the call: {refused}"
    assert final["result"]["content"][0]["text"] == "hello Bo, who likes red"
    assert steps.read_text().splitlines() == ["greet Bo"]

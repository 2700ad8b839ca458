"""Answers routed between processes survive the expiry of a routing inbox.

Two ``yieldmcp serve tests/fixtures/session_tools.py --http ... --store
sqlite:...`` processes share one store. A 2025-11-25 session's call runs on
A; the client's answers, POSTed to B, are routed to A's inbox (a stream in
the store that A reads). ``--inbox-ttl`` is how long an inbox outlives its
last message. Issue 37: once an inbox had been idle past its lifetime (1 h,
fixed), the next routed answer started the expired stream again at 0 while A
kept reading from its old position, and the answer was lost. Here the
lifetime is one second and the call idles 2.5 s between its two answers.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from bridge.durable.presence import INBOX, WORKERS
from bridge.stores import open_store
from tests.bridge.http_kit import Raw, SseReader, message_of
from tests.helpers import ROOT
from tests.processes import serving

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

SERVED = str(ROOT / "tests/fixtures/session_tools.py")
INBOX_TTL = 1.0
IDLE = 2.5  # past the inbox's lifetime


async def _next_message(reader: SseReader) -> dict[str, Any]:
    while True:
        event = await reader.next()
        assert event is not None, "the call's stream ended early"
        if event.data:
            return message_of(event)


@contextlib.asynccontextmanager
async def _interview(
    http: httpx.AsyncClient, url: str
) -> AsyncIterator[tuple[Raw, SseReader, dict[str, Any]]]:
    """A session on ``url`` calling ``interview`` (request id 3): the wire,
    the call's stream, and the first question it asks (the name)."""
    raw = Raw(http, url)
    await raw.initialize()
    call = raw.request(3, "tools/call", {"name": "interview", "arguments": {}})
    async with raw.stream("POST", call) as (_, reader):
        yield raw, reader, await _next_message(reader)


def _accept(ask: dict[str, Any], **content: str) -> dict[str, Any]:
    answer = {"action": "accept", "content": content}
    return {"jsonrpc": "2.0", "id": ask["id"], "result": answer}


async def test_answers_routed_across_an_expired_inbox_both_reach_the_call(
    tmp_path: Path, sqlite_url: str
) -> None:
    pids = tmp_path / "pids"
    env = {"SESSION_TOOLS_PIDS": str(pids)}
    flags = ["--store", sqlite_url, "--inbox-ttl", str(INBOX_TTL)]
    response: dict[str, Any] | None = None
    with trio.fail_after(90):
        async with (
            serving(SERVED, tmp_path, *flags, env=env, count=2) as (a, b),
            httpx.AsyncClient(timeout=30) as http,
        ):
            async with _interview(http, a.url) as (raw, reader, ask_name):
                raw.url = b.url  # the answers reach B: routed to A
                assert (await raw.post(_accept(ask_name, name="Bo"))).status_code == 202
                _log = await _next_message(reader)
                ask_colour = await _next_message(reader)
                assert ask_colour.get("method") == "elicitation/create", ask_colour
                await trio.sleep(IDLE)  # A's inbox expires meanwhile
                posted = await raw.post(_accept(ask_colour, colour="red"))
                assert posted.status_code == 202
                with trio.move_on_after(15):
                    response = await _next_message(reader)
            holder = a.pid
    assert response is not None, "the answer routed after the idle never arrived"
    assert response["id"] == 3
    assert response["result"]["content"][0]["text"] == "hello Bo, who likes red"
    # Routed, not taken over: every run of the call was on A.
    assert {int(pid) for pid in pids.read_text().split()} == {holder}


async def test_an_answer_the_callers_process_acknowledged_is_written_down_first(
    tmp_path: Path, sqlite_url: str
) -> None:
    """A client's answer POSTed to the process whose call asked it gets 202
    only once it is in the store: the client never sends it again, so a
    process killed between that 202 and the call's own record of the answer
    would otherwise lose it, and the call with it (found by the random-kills
    test: the process taking the call on waited for an answer already given).
    The process that takes the call on reads it from there."""
    flags = ["--store", sqlite_url]
    with trio.fail_after(60):
        async with (
            serving(SERVED, tmp_path, *flags) as (a,),
            httpx.AsyncClient(timeout=30) as http,
            _interview(http, a.url) as (raw, _reader, ask_name),
        ):
            answer = _accept(ask_name, name="Bo")
            assert (await raw.post(answer)).status_code == 202
            store = open_store(sqlite_url)
            try:
                kept = [
                    record
                    for worker, _doc in store.scan(WORKERS)
                    for record in store.read(INBOX, worker)
                ]
            finally:
                store.close()
    assert kept == [{"s": raw.session_id, "m": answer, "kept": True}]

"""A durable 2025-11-25 call begun under version "1", taken on by version "2".

The call parks on a question on a server running v1; that server goes, and
a server on the same store running v2 takes the call on when the client
answers and resumes. A v2 that lists "1" in ``continues`` finishes it, on
the old path where the call went past the change (it had asked its
question after the patch point); one that does not answers the call with
the one-line error a 2026-07-28 ``requestState`` gets.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import trio
from pydantic import BaseModel

from bridge.durable.log import CALLS
from bridge.server import Server
from bridge.stores import MemoryStore
from runtime import Context, Op, tool
from tests.bridge.http_kit import Raw, SseReader, message_of, served

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]


class Name(BaseModel):
    name: str


def v1() -> Any:
    @tool(name="greet", elicits={"name": Name}, version="1")
    def greet(ctx: Context) -> Op[str]:
        answer = yield from ctx.elicit("name", "Your name?")
        return f"hello {answer.content.name}"

    return greet


def v2(continues: tuple[str, ...]) -> Any:
    @tool(name="greet", elicits={"name": Name}, version="2", continues=continues)
    def greet(ctx: Context) -> Op[str]:
        polite = yield from ctx.patched("polite")
        answer = yield from ctx.elicit("name", "Your name?")
        return f"{'good day' if polite else 'hello'} {answer.content.name}"

    return greet


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=20) as client:
        yield client


async def _next_message(reader: SseReader) -> tuple[str, dict[str, Any]]:
    while True:
        event = await reader.next()
        assert event is not None, "the stream ended early"
        if event.data:
            return event.id or "", message_of(event)


async def _taken_on_by(
    http: httpx.AsyncClient, later: Any, store: MemoryStore | None = None
) -> dict[str, Any]:
    """The response the call gets once ``later``'s server takes it on."""
    store = MemoryStore() if store is None else store
    call = {"name": "greet", "arguments": {}}
    with trio.fail_after(30):
        async with served(Server([v1()], store=store)) as first_url:
            raw = Raw(http, first_url)
            await raw.initialize()
            async with raw.stream("POST", raw.request(7, "tools/call", call)) as (
                _,
                reader,
            ):
                last_id, ask = await _next_message(reader)
                assert ask["method"] == "elicitation/create"
        async with served(Server([later], store=store)) as second_url:
            raw.url = second_url
            answer = {"action": "accept", "content": {"name": "Ada"}}
            await raw.post({"jsonrpc": "2.0", "id": ask["id"], "result": answer})
            async with raw.stream("GET", last_event_id=last_id) as (response, reader):
                assert response.status_code == 200
                rest = [message_of(e) for e in await reader.rest() if e.data]
    assert rest[-1]["id"] == 7
    return rest[-1]


async def test_a_version_that_continues_it_finishes_the_call(
    http: httpx.AsyncClient,
) -> None:
    store = MemoryStore()
    done = await _taken_on_by(http, v2(continues=("1",)), store)
    assert done["result"]["content"][0]["text"] == "hello Ada"
    # The call's document, kept with its response: run by "2" at its end.
    [(_id, kept)] = list(store.scan(CALLS))
    assert kept.value["version"] == "2"


async def test_a_version_that_does_not_continue_it_answers_with_the_error(
    http: httpx.AsyncClient,
) -> None:
    done = await _taken_on_by(http, v2(continues=()))
    assert done["error"]["code"] == -32602
    assert done["error"]["message"] == (
        "call was made by another version of 'greet' (the server's code "
        "changed during the call); call the tool again"
    )

"""A task made under version "1" of a tool, answered on a server running "2".

The task parks on a question under v1 (a server on a shared store); its
answer reaches a server running v2. A v2 that lists "1" in ``continues``
runs the task on, on the old path where the task went past the change
(``ctx.patched``), and the task carries "2" from then on; a v2 that does not
fails the task with the one-line error a ``requestState`` gets.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import trio
from pydantic import BaseModel

from bridge.durable.tasks import TaskDoc
from bridge.server import Server
from bridge.stores import MemoryStore
from runtime import Context, Op, tool
from tests.bridge.http_kit import served
from tests.bridge.server.tasks.kit import TaskWire

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]


class Confirm(BaseModel):
    ok: bool


def reserve() -> str:
    return "seat 12A"


def insure() -> str:
    return "insured"


def v1() -> Any:
    @tool(name="book", elicits={"ok": Confirm}, version="1", task="required")
    def book(ctx: Context) -> Op[str]:
        seat = yield from ctx.step(reserve)
        answer = yield from ctx.elicit("ok", "Book it?")
        return f"{seat} {answer.action}"

    return book


def v2(continues: tuple[str, ...]) -> Any:
    @tool(
        name="book",
        elicits={"ok": Confirm},
        version="2",
        continues=continues,
        task="required",
    )
    def book(ctx: Context) -> Op[str]:
        seat = yield from ctx.step(reserve)
        if (yield from ctx.patched("insure")):
            seat += " " + (yield from ctx.step(insure))
        answer = yield from ctx.elicit("ok", "Book it?")
        return f"{seat} {answer.action}"

    return book


ANSWER = {"action": "accept", "content": {"ok": True}}


async def _parked_then_answered(store: MemoryStore, later: Any) -> dict[str, Any]:
    async with (
        served(Server([v1()], name="old", store=store)) as old,
        served(Server([later], name="new", store=store)) as new,
        httpx.AsyncClient(timeout=30) as http,
    ):
        on_old, on_new = TaskWire(http, old), TaskWire(http, new)
        with trio.fail_after(30):
            task_id = (await on_old.call("book"))["taskId"]
            await on_old.until(task_id, "input_required")
            await on_new.answer(task_id, "ok", ANSWER)
            return {"id": task_id, **await on_new.until(task_id)}


async def test_a_version_that_continues_it_finishes_the_task() -> None:
    store = MemoryStore()
    done = await _parked_then_answered(store, v2(continues=("1",)))
    assert done["status"] == "completed"
    assert done["result"]["content"][0]["text"] == "seat 12A accept"
    kept = store.get("task", done["id"])
    assert kept is not None
    assert TaskDoc.from_json(kept.value).version == "2"


async def test_a_version_that_does_not_continue_it_fails_the_task() -> None:
    done = await _parked_then_answered(MemoryStore(), v2(continues=()))
    assert done["status"] == "failed"
    assert done["error"] == {
        "code": -32602,
        "message": "task was made by another version of 'book' (the server's "
        "code changed during the call); call the tool again",
    }

"""A task asks as a round does: at most ``max_questions_per_round`` questions
at once (``inputRequests`` of its ``input_required``), the rest after those
are answered, each answer reaching the child that asked it."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio

from bridge.client import Client
from bridge.server import Server
from bridge.server.limits import ServerLimits
from bridge.stores import open_store
from bridge.transports.memory import memory_pair
from runtime import Context, Op, tool
from tests.bridge.server.calls.test_rounds_questions import Echo, _child


@tool(task="optional")
def wide_task(n: int, ctx: Context) -> Op[list[str]]:
    """``n`` concurrent samples, in a task."""
    return (yield from ctx.branch(*[(lambda c, i=i: _child(c, i)) for i in range(n)]))


@contextlib.asynccontextmanager
async def _connected(server: Server) -> AsyncIterator[tuple[Client, Echo]]:
    server_end, client_end = memory_pair()
    model = Echo()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(server.serve, server_end)
        async with Client.connect(client_end, era="2026-07-28", sampler=model) as c:
            yield c, model
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize("stored", [False, True])
async def test_a_task_of_65_samples_is_answered_whole(
    stored: bool, tmp_path: Path
) -> None:
    store = open_store(f"sqlite:{tmp_path / 'store.sqlite3'}") if stored else None
    created: list[str] = []
    with trio.fail_after(60):
        async with _connected(Server([wide_task], store=store)) as (client, model):
            result = await client.call_tool(
                "wide_task", {"n": 65}, task=True, on_task_created=created.append
            )
    assert created, "the call was a task"
    assert not result.is_error, result.text
    assert result.structured_content == {"result": [f"echo q{i}" for i in range(65)]}
    assert model.asked == 65


async def test_a_task_shows_at_most_the_bound_at_once() -> None:
    server = Server([wide_task], limits=ServerLimits(max_questions_per_round=3))
    shown: list[int] = []
    with trio.fail_after(60):
        async with _connected(server) as (client, _model):

            async def status(status: str, message: str | None) -> None:
                if status == "input_required":
                    info = await client.get_task(task_id[0])
                    shown.append(len(info.questions))

            task_id: list[str] = []
            result = await client.call_tool(
                "wide_task",
                {"n": 7},
                task=True,
                on_task_created=task_id.append,
                on_status=status,
            )
    assert result.structured_content == {"result": [f"echo q{i}" for i in range(7)]}
    assert shown
    assert max(shown) <= 3

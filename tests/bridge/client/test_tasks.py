"""Our client follows tasks (2026-07-28 tasks extension) over real HTTP.

``call_tool(..., task=True)`` declares the extension for the call, polls the
task the server makes (telling ``on_status``), answers its questions with
``tasks/update`` through the same elicitation handler as rounds, and cancels
the task when the call is cancelled.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest
import trio

from bridge.client import connect
from bridge.server import Server
from bridge.server.tasks import tasks_of
from runtime.errors import PeerError
from runtime.replies import ElicitReply
from runtime.requests import ElicitationRequest
from tests.bridge.http_kit import served
from tests.fixtures import task_tools as tools
from tests.helpers import ROOT

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]


SERVED = ROOT / "tests/fixtures/task_tools.py"


class Names:
    """Answers each form with its own key as the name."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def handle(self, request: ElicitationRequest) -> ElicitReply:
        self.asked.append(request.key or "")
        return ElicitReply(action="accept", content={"name": request.key.upper()})


async def test_a_task_is_followed_to_its_result_with_its_status_shown() -> None:
    seen: list[tuple[str, str | None]] = []
    async with (
        served(Server(tools.ALL)) as url,
        connect(url, era="2026-07-28") as client,
    ):
        with trio.fail_after(30):
            result = await client.call_tool(
                "sleepy",
                {"seconds": 0.3},
                task=True,
                on_status=lambda status, message: seen.append((status, message)),
            )
    assert result.text == "slept 0.3"
    assert seen[0] == ("working", None)
    assert seen[-1] == ("completed", None)


async def test_a_task_s_questions_are_answered_by_the_client_s_handler() -> None:
    names = Names()
    async with (
        served(Server(tools.ALL)) as url,
        connect(url, era="2026-07-28", elicitation=names) as client,
    ):
        with trio.fail_after(30):
            result = await client.call_tool("ask_two", task=True)
    assert result.text == "LEFT and RIGHT"
    assert sorted(names.asked) == ["left", "right"]


async def test_a_failed_task_raises_its_error_and_required_tasks_need_the_flag() -> (
    None
):
    async with (
        served(Server(tools.ALL)) as url,
        connect(url, era="2026-07-28") as client,
    ):
        with trio.fail_after(30), pytest.raises(PeerError) as failed:
            await client.call_tool("broken_protocol", task=True)
        with trio.fail_after(30), pytest.raises(PeerError) as refused:
            await client.call_tool("broken_tool")
    assert failed.value.code == -32603
    assert refused.value.code == -32021


async def test_cancelling_the_call_cancels_the_task() -> None:
    server = Server(tools.ALL)
    async with served(server) as url, connect(url, era="2026-07-28") as client:
        with trio.move_on_after(1):
            await client.call_tool("sleepy", {"seconds": 60}, task=True)
        with trio.fail_after(30):
            statuses = await _statuses(server)
    assert statuses == ["cancelled"]


async def _statuses(server: Server) -> list[Any]:
    tasks = tasks_of(server)
    found = await tasks.store.scan("task")
    return [doc.value["status"] for _id, doc in found]


async def test_a_task_over_stdio() -> None:
    command = [sys.executable, "-m", "bridge.cli", "serve", str(SERVED)]
    names = Names()
    async with connect(
        command, era="2026-07-28", cwd=str(ROOT), elicitation=names
    ) as client:
        with trio.fail_after(60):
            result = await client.call_tool("ask_two", task=True)
    assert result.text == "LEFT and RIGHT"

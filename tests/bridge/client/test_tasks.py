"""Our client follows tasks (2026-07-28 tasks extension) over real HTTP.

``call_tool(..., task=True)`` declares the extension for the call, polls the
task the server makes (telling ``on_status``), answers its questions with
``tasks/update`` through the same elicitation handler as rounds, and cancels
the task when the call is cancelled. ``get_task``, ``follow_task`` and
``cancel_task`` come back to a task by its id, one another client started.
"""

from __future__ import annotations

import sys
from typing import Any

import httpx
import pytest
import trio

from bridge.client import connect
from bridge.server import Server
from bridge.server.limits import ServerLimits
from bridge.server.tasks import tasks_of
from bridge.transports.http import serve_http
from runtime.errors import (
    BrokenSessionError,
    CapabilityError,
    PeerError,
    TaskCancelled,
)
from runtime.replies import ElicitReply
from runtime.requests import ElicitationRequest
from tests.bridge.http_kit import served
from tests.bridge.server.tasks.kit import TaskWire
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


async def test_call_tool_tells_the_task_s_id_once_it_is_stored() -> None:
    ids: list[str] = []
    async with (
        served(Server(tools.ALL)) as url,
        connect(url, era="2026-07-28") as client,
    ):
        with trio.fail_after(30):
            result = await client.call_tool(
                "sleepy", {"seconds": 0.1}, task=True, on_task_created=ids.append
            )
            stored = await client.get_task(ids[0])
    assert result.text == "slept 0.1"
    assert stored.status == "completed"
    assert stored.result is not None
    assert stored.result.text == "slept 0.1"


async def test_another_client_follows_answers_and_cancels_a_task_by_id() -> None:
    names = Names()
    async with (
        served(Server(tools.ALL)) as url,
        httpx.AsyncClient(timeout=30) as http,
        connect(url, era="2026-07-28", elicitation=names) as client,
    ):
        wire = TaskWire(http, url)  # another client made the tasks
        with trio.fail_after(30):
            asking = (await wire.call("ask_two"))["taskId"]
            await wire.until(asking, "input_required")
            waiting = await client.get_task(asking)
            result = await client.follow_task(asking)
            done = await client.get_task(asking)

            sleepy = (await wire.call("sleepy", seconds=60))["taskId"]
            with trio.move_on_after(0.3):  # leaving early: the task goes on
                await client.follow_task(sleepy)
            still = await client.get_task(sleepy)
            cancelled = await client.cancel_task(sleepy)
            with pytest.raises(TaskCancelled):
                await client.follow_task(sleepy)
            with pytest.raises(PeerError) as unknown:
                await client.get_task("f00d")
    assert waiting.status == "input_required"
    assert sorted(key.split("@")[0] for key in waiting.questions) == ["left", "right"]
    assert not waiting.ended
    assert waiting.result is None
    assert result.text == "LEFT and RIGHT"
    assert done.ended
    assert done.result is not None
    assert done.result.text == "LEFT and RIGHT"
    assert done.wire["status"] == "completed"
    assert still.status == "working"
    assert cancelled.status == "cancelled"
    assert unknown.value.code == -32602


async def test_tasks_by_id_need_the_2026_era() -> None:
    async with served(Server(tools.ALL)) as url, connect(url, era="legacy") as client:
        with pytest.raises(CapabilityError, match="need the 2026-07-28 era"):
            await client.get_task("f00d")


async def test_a_server_gone_for_good_is_asked_again_for_the_task_s_ttl_only() -> None:
    server = Server(tools.ALL, limits=ServerLimits(task_ttl=1.0))
    serving = trio.CancelScope()
    stopped: list[float] = []
    outages: list[str] = []

    async def serve(*, task_status: trio.TaskStatus[str]) -> None:
        with serving:
            await serve_http(server, "127.0.0.1", 0, task_status=task_status)

    def stop(_task_id: str) -> None:  # the server goes, for good
        stopped.append(trio.current_time())
        serving.cancel()

    async with trio.open_nursery() as nursery:
        url: str = await nursery.start(serve)
        async with connect(url, era="2026-07-28") as client:
            with trio.fail_after(30), pytest.raises(BrokenSessionError):
                await client.call_tool(
                    "sleepy", {"seconds": 60}, task=True, on_task_created=stop,
                    on_unreachable=lambda task_id, _exc: outages.append(task_id),
                )  # fmt: skip
            asked_for = trio.current_time() - stopped[0]
    assert len(outages) == 1  # told once, however many times it asked
    assert 1.0 <= asked_for < 10  # the TTL (1 s), then a last pause of 2 s at most


async def test_a_followed_task_outlasts_a_store_outage_on_its_server() -> None:
    # The server answers -32603 while its store is away (each store call
    # fails within --store-timeout) and the task goes on where the store is:
    # call --task gave up at the first -32603, though the task completed.
    from bridge.durable import StoreUnavailable
    from bridge.stores import MemoryStore

    class Away:
        """A memory store whose reads fail while it is down."""

        def __init__(self) -> None:
            self.inner = MemoryStore()
            self.down = False

        def get(self, namespace: str, id: str) -> Any:
            if self.down:
                raise StoreUnavailable("memory: away for a while")
            return self.inner.get(namespace, id)

        def __getattr__(self, name: str) -> Any:
            return getattr(self.inner, name)

    store = Away()
    server = Server(tools.ALL, store=store, limits=ServerLimits(task_lease=1.0))

    async def outage(_task_id: str) -> None:
        store.down = True
        await trio.sleep(2.0)  # a few of the client's polls fail
        store.down = False

    async with (
        served(server) as url,
        connect(url, era="2026-07-28") as client,
        trio.open_nursery() as nursery,
    ):
        with trio.fail_after(60):
            result = await client.call_tool(
                    "sleepy", {"seconds": 0.5}, task=True,
                    on_task_created=lambda task_id: nursery.start_soon(outage, task_id),
                )  # fmt: skip
    assert result.text == "slept 0.5"


class _StoreAway:
    """A memory store whose reads fail from the moment it is told to."""

    def __init__(self) -> None:
        from bridge.stores import MemoryStore

        self.inner = MemoryStore()
        self.down = False

    def get(self, namespace: str, id: str) -> Any:
        from bridge.durable import StoreUnavailable

        if self.down:
            raise StoreUnavailable("memory: away for good")
        return self.inner.get(namespace, id)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.mark.parametrize("patience", [0.0, 1.0])
async def test_internal_patience_bounds_how_long_a_failing_server_is_asked(
    patience: float,
) -> None:
    # INTERNAL_PATIENCE (60 s) was a limit with no setting: a client whose
    # task's server answers -32603 for good followed it for a minute,
    # whatever the caller wanted.
    store = _StoreAway()
    server = Server(tools.ALL, store=store, limits=ServerLimits(task_lease=1.0))

    def away(_task_id: str) -> None:
        store.down = True

    async with (
        served(server) as url,
        connect(url, era="2026-07-28", internal_patience=patience) as client,
    ):
        began = trio.current_time()
        with trio.fail_after(15), pytest.raises(PeerError) as refused:
            await client.call_tool(
                "sleepy", {"seconds": 30}, task=True, on_task_created=away
            )
        took = trio.current_time() - began
    assert refused.value.code == -32603
    assert patience <= took < patience + 3  # then one last pause of 2 s at most


def test_internal_patience_must_be_seconds() -> None:
    from bridge.client.client import Client
    from bridge.transports.memory import memory_pair

    for wrong in (-1.0, float("nan")):
        with pytest.raises(ValueError, match="internal_patience"):
            Client(memory_pair()[0], internal_patience=wrong)

"""What a client can make a task keep: only answers to questions asked."""

from __future__ import annotations

import httpx
import pytest
import trio

from bridge.durable.tasks import TASKS
from bridge.server import Server
from bridge.server.tasks import tasks_of
from tests.bridge.http_kit import served
from tests.bridge.server.tasks.kit import TaskWire
from tests.fixtures import task_tools as tools

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]


async def test_keys_no_question_asked_are_not_kept_in_the_task() -> None:
    # A task made from a round (task_from="step") starts from the round's
    # answers; junk keys beside them must not be stored with the task, where
    # every later change of the task would write them again until its TTL.
    server = Server(tools.ALL, name="tasks-bounds")
    async with served(server) as url, httpx.AsyncClient(timeout=30) as http:
        wire = TaskWire(http, url)
        with trio.fail_after(60):
            first = await wire.call("greet_later")
            junk = {
                f"junk{i}": {"action": "accept", "pad": "x" * 1000} for i in range(200)
            }
            answer = {"name": {"action": "accept", "content": {"name": "Bo"}}}
            params = {
                "name": "greet_later",
                "arguments": {},
                "inputResponses": {**junk, **answer},
                "requestState": first["requestState"],
            }
            task_id = (await wire.request("tools/call", params))["taskId"]
            kept = await tasks_of(server).store.get(TASKS, task_id)
            done = await wire.until(task_id)
    assert done["result"]["content"][0]["text"] == "Hi Bo, from a task"
    assert kept is not None
    assert not any(key.startswith("junk") for key in kept.value["responses"])

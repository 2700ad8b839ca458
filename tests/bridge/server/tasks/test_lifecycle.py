"""The tasks extension (2026-07-28, SEP-2663) over real loopback HTTP.

Creation (flat ``CreateTaskResult``, stored before the reply), ``tasks/get``
with the inlined result or error, ``input_required`` answered by
``tasks/update`` (also one key at a time), cooperative ``tasks/cancel``,
negotiation (``-32021``), ``Mcp-Name`` routing, TTL sweeping, and a tool that
asks in the request and becomes a task at its first step.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
import trio

from bridge.server import Server
from bridge.server.limits import ServerLimits
from tests.bridge.http_kit import served
from tests.bridge.server.tasks.kit import TASKS, RpcError, TaskWire
from tests.fixtures import task_tools as tools

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]


@pytest.fixture
async def wire() -> AsyncIterator[TaskWire]:
    server = Server(tools.ALL, name="tasks-test")
    async with served(server) as url, httpx.AsyncClient(timeout=30) as http:
        yield TaskWire(http, url)


async def test_a_task_tool_answers_with_a_flat_task_that_tasks_get_finds_at_once(
    wire: TaskWire,
) -> None:
    with trio.fail_after(30):
        created = await wire.call("sleepy", seconds=0.2)
        assert created["resultType"] == "task"
        assert "task" not in created
        assert "result" not in created
        assert created["status"] == "working"
        assert isinstance(created["ttlMs"], int)
        assert created["ttlMs"] > 0
        assert isinstance(created["pollIntervalMs"], int)
        assert created["createdAt"].endswith("Z")
        found = await wire.get(created["taskId"])  # durable before the reply
        assert found["taskId"] == created["taskId"]
        assert found["resultType"] == "complete"
        done = await wire.until(created["taskId"])
    assert done["status"] == "completed"
    assert done["result"]["content"] == [{"type": "text", "text": "slept 0.2"}]
    assert "io.modelcontextprotocol/related-task" not in done["result"].get("_meta", {})


async def test_a_task_s_progress_message_is_its_status_message(
    wire: TaskWire,
) -> None:
    with trio.fail_after(30):
        task_id = (await wire.call("reporting"))["taskId"]
        while "statusMessage" not in (task := await wire.get(task_id)):
            assert task["status"] == "working"
            await trio.sleep(0.02)
        done = await wire.until(task_id)
    assert task["statusMessage"] == "half way"
    assert done["status"] == "completed"


async def test_a_sync_tool_stays_complete_even_with_a_legacy_task_param(
    wire: TaskWire,
) -> None:
    with trio.fail_after(30):
        params = {"name": "hello", "arguments": {"name": "Ada"}, "task": {"ttl": 5}}
        result = await wire.request("tools/call", params)
    assert result["resultType"] == "complete"
    assert "taskId" not in result
    assert result["content"][0]["text"] == "Hello, Ada!"


async def test_a_tool_error_completes_and_a_protocol_error_fails(
    wire: TaskWire,
) -> None:
    with trio.fail_after(30):
        tool_error = await wire.until((await wire.call("broken_tool"))["taskId"])
        protocol = await wire.until((await wire.call("broken_protocol"))["taskId"])
    assert tool_error["status"] == "completed"
    assert tool_error["result"]["isError"] is True
    assert protocol["status"] == "failed"
    assert protocol["error"]["code"] == -32603
    assert "result" not in protocol


async def test_input_required_is_answered_with_tasks_update(wire: TaskWire) -> None:
    with trio.fail_after(30):
        task_id = (await wire.call("ask_ok"))["taskId"]
        waiting = await wire.until(task_id, "input_required")
        assert waiting["status"] == "input_required"
        # A task's key names the question (its effect key), not just its form.
        assert list(waiting["inputRequests"]) == ["ok@0"]
        assert waiting["inputRequests"]["ok@0"]["method"] == "elicitation/create"
        answer = {"ok@0": {"action": "accept", "content": {"ok": True}}}
        ack = await wire.update(task_id, answer)
        assert ack == {"resultType": "complete", "_meta": ack["_meta"]}
        done = await wire.until(task_id)
    assert done["status"] == "completed"
    assert done["result"]["content"][0]["text"] == "answer: accept"


async def test_two_questions_may_be_answered_one_at_a_time(wire: TaskWire) -> None:
    with trio.fail_after(30):
        task_id = (await wire.call("ask_two"))["taskId"]
        waiting = await wire.until(task_id, "input_required")
        first, second = sorted(waiting["inputRequests"])
        answer = {"action": "accept", "content": {"name": "L"}}
        await wire.update(task_id, {first: answer})
        after = await wire.get(task_id)
        assert after["status"] == "input_required"
        assert list(after["inputRequests"]) == [second]
        await wire.update(task_id, {second: {**answer, "content": {"name": "R"}}})
        done = await wire.until(task_id)
    assert done["status"] == "completed"
    assert done["result"]["content"][0]["text"] == "L and R"


async def test_an_invalid_answer_is_refused_and_the_question_asked_again(
    wire: TaskWire,
) -> None:
    with trio.fail_after(30):
        task_id = (await wire.call("ask_ok"))["taskId"]
        await wire.until(task_id, "input_required")
        bad = {"ok@0": {"action": "accept", "content": {"ok": "not a boolean"}}}
        await wire.update(task_id, bad)
        again = await wire.until(task_id, "input_required")
        assert list(again["inputRequests"]) == ["ok@0"]
        assert again["statusMessage"].startswith("an answer was refused")
        await wire.update(task_id, {"ok@0": {"action": "accept", "content": {}}})
        done = await wire.until(task_id)
    assert done["result"]["content"][0]["text"] == "answer: accept"


async def test_an_update_sent_again_does_not_answer_the_next_question(
    wire: TaskWire,
) -> None:
    # A client resends tasks/update when its reply is lost. The same form asked
    # twice had the same key, so the resent update answered the second question
    # with the first answer ("one/one"), which no one gave.
    with trio.fail_after(30):
        task_id = (await wire.call("ask_name_twice"))["taskId"]
        first = await wire.until(task_id, "input_required")
        update = {key: {"action": "accept", "content": {"name": "one"}}
                  for key in first["inputRequests"]}  # fmt: skip
        await wire.update(task_id, update)
        second = await wire.until(task_id, "input_required")
        assert set(second["inputRequests"]).isdisjoint(first["inputRequests"])
        await wire.update(task_id, update)  # sent again
        await trio.sleep(0.3)
        assert (await wire.get(task_id))["status"] == "input_required"
        [key] = second["inputRequests"]
        await wire.update(
            task_id, {key: {"action": "accept", "content": {"name": "two"}}}
        )
        done = await wire.until(task_id)
    assert done["result"]["content"][0]["text"] == "one/two"


async def test_unknown_input_keys_are_acknowledged_and_ignored(wire: TaskWire) -> None:
    with trio.fail_after(30):
        task_id = (await wire.call("ask_ok"))["taskId"]
        await wire.until(task_id, "input_required")
        ack = await wire.update(task_id, {"nope": {"x": 1}})
        still = await wire.get(task_id)
    assert ack["resultType"] == "complete"
    assert still["status"] == "input_required"


async def test_cancel_stops_a_running_task_and_is_idempotent(wire: TaskWire) -> None:
    with trio.fail_after(30):
        task_id = (await wire.call("sleepy", seconds=60))["taskId"]
        ack = await wire.cancel(task_id)
        assert set(ack) <= {"resultType", "_meta"}
        assert (await wire.until(task_id))["status"] == "cancelled"
        again = await wire.cancel(task_id)
        assert again["resultType"] == "complete"
        assert (await wire.get(task_id))["status"] == "cancelled"


async def test_an_ended_task_stays_as_it_ended_when_cancelled(wire: TaskWire) -> None:
    with trio.fail_after(30):
        task_id = (await wire.call("sleepy"))["taskId"]
        await wire.until(task_id)
        await wire.cancel(task_id)
        assert (await wire.get(task_id))["status"] == "completed"


async def test_an_unknown_task_is_invalid_params(wire: TaskWire) -> None:
    for method in ("tasks/get", "tasks/cancel"):
        with trio.fail_after(30), pytest.raises(RpcError) as raised:
            await wire.request(method, {"taskId": "no-such-task"})
        assert raised.value.code == -32602


async def test_removed_methods_are_not_found(wire: TaskWire) -> None:
    for method in ("tasks/result", "tasks/list"):
        with trio.fail_after(30), pytest.raises(RpcError) as raised:
            await wire.request(method, {"taskId": "x"})
        assert raised.value.code == -32601


async def test_discover_advertises_the_extension_and_tools_their_support(
    wire: TaskWire,
) -> None:
    with trio.fail_after(30):
        discovered = await wire.request("server/discover", {})
        listed = await wire.request("tools/list", {})
    assert TASKS in discovered["capabilities"]["extensions"]
    assert "tasks" not in discovered["capabilities"]
    support = {
        t["name"]: t.get("execution", {}).get("taskSupport") for t in listed["tools"]
    }
    assert support["hello"] is None
    assert support["sleepy"] == "optional"
    assert support["broken_tool"] == "required"


async def test_a_client_without_the_extension_gets_no_tasks(wire: TaskWire) -> None:
    wire.tasks = False
    with trio.fail_after(30):
        result = await wire.call("sleepy")
        assert result["resultType"] == "complete"
        assert result["content"][0]["text"] == "slept 0"
        with pytest.raises(RpcError) as required:
            await wire.call("broken_tool")
        for method in ("tasks/get", "tasks/update", "tasks/cancel"):
            with pytest.raises(RpcError) as gated:
                await wire.request(method, {"taskId": "t", "inputResponses": {}})
            assert gated.value.code == -32021
    assert required.value.code == -32021
    assert required.value.data == {"requiredCapabilities": {"extensions": {TASKS: {}}}}


async def test_a_mismatched_mcp_name_on_a_task_method_is_refused(
    wire: TaskWire,
) -> None:
    with trio.fail_after(30):
        task_id = (await wire.call("sleepy", seconds=5))["taskId"]
        with pytest.raises(RpcError) as raised:
            await wire.request("tasks/get", {"taskId": task_id}, name="other")
        await wire.cancel(task_id)
    assert (raised.value.status, raised.value.code) == (400, -32020)


async def test_a_tool_asks_in_the_request_then_becomes_a_task_at_its_step(
    wire: TaskWire,
) -> None:
    with trio.fail_after(30):
        first = await wire.call("greet_later")
        assert first["resultType"] == "input_required"
        assert "taskId" not in first
        params = {
            "name": "greet_later",
            "arguments": {},
            "inputResponses": {"name": {"action": "accept", "content": {"name": "Bo"}}},
            "requestState": first["requestState"],
        }
        created = await wire.request("tools/call", params)
        assert created["resultType"] == "task"
        assert "requestState" not in created
        done = await wire.until(created["taskId"])
    assert done["result"]["content"][0]["text"] == "Hi Bo, from a task"


async def test_a_task_is_swept_after_its_ttl() -> None:
    limits = ServerLimits(task_ttl=0.5, task_lease=0.2)
    server = Server(tools.ALL, name="tasks-ttl", limits=limits)
    async with served(server) as url, httpx.AsyncClient(timeout=30) as http:
        wire = TaskWire(http, url)
        with trio.fail_after(30):
            created = await wire.call("sleepy")
            assert created["ttlMs"] == 500
            await wire.until(created["taskId"])
            with pytest.raises(RpcError) as raised:
                await _poll_until_gone(wire, created["taskId"])
    assert raised.value.code == -32602


async def _poll_until_gone(wire: TaskWire, task_id: str) -> None:
    while True:
        await wire.get(task_id)
        await trio.sleep(0.05)


async def test_tasks_past_max_tasks_are_refused_as_busy() -> None:
    server = Server(tools.ALL, name="tasks-full", limits=ServerLimits(max_tasks=1))
    async with served(server) as url, httpx.AsyncClient(timeout=30) as http:
        wire = TaskWire(http, url)
        with trio.fail_after(30):
            first = await wire.call("sleepy", seconds=60)
            with pytest.raises(RpcError) as refused:
                await wire.call("sleepy", seconds=60)
            await wire.cancel(first["taskId"])
            await wire.until(first["taskId"])
            while True:  # its place is free once its runner has stopped
                try:
                    again = await wire.call("sleepy")
                except RpcError:
                    await trio.sleep(0.02)
                else:
                    break
    assert refused.value.code == -32000
    assert again["resultType"] == "task"

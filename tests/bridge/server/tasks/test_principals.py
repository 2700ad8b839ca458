"""Tasks on a server with authorization: one caller's task id is worth
nothing to another, who is told exactly what an unknown id is told; and one
caller cannot take every task place of a process."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import httpx
import pytest
import trio

from bridge.server import Server
from bridge.server.auth import Auth, JwtVerifier
from bridge.server.limits import ServerLimits
from tests.bridge.auth_issuer import issuing
from tests.bridge.http_kit import served
from tests.bridge.server.tasks.kit import RpcError, TaskWire
from tests.fixtures import task_tools as tools

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]
USE = "mcp:use"


@contextlib.asynccontextmanager
async def two_callers(
    limits: ServerLimits | None = None,
) -> AsyncIterator[tuple[TaskWire, TaskWire]]:
    async with issuing() as issuer:
        server = Server(tools.ALL, name="tasks-auth", limits=limits or ServerLimits())
        async with served(server) as url:
            server.auth = Auth(
                resource=url,
                authorization_servers=[issuer.url],
                verifier=JwtVerifier(issuer=issuer.url),
                scopes=[USE],
            )
            alice = issuer.token(aud=url, scope=USE)
            bob = issuer.token(aud=url, scope=USE, sub="bob")
            async with (
                httpx.AsyncClient(
                    timeout=30, headers={"authorization": f"Bearer {alice}"}
                ) as a,
                httpx.AsyncClient(
                    timeout=30, headers={"authorization": f"Bearer {bob}"}
                ) as b,
            ):
                yield TaskWire(a, url), TaskWire(b, url)


async def _refusal(wire: TaskWire, method: str, task_id: str) -> tuple[int, str]:
    with pytest.raises(RpcError) as raised:
        await wire.request(method, {"taskId": task_id, "inputResponses": {}})
    return raised.value.code, str(raised.value).split(": ", 1)[1].replace(task_id, "ID")


async def test_another_callers_task_looks_like_an_unknown_one() -> None:
    with trio.fail_after(60):
        async with two_callers() as (alice, bob):
            task_id = (await alice.call("ask_ok"))["taskId"]
            await alice.until(task_id, "input_required")
            for method in ("tasks/get", "tasks/update", "tasks/cancel"):
                stolen = await _refusal(bob, method, task_id)
                unknown = await _refusal(bob, method, "no-such-task")
                assert stolen == unknown, method
            # bob's attempts changed nothing: alice's task still waits on her
            assert (await alice.get(task_id))["status"] == "input_required"
            await alice.answer(
                task_id, "ok", {"action": "accept", "content": {"ok": True}}
            )
            done = await alice.until(task_id)
            assert done["status"] == "completed"


async def test_one_caller_cannot_take_every_task_place() -> None:
    limits = ServerLimits(max_tasks=8, max_tasks_per_caller=2)
    with trio.fail_after(60):
        async with two_callers(limits) as (alice, bob):
            waiting = [(await alice.call("ask_ok"))["taskId"] for _ in range(2)]
            with pytest.raises(RpcError) as refused:
                await alice.call("ask_ok")
            assert refused.value.code == -32000
            assert refused.value.data == {"reason": "limit", "limit": 2}
            # another caller still gets a task, and alice gets a place back
            # once one of hers ends
            assert (await bob.call("ask_ok"))["status"] == "working"
            await alice.cancel(waiting[0])
            await alice.until(waiting[0])
            # at once: not at the next recovery pass, 15 s later
            with trio.fail_after(5):
                while True:
                    try:
                        await alice.call("ask_ok")
                        break
                    except RpcError:
                        await trio.sleep(0.05)


async def test_without_authorization_all_clients_share_one_callers_places() -> None:
    # No principal, so no caller to tell apart: tasks parked on their
    # clients (not counted by max_tasks) had no bound at all (8,000 parked
    # for their hour-long TTL in 30 s). All clients together are one caller.
    server = Server(tools.ALL, limits=ServerLimits(max_tasks=8, max_tasks_per_caller=2))
    with trio.fail_after(60):
        async with (
            served(server) as url,
            httpx.AsyncClient(timeout=30) as one,
            httpx.AsyncClient(timeout=30) as another,
        ):
            first, second = TaskWire(one, url), TaskWire(another, url)
            waiting = [(await first.call("ask_ok"))["taskId"] for _ in range(2)]
            for task_id in waiting:
                await first.until(task_id, "input_required")
            with pytest.raises(RpcError) as refused:
                await second.call("ask_ok")
            assert refused.value.code == -32000
            assert refused.value.data == {"reason": "limit", "limit": 2}
            assert "all callers together" in str(refused.value)
            await first.cancel(waiting[0])
            await first.until(waiting[0])
            # A parked task has no runner to end: its place is free as soon
            # as it is cancelled, not at the next recovery pass, 15 s later.
            assert (await second.call("ask_ok"))["status"] == "working"

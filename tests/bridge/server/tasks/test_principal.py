"""A task runs for the caller who made it: ``ctx.principal`` in the task is
theirs (kept in the task document), and only they see the task.

The server's dispatcher (:func:`bridge.server.tasks.respond`) is called as the
HTTP endpoint calls it for a request whose access token it accepted.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
import trio

from bridge.jsonrpc.messages import Request
from bridge.server import Server
from bridge.server.tasks import respond
from runtime.errors import RequestError
from runtime.principal import Principal
from tests.bridge.server.tasks.kit import MODERN, capabilities
from tests.fixtures import task_tools as tools

_ids = itertools.count(1)
ALICE = Principal(
    subject="alice", issuer="https://issuer.example", scopes={"read", "run"}
)
BOB = Principal(subject="bob", issuer="https://issuer.example")


async def _send(
    server: Server, principal: Principal, method: str, **params: Any
) -> dict[str, Any]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": capabilities(),
    }
    request = Request(next(_ids), method, {**params, "_meta": meta})

    async def drop(method: str, params: dict[str, Any]) -> None:
        pass

    return await respond(server, request, drop, principal=principal)


async def test_a_task_runs_for_its_caller_and_only_they_see_it() -> None:
    server = Server(tools.ALL)
    # The dispatcher is called as a transport would: inside the server's run
    # scope, where tasks run.
    async with server.running():
        await _runs_for_its_caller(server)


async def _runs_for_its_caller(server: Server) -> None:
    with trio.fail_after(30):
        created = await _send(server, ALICE, "tools/call", name="whoami", arguments={})
        task_id = created["taskId"]
        while (task := await _send(server, ALICE, "tasks/get", taskId=task_id))[
            "status"
        ] != "completed":
            await trio.sleep(0.02)
        with pytest.raises(RequestError) as hidden:
            await _send(server, BOB, "tasks/get", taskId=task_id)
    assert task["result"]["content"][0]["text"] == "alice ['read', 'run']"
    assert hidden.value.code == -32602

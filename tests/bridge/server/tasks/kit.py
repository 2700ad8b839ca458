"""A raw 2026-07-28 client of the tasks extension, over real loopback HTTP.

:class:`TaskWire` posts JSON-RPC with the envelope and the routing headers
(``Mcp-Method``, ``Mcp-Name``: the taskId for the task methods), declaring the
tasks extension unless told not to, and polls ``tasks/get`` until a status.
:func:`callers` gives one per caller of a server that checks access tokens
(``yieldmcp serve ... --auth ISSUER``, :func:`auth_flags`), each with its own.
"""

from __future__ import annotations

import contextlib
import itertools
import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Final

import httpx
import trio

if TYPE_CHECKING:
    from tests.bridge.auth_issuer import Issuer

MODERN: Final = "2026-07-28"
TASKS: Final = "io.modelcontextprotocol/tasks"
_TERMINAL: Final = ("completed", "failed", "cancelled")
USE: Final = "mcp:use"
"""The scope :func:`auth_flags` requires and :func:`callers`' tokens carry."""


def capabilities(tasks: bool = True) -> dict[str, Any]:
    caps: dict[str, Any] = {"elicitation": {}}
    if tasks:
        caps["extensions"] = {TASKS: {}}
    return caps


class RpcError(Exception):
    def __init__(self, status: int, error: dict[str, Any]) -> None:
        super().__init__(f"{status}: {error}")
        self.status = status
        self.code: int = error["code"]
        self.message: str = error.get("message", "")
        self.data: Any = error.get("data")


class TaskWire:
    """One client of the endpoint at ``url``."""

    def __init__(self, http: httpx.AsyncClient, url: str, *, tasks: bool = True):
        self.http = http
        self.url = url
        self.tasks = tasks
        self._ids = itertools.count(1)

    async def request(
        self, method: str, params: dict[str, Any], *, name: str | None = None
    ) -> dict[str, Any]:
        meta = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": capabilities(self.tasks),
        }
        body = {
            "jsonrpc": "2.0",
            "id": next(self._ids),
            "method": method,
            "params": {**params, "_meta": meta},
        }
        headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": MODERN,
            "mcp-method": method,
        }
        routed = name if name is not None else params.get("name", params.get("taskId"))
        if isinstance(routed, str):
            headers["mcp-name"] = routed
        response = await self.http.post(
            self.url, content=json.dumps(body), headers=headers
        )
        message = _last_message(response)
        if "error" in message:
            raise RpcError(response.status_code, message["error"])
        return message["result"]

    async def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        return await self.request("tools/call", {"name": tool, "arguments": arguments})

    async def get(self, task_id: str) -> dict[str, Any]:
        return await self.request("tasks/get", {"taskId": task_id})

    async def update(self, task_id: str, responses: dict[str, Any]) -> dict[str, Any]:
        params = {"taskId": task_id, "inputResponses": responses}
        return await self.request("tasks/update", params)

    async def answer(self, task_id: str, form: str, response: Any) -> dict[str, Any]:
        """``tasks/update`` with ``response`` to the question of the form key
        ``form`` the task now asks (a task's keys carry the effect key too)."""
        keys = list((await self.get(task_id)).get("inputRequests", {}))
        asking = [k for k in keys if k.split("@", 1)[0] == form]
        assert len(asking) == 1, (form, keys)
        return await self.update(task_id, {asking[0]: response})

    async def cancel(self, task_id: str) -> dict[str, Any]:
        return await self.request("tasks/cancel", {"taskId": task_id})

    async def until(self, task_id: str, *statuses: str) -> dict[str, Any]:
        """Poll until the task is in one of ``statuses`` (or has ended)."""
        wanted = statuses or _TERMINAL
        while True:
            task = await self.get(task_id)
            if task["status"] in wanted or task["status"] in _TERMINAL:
                return task
            await trio.sleep(0.02)


def _last_message(response: httpx.Response) -> dict[str, Any]:
    if response.headers["content-type"].startswith("text/event-stream"):
        data = [
            line[5:].strip()
            for line in response.text.splitlines()
            if line.startswith("data:")
        ]
        return json.loads(data[-1])
    return response.json()


def auth_flags(issuer: Issuer) -> list[str]:
    """``serve`` flags requiring access tokens from ``issuer`` (scope ``USE``)."""
    return ["--auth", issuer.url, "--auth-scope", USE]


@contextlib.asynccontextmanager
async def callers(
    issuer: Issuer, url: str, *subjects: str, tasks: bool = True
) -> AsyncIterator[list[TaskWire]]:
    """A :class:`TaskWire` to ``url`` per subject, each sending an access
    token of its own from ``issuer``: one caller (principal) each."""
    async with contextlib.AsyncExitStack() as stack:
        wires: list[TaskWire] = []
        for subject in subjects:
            token = issuer.token(aud=url, scope=USE, sub=subject)
            http = await stack.enter_async_context(
                httpx.AsyncClient(
                    timeout=60, headers={"authorization": f"Bearer {token}"}
                )
            )
            wires.append(TaskWire(http, url, tasks=tasks))
        yield wires

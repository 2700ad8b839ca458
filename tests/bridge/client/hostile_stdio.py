"""A stdio MCP server that abuses its client, one way per scenario.

Raw JSON-RPC, no SDK, both eras: ``python hostile_stdio.py ERA SCENARIO [N]``
with ERA ``legacy`` (``initialize``) or ``modern`` (``server/discover``).

* ``redos N``: tool ``t``'s ``outputSchema`` has ``"pattern": "^(a+)+$"``
  and a ``$ref`` to a document elsewhere; its result is ``N`` a's and a ``!``
  there (exponential in a backtracking regex engine).
* ``params``: (modern) tool ``t`` returns ``input_required`` with an
  ``elicitation/create`` whose params are an array.
* ``task-params``: (modern) tool ``t`` makes a task, which then asks the same.
* ``cursors N``: ``tools/list`` answers no tools and a new cursor of ``N``
  characters, without end; tool ``count`` says how many pages were read.
* ``loglevels``: tool ``t`` sends log notices whose ``level`` or ``logger``
  is not a string, then one that is, then its result.
* ``deep N``: tool ``t``'s result holds JSON nested ``N`` levels deep (valid
  JSON, past what the client's parser reads).
* ``unnamed``: tool ``t`` is answered with ``-32700`` naming no id, as a
  server that could not read the request says.
* ``malformed N``: tool ``t`` is answered, under its id, with a response
  that cannot be used: ``N`` 0, both a result and an error; 1, an error
  that is no error object; 2, ``jsonrpc`` "1.0"; 3, neither a result nor
  an error; 4, its result under the id as a float (``7.0``, which is the
  same number: that one is used); 5, its result under the id ``true``.
"""

from __future__ import annotations

import json
import sys
from typing import Any

MODERN = "2026-07-28"
ERA, SCENARIO = sys.argv[1], sys.argv[2]
N = int(sys.argv[3]) if len(sys.argv) > 3 else 0
TASKS = "io.modelcontextprotocol/tasks"
TOOL: dict[str, Any] = {"name": "t", "inputSchema": {"type": "object"}}
if SCENARIO == "redos":
    TOOL["outputSchema"] = {
        "type": "object",
        "properties": {
            "a": {"type": "string", "pattern": "^(a+)+$"},
            "b": {"$ref": "https://example.invalid/schema.json"},
        },
    }
ASK = {"k": {"method": "elicitation/create", "params": [1, 2]}}
lists = 0
NO_ANSWER = object()


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def answer(request: dict[str, Any]) -> Any:
    global lists
    method = request.get("method")
    capabilities = {"tools": {}, "extensions": {TASKS: {}}}
    if method == "server/discover":
        if ERA != "modern":
            return None
        info = {"name": "hostile", "version": "1"}
        return {
            "supportedVersions": [MODERN],
            "capabilities": capabilities,
            "_meta": {"io.modelcontextprotocol/serverInfo": info},
        }
    if method == "initialize":
        return {
            "protocolVersion": "2025-11-25",
            "capabilities": capabilities,
            "serverInfo": {"name": "hostile", "version": "1"},
        }
    if method == "tools/list":
        lists += 1
        if SCENARIO == "cursors":
            return {"tools": [], "nextCursor": f"{lists:08d}" * (N // 8)}
        return {"tools": [TOOL]}
    if method == "tools/call":
        if SCENARIO == "redos":
            return {
                "content": [{"type": "text", "text": "x"}],
                "structuredContent": {"a": "a" * N + "!"},
            }
        if SCENARIO == "loglevels":
            odd = [{"level": 5}, {"level": {"a": 1}}, {"level": None}]
            odd += [{"level": ["x"]}, {"level": "info", "logger": 7}]
            for params in [*odd, {"level": "warning", "logger": "l"}]:
                log = {"method": "notifications/message", "params": params}
                send({"jsonrpc": "2.0", **log, "params": {**params, "data": "d"}})
        if SCENARIO == "deep":  # written by hand: json.dumps stops at ~1000
            nested = "[" * N + "1" + "]" * N
            result = f'{{"content":[],"structuredContent":{{"n":{nested}}}}}'
            head = f'{{"jsonrpc":"2.0","id":{json.dumps(request["id"])},"result":'
            sys.stdout.write(head + result + "}\n")
            sys.stdout.flush()
            return NO_ANSWER
        if SCENARIO == "malformed":
            result = {"content": [{"type": "text", "text": "x"}]}
            wrong: list[dict[str, Any]] = [
                {"jsonrpc": "2.0", "result": result, "error": {"code": 1}},
                {"jsonrpc": "2.0", "error": "no"},
                {"jsonrpc": "1.0", "result": result},
                {"jsonrpc": "2.0"},
                {"jsonrpc": "2.0", "result": result, "id": float(request["id"])},
                {"jsonrpc": "2.0", "result": result, "id": True},
            ]
            send({"id": request["id"], **wrong[N]})
            return NO_ANSWER
        if SCENARIO == "unnamed":
            error = {"code": -32700, "message": "Parse error"}
            send({"jsonrpc": "2.0", "id": None, "error": error})
            return NO_ANSWER
        if SCENARIO == "params":
            return {"resultType": "input_required", "inputRequests": ASK}
        if SCENARIO == "task-params":
            return {
                "resultType": "task",
                "taskId": "t1",
                "status": "working",
                "pollIntervalMs": 0,
            }
        return {"content": [{"type": "text", "text": str(lists)}]}
    if method == "tasks/get":
        return {"taskId": "t1", "status": "input_required", "inputRequests": ASK}
    return None


for line in sys.stdin:
    request = json.loads(line)
    if "id" not in request:
        continue
    result = answer(request)
    if result is NO_ANSWER:
        continue
    if result is None:
        error = {"code": -32601, "message": "Method not found"}
        send({"jsonrpc": "2.0", "id": request["id"], "error": error})
    else:
        send({"jsonrpc": "2.0", "id": request["id"], "result": result})

"""Resuming a 2026-07-28 call from a sealed 10-answer journal, server side.

The state is made by playing the first 11 rounds of ``elicit_n`` (11
questions) against the server directly; the timed round sends that state (10
answers) with the answer to the 11th question, so the server opens the seal,
replays the 10 answers (each decoded and validated again), takes the 11th and
returns the result.
"""

from __future__ import annotations

from typing import Any

from bridge.jsonrpc import Request
from bridge.jsonrpc.session import Session
from bridge.server import Connection, Server
from bridge.server.calls import rounds as _rounds
from bridge.server.questions import CallScope
from bridge.transports.memory import memory_pair

from ._stats import cpu
from .ours import make_server

__all__ = ["handle_request", "run_round"]

CAPABILITIES: dict[str, Any] = {"elicitation": {"form": {}}}
ENVELOPE: dict[str, Any] = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": CAPABILITIES,
}
ANSWER = {"action": "accept", "content": {"n": 1}}


async def _prepare(
    answers: int = 10,
) -> tuple[Server, Connection, Session, dict[str, Any]]:
    """A round of ``elicit_n`` with ``answers + 1`` questions, ready to time: its
    state holds ``answers`` answers, and its ``inputResponses`` the last one."""
    server = make_server()
    connection = server.connection()
    session = Session(memory_pair()[0], connection)
    params: dict[str, Any] = {
        "name": "elicit_n", "arguments": {"count": answers + 1}, "_meta": ENVELOPE,
    }  # fmt: skip
    for i in range(answers + 1):
        result = await connection.handle_request(
            Request(i, "tools/call", params), session
        )
        assert result["resultType"] == "input_required", result
        params = {
            **params,
            "inputResponses": {"step": ANSWER},
            "requestState": result["requestState"],
        }
    return server, connection, session, params


async def _timed(fn: Any, seconds: float) -> float:
    for _ in range(3):
        await fn()
    n, start = 0, cpu()  # in-process work: CPU time (see compare_mcp)
    while True:
        await fn()
        n += 1
        if n >= 10 and cpu() - start >= seconds:
            return (cpu() - start) / n


async def handle_request(seconds: float, answers: int = 10) -> float:
    """Seconds for the whole ``tools/call`` round (envelope, seal, replay, result)
    that resumes from a journal of ``answers`` answers."""
    _server, connection, session, params = await _prepare(answers)
    request = Request(99, "tools/call", params)
    total = str(answers + 1)

    async def once() -> None:
        result = await connection.handle_request(request, session)
        assert result["content"][0]["text"] == total, result

    return await _timed(once, seconds)


async def run_round(seconds: float) -> float:
    """Seconds for ``bridge.server.calls.rounds.begin`` alone (seal, replay, finish)."""
    server, _connection, _session, params = await _prepare()
    tool = server.tools["elicit_n"]
    arguments = tool.parse_arguments(params["arguments"])
    scope = CallScope(
        era="2026-07-28", request_id=99,
        client_capabilities=CAPABILITIES,
    )  # fmt: skip

    async def once() -> None:
        round_ = _rounds.begin(
            server, tool, arguments, params, purpose="tools/call", scope=scope,
            store=None,
        )  # fmt: skip
        outcome = round_.now()  # elicit_n runs no step: it ends at once
        assert isinstance(outcome, _rounds.Complete), outcome

    return await _timed(once, seconds)

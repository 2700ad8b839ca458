"""JSON nested past what an MCP reader takes, between our server and client.

``pydantic_core.from_json``, which reads every message, stops at 200 levels.
Our server wrote a tool's result nested deeper without a word, and our client
then warned "not valid JSON" and waited for ever (stdio) or said the server
broke the protocol (HTTP); our client sent arguments nested deeper, the
server answered ``-32700`` naming no request, and the call waited for ever.
Now a result the client could not read is the tool's error, saying why;
arguments the server could not read are not sent; and a request nested too
deep that comes all the same is answered with its id.
"""

from __future__ import annotations

import json
import subprocess
import sys

import httpx
import pytest

from bridge.server import Server
from tests.bridge.cli.inprocess import yieldmcp
from tests.bridge.http_kit import Raw, served
from tests.fixtures import deep_tools
from tests.helpers import ROOT

FIXTURE = "tests/fixtures/deep_tools.py"
SERVED = f"yieldmcp serve {FIXTURE}"
ERAS = ["legacy", "2026-07-28"]
TOO_DEEP = {
    "code": -32700,
    "message": "Parse error: JSON nested deeper than 200 levels, the most a "
    "message may",
}


def _call(*args: str, era: str) -> tuple[int, str, str]:
    done = yieldmcp(
        "call", SERVED, *args, "--era", era, "--connect-timeout", "60",
        "--timeout", "60",  # the old client waited for ever
    )  # fmt: skip
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize("era", ERAS)
def test_a_result_nested_too_deep_to_read_is_the_tools_error(era: str) -> None:
    # 196 levels of "child", the leaf's object, the result's own level, the
    # result's place in a task's (tasks/get), and the message's: 200. At 198
    # the plain call's message was 201 levels: it was sent, and the client
    # waited for ever; 197 fits a plain call but not a task, and is refused.
    code, out, _ = _call("tree", "--arg", "depth=196", era=era)
    assert code == 0, out
    for depth in (197, 198):
        code, out, err = _call("tree", "--arg", f"depth={depth}", era=era)
        assert (code, out) == (1, "")
        assert err == (
            "tool error: The result of tool 'tree': JSON nested deeper than the "
            "198 levels its place in an MCP message leaves (a whole message may "
            "nest 200, the most an MCP reader takes; deeper, it cannot be read)\n"
        )


@pytest.mark.parametrize("era", ERAS)
def test_arguments_nested_too_deep_to_read_are_not_sent(era: str) -> None:
    deep = "[" * 197 + "]" * 197  # in "x" in arguments: 198 levels, 200 in all
    code, out, _ = _call("take", "--args", '{"x": ' + deep + "}", era=era)
    assert (code, out.strip()) == (0, "taken")
    deeper = "[" * 198 + "]" * 198
    code, out, err = _call("take", "--args", '{"x": ' + deeper + "}", era=era)
    assert (code, out) == (1, "")
    assert err == (
        "yieldmcp: error: the arguments of tool 'take': JSON nested deeper than "
        "the 198 levels its place in an MCP message leaves (a whole message may "
        "nest 200, the most an MCP reader takes; deeper, it cannot be read)\n"
    )


def test_a_request_nested_too_deep_is_answered_with_its_id() -> None:
    # As another client would send it: the server answered -32700 with no
    # id, and could not be told which request it could not read.
    hello = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    }
    deep = "[" * 300 + "]" * 300
    lines = [
        json.dumps(
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}
        ),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"take",'
        '"arguments":{"x":' + deep + "}}}",
    ]
    done = subprocess.run(
        [sys.executable, "-m", "bridge.cli", "serve", FIXTURE],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert replies[-1] == {
        "jsonrpc": "2.0",
        "id": 7,
        "error": TOO_DEEP,
    }


@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
async def test_a_request_nested_too_deep_over_http_is_answered_with_its_id(
    era: str,
) -> None:
    # The same reader as stdio's, through the HTTP app's own path.
    deep = "[" * 300 + "]" * 300
    meta = {
        "io.modelcontextprotocol/protocolVersion": era,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    params = '{"name":"take","arguments":{"x":' + deep + "}"
    if era != "2025-11-25":
        params += ',"_meta":' + json.dumps(meta)
    body = '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":' + params + "}}"
    async with served(Server([deep_tools.take])) as url, httpx.AsyncClient() as http:
        raw = Raw(http, url, era=era)
        if era == "2025-11-25":
            await raw.initialize()
        extra = {} if era == "2025-11-25" else {"mcp_method": "tools/call"}
        answer = await http.post(url, content=body, headers=raw.headers(**extra))
    assert answer.status_code == 400
    assert answer.json() == {
        "jsonrpc": "2.0",
        "id": 7,
        "error": TOO_DEEP,
    }

"""``yieldmcp serve``'s flags for limits, origins and ``--debug`` take effect."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest
import trio

from bridge.cli.commands import main
from bridge.server.limits import MAX_SECONDS, ServerLimits, duration
from bridge.transports.http import HttpLimits
from tests.helpers import ROOT

YIELDMCP = str(Path(sys.executable).parent / "yieldmcp")
HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2025-11-25",
}


def _initialize(request_id: int) -> str:
    params = {"protocolVersion": "2025-11-25", "capabilities": {}}
    body = {"jsonrpc": "2.0", "id": request_id, "method": "initialize"}
    return json.dumps({**body, "params": params})


async def _url(stderr: trio.abc.ReceiveStream) -> str:
    logged = bytearray()
    while not (found := re.search(rb"serving MCP at (http://\S+/mcp)", logged)):
        chunk = await stderr.receive_some()
        assert chunk, logged.decode()
        logged.extend(chunk)
    return found[1].decode()


async def _drain(stream: trio.abc.ReceiveStream) -> None:
    while await stream.receive_some():
        pass


async def test_serve_flags_set_limits_origins_and_debug() -> None:
    command = [
        YIELDMCP, "-v", "serve", "tests/fixtures/http_tools.py", "--http", "0",
        "--max-sessions", "1", "--allow-origin", "https://app.example", "--debug",
        "--stream-responses", "when-needed", "--max-calls-per-session", "1",
    ]  # fmt: skip
    process = await trio.lowlevel.open_process(
        command, stderr=subprocess.PIPE, cwd=ROOT
    )
    assert process.stderr is not None
    try:
        with trio.fail_after(60):
            url = await _url(process.stderr)
            async with trio.open_nursery() as nursery, httpx.AsyncClient() as http:
                nursery.start_soon(_drain, process.stderr)
                allowed = await http.post(
                    url,
                    content=_initialize(1),
                    headers={**HEADERS, "origin": "https://app.example"},
                )
                session = {
                    **HEADERS,
                    "mcp-session-id": allowed.headers["mcp-session-id"],
                }
                call = {"name": "leaks", "arguments": {}}
                body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call"}
                leaked = await http.post(
                    url, content=json.dumps({**body, "params": call}), headers=session
                )
                other = await http.post(
                    url,
                    content=_initialize(3),
                    headers={**HEADERS, "origin": "http://localhost:3000"},
                )
                nursery.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True):
            process.terminate()
            await process.wait()
    assert allowed.status_code == 200
    assert other.status_code == 403
    assert "hunter2" in leaked.json()["result"]["content"][0]["text"]  # --debug


def test_a_limit_that_is_not_positive_is_a_usage_error_naming_the_flag() -> None:
    for flag, value in (("--max-sessions", "0"), ("--max-request-sleep", "nan")):
        done = subprocess.run(
            [YIELDMCP, "serve", "examples/ttt.py", flag, value],
            capture_output=True, text=True, cwd=ROOT, timeout=120, input="",
        )  # fmt: skip
        assert done.returncode == 2  # a usage error, as for any bad flag
        assert done.stderr.strip().splitlines() == [
            f"yieldmcp serve: error: argument {flag}: must be positive, "
            f"got {value} (see --help)"
        ]


def _time_limits() -> list[tuple[type[Any], str]]:
    return [
        (cls, field.name)
        for cls in (ServerLimits, HttpLimits)
        for field in attrs.fields(cls)
        if field.validator is duration
    ]


@pytest.mark.parametrize(("cls", "name"), _time_limits())
@pytest.mark.parametrize("value", ["inf", "1e300"])
def test_a_time_limit_past_ten_years_is_refused_naming_the_flag(
    cls: type[Any], name: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # --task-ttl inf was taken, and every task then failed with -32603 (an
    # OverflowError making its ttlMs); a store cannot keep an expiry of inf.
    flag = "--" + name.replace("_", "-")
    with pytest.raises(SystemExit) as exited:
        main(["serve", "examples/ttt.py", flag, value])
    assert exited.value.code == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"yieldmcp serve: error: argument {flag}: must be at most 315360000 "
        f"seconds (ten years), got {value} (see --help)"
    ]
    with pytest.raises(ValueError, match=f"{cls.__name__}.{name} must be at most"):
        cls(**{name: float(value)})


def test_the_store_timeout_alone_may_be_inf() -> None:
    # Documented: no bound in practice (docs/deploying.md, --store-timeout).
    assert ServerLimits(store_timeout=math.inf).store_timeout == math.inf
    assert ServerLimits(task_ttl=MAX_SECONDS).task_ttl == MAX_SECONDS

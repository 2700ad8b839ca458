"""Interop: our client (``yieldmcp call``, run here) against server-everything.

server-everything is the reference server of the MCP project, written with
the TypeScript SDK; it runs under Node 22 over stdio. Its Streamable HTTP
mode listens on every interface (``app.listen(PORT)``, no host option), so
only stdio is tested: the tests start nothing beyond 127.0.0.1.
Sampling is answered by the built-in offline model, forms by ``--answer``.
"""

from __future__ import annotations

import json
import shlex
from typing import Any

import trio

from tests.bridge.cli.inprocess import Done, yieldmcp
from tests.helpers import ROOT, STARTUP
from tests.interop.peers import server_everything


def _call(*args: str) -> Done:
    # ``yieldmcp call`` in this process (tests/bridge/cli/inprocess.py);
    # server-everything is a real Node process over stdio.
    return yieldmcp("call", shlex.join(server_everything()), *args)


def _result(*args: str) -> dict[str, Any]:
    done = _call(*args, "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def _text(result: dict[str, Any]) -> str:
    return "".join(block["text"] for block in result["content"])


def test_lists_its_tools_resources_and_prompts() -> None:
    done = _call()
    assert done.returncode == 0, done.stderr[-3000:]
    # The tools it registers only for clients that can sample and elicit
    # are there: our client announced both capabilities.
    for tool in ("echo", "get-sum", "trigger-sampling-request"):
        assert f"\n{tool}(" in f"\n{done.stdout}"  # with its parameters
    assert "\necho(message: str): " in f"\n{done.stdout}"
    assert "trigger-elicitation-request(" in done.stdout
    assert "simple-prompt()" in done.stdout
    assert "demo://resource/static/document/architecture.md" in done.stdout


def test_calls_echo_and_a_typed_tool() -> None:
    echoed = _result("echo", "--arg", "message=hello from yieldmcp")
    assert echoed["isError"] is False
    assert _text(echoed) == "Echo: hello from yieldmcp"
    summed = _result("get-sum", "--args", '{"a": 2, "b": 40}')
    assert "42" in _text(summed)


def test_its_sampling_request_is_answered_by_our_model() -> None:
    result = _result("trigger-sampling-request", "--arg", "prompt=hello")
    assert result["isError"] is False
    text = _text(result)
    sampled = json.loads(text.split("\n", 1)[1])
    assert sampled["model"] == "offline"
    assert sampled["role"] == "assistant"
    assert (
        "Resource trigger-sampling-request context: hello"
        in (sampled["content"]["text"])
    )


def test_its_form_is_answered_and_validated_by_the_server() -> None:
    answer = {
        "name": "Ada Lovelace",
        "check": True,
        "email": "ada@example.com",
        "homepage": "https://example.com",
        "integer": 7,
    }
    result = _result(
        "trigger-elicitation-request", "--answer", f"*={json.dumps(answer)}"
    )
    text = _text(result)
    assert "User provided the requested information" in text
    raw = json.loads(text.split("Raw result: ", 1)[1])
    assert raw["action"] == "accept"
    assert raw["content"]["name"] == "Ada Lovelace"
    assert raw["content"]["integer"] == 7


def test_a_declined_form_reaches_the_server_as_declined() -> None:
    result = _result("trigger-elicitation-request", "--answer", '*="decline"')
    assert "declined" in _text(result).lower()


def test_pinning_2026_against_it_fails_in_one_line() -> None:
    # server-everything speaks only the handshake era: a user who pins
    # 2026-07-28 gets one line saying the server refused, and no traceback.
    done = _call("echo", "--arg", "message=hi", "--era", "2026-07-28")
    assert done.returncode == 1
    errors = [line for line in done.stderr.splitlines() if "error" in line.lower()]
    assert errors == ["yieldmcp: error: the server refused: Method not found (-32601)"]
    assert "Traceback" not in done.stderr


async def test_the_library_client_samples_and_elicits_for_it() -> None:
    # The same through bridge.client.connect, as a host embeds it: the
    # offline model samples, a scripted form answers, on one connection.
    from bridge.client import connect
    from bridge.elicit import ScriptedAnswers
    from bridge.providers import OfflineModel

    form = {"name": "Ada", "check": True}
    with trio.fail_after(120):
        async with connect(
            server_everything(),
            cwd=str(ROOT),
            connect_timeout=STARTUP,
            sampler=OfflineModel(),
            elicitation=ScriptedAnswers({"*": form}),
        ) as client:
            assert client.era == "2025-11-25"
            names = {tool["name"] for tool in await client.list_tools()}
            echoed = await client.call_tool("echo", {"message": "lib"})
            sampled = await client.call_tool(
                "trigger-sampling-request", {"prompt": "lib"}
            )
            elicited = await client.call_tool("trigger-elicitation-request")
    assert {"echo", "trigger-sampling-request"} <= names
    assert echoed.text == "Echo: lib"
    assert '"model": "offline"' in sampled.text
    assert '"name": "Ada"' in elicited.text

"""The server's own model answers samples a client cannot (issue 26, item 11).

``yieldmcp serve --model PROVIDER:MODEL`` (``Server(sampler=...)``) answers a
tool's samples when the client (either era) did not declare ``sampling`` (or
``sampling.tools`` for a sample offering tools); ``--model-always`` answers
every sample. The tool code is the same, the reply's ``model`` names the
server's model, the key comes from the server's environment and is never
logged, and elicitation has no such fallback. The client here is the official
``mcp`` SDK's, with no sampling callback.
"""

from __future__ import annotations

import os
import shlex
import sys
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from tests.bridge.cli.inprocess import yieldmcp
from tests.helpers import ROOT
from tests.interop.test_sdk_stdio import sampling, text_of
from tests.threaded_http import wordy_openai

FIXTURE = str(ROOT / "tests/fixtures/interop_server.py")


@pytest.fixture(params=["legacy", "2026-07-28"])
def mode(request: pytest.FixtureRequest) -> str:
    return request.param


def _serve(*flags: str, env: dict[str, str] | None = None) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "bridge.cli", "serve", FIXTURE, *flags],
        cwd=str(ROOT),
        env=env,
    )


async def test_a_client_without_sampling_gets_the_servers_model(mode: str) -> None:
    with trio.fail_after(30):
        async with Client(_serve("--model", "offline"), mode=mode) as client:
            asked = await client.call_tool("ask", {"prompt": "hi"})
            shaped = await client.call_tool("weather", {"prompt": "weather?"})
            agent = await client.call_tool("agent", {"prompt": "find trio"})
    assert text_of(asked).startswith("offline:")
    assert not shaped.is_error, shaped.content
    assert set(shaped.structured_content or {}) == {"city", "celsius"}
    assert -90 <= shaped.structured_content["celsius"] <= 60  # type: ignore[index]
    assert not agent.is_error, agent.content


async def test_a_client_that_samples_still_answers_unless_always(mode: str) -> None:
    with trio.fail_after(30):
        async with Client(
            _serve("--model", "offline"), mode=mode, sampling_callback=sampling
        ) as client:
            own = await client.call_tool("ask", {"prompt": "hi"})
        async with Client(
            _serve("--model", "offline:7", "--model-always"),
            mode=mode,
            sampling_callback=sampling,
        ) as client:
            server = await client.call_tool("ask", {"prompt": "hi"})
    assert text_of(own).startswith("sdk-model:")
    assert text_of(server).startswith("offline:7:")


async def test_samples_offering_tools_need_sampling_tools_or_the_server(
    mode: str,
) -> None:
    with trio.fail_after(30):
        async with Client(  # sampling, but not sampling.tools
            _serve("--model", "offline"), mode=mode, sampling_callback=sampling
        ) as client:
            plain = await client.call_tool("ask", {"prompt": "hi"})
            agent = await client.call_tool("agent", {"prompt": "find trio"})
    assert text_of(plain).startswith("sdk-model:")  # the client's own model
    assert not agent.is_error, agent.content  # the server's: the client cannot
    assert "sdk-model" not in text_of(agent)


async def test_elicitation_has_no_fallback() -> None:
    with trio.fail_after(30):
        async with Client(_serve("--model", "offline"), mode="legacy") as client:
            result = await client.call_tool("confirm", {"prompt": "Proceed?"})
        async with Client(_serve("--model", "offline"), mode="2026-07-28") as client:
            with pytest.raises(MCPError) as modern:
                await client.call_tool("confirm", {"prompt": "Proceed?"})
    assert result.is_error
    assert "elicitation capability" in result.content[0].text  # type: ignore[union-attr]
    assert modern.value.error.code == -32021  # MissingRequiredClientCapability


async def test_the_key_comes_from_the_environment_and_is_never_logged(
    tmp_path: Path,
) -> None:
    secret = "sk-test-do-not-print-4242"
    env = {
        **os.environ,
        "OPENAI_API_KEY": secret,
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",  # nothing listens: it fails
    }
    log = tmp_path / "server.log"
    command = [sys.executable, "-m", "bridge.cli", "-vv", "serve", FIXTURE]
    command += ["--model", "openai:gpt-test"]
    server = StdioServerParameters(
        command="/bin/sh",
        args=["-c", f"exec {shlex.join(command)} 2>>{shlex.quote(str(log))}"],
        cwd=str(ROOT),
        env=env,
    )
    with trio.fail_after(60):
        async with Client(server, mode="legacy") as client:
            result = await client.call_tool("ask", {"prompt": "hi"})
    assert result.is_error
    said: Any = result.content[0]
    assert said.text.startswith("openai: cannot reach openai at http://127.0.0.1:9")
    assert secret not in said.text
    logged = log.read_text()
    assert "127.0.0.1:9" in logged  # the provider was tried, and -vv logged it
    assert secret not in logged


async def test_the_servers_model_reads_at_most_model_max_answer() -> None:
    with wordy_openai(5_000) as base:
        env = {**os.environ, "OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": base}
        command = [sys.executable, "-m", "bridge.cli", "serve", FIXTURE]
        command += ["--model", "openai:gpt-test", "--model-max-answer", "1000"]
        server = StdioServerParameters(
            command=command[0], args=command[1:], cwd=str(ROOT), env=env
        )
        with trio.fail_after(60):
            async with Client(server, mode="legacy") as client:
                result = await client.call_tool("ask", {"prompt": "hi"})
    assert result.is_error
    said: Any = result.content[0]
    assert said.text == (
        "openai: an answer over 1,000 bytes (its max_answer) from "
        f"{base}/chat/completions"
    )


def _serve_fails(*flags: str) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    done = yieldmcp("serve", FIXTURE, *flags, env=env)  # in-process: it exits
    assert done.returncode == 1
    return done.stderr.strip().splitlines()


def test_a_bad_model_flag_is_a_one_line_error() -> None:
    (missing_key,) = _serve_fails("--model", "anthropic:claude-test")
    assert missing_key.startswith("yieldmcp: error: ")
    assert "ANTHROPIC_API_KEY" in missing_key
    assert _serve_fails("--model-always") == [
        "yieldmcp: error: --model-always needs --model PROVIDER:MODEL"
    ]
    assert _serve_fails("--model-max-answer", "1000") == [
        "yieldmcp: error: --model-max-answer needs --model PROVIDER:MODEL"
    ]


@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
async def test_server_sampler_over_http(mode: str) -> None:
    from bridge.cli.loader import load_server
    from bridge.providers import OfflineModel
    from bridge.server import Server
    from bridge.transports.http import serve_http

    tools = load_server(FIXTURE).tools.values()
    server = Server(tools, sampler=OfflineModel(seed=3))
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            url = await nursery.start(partial(serve_http, server, "127.0.0.1", 0))
            async with Client(url, mode=mode) as client:
                asked = await client.call_tool("ask", {"prompt": "hi"})
            nursery.cancel_scope.cancel()
    assert text_of(asked).startswith("offline:3:")

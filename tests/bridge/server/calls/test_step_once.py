"""A step's work runs once per call, however many rounds the call takes.

The ``charge`` tool (``tests/fixtures/step_tools.py``) charges a card in a
step, then elicits, then samples: three rounds in 2026-07-28, where every
round replays the generator. The card must be charged once, over real HTTP,
over a stdio subprocess, with the official ``mcp`` client, and in the
2025-11-25 era. Before steps, it was charged three times.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest
import trio
from mcp import Client as SdkClient
from mcp.client.stdio import StdioServerParameters

from bridge.client import connect
from tests.bridge.client.test_client import Accepting, ScriptedModel
from tests.bridge.http_kit import served
from tests.fixtures import step_tools
from tests.helpers import ROOT, STARTUP

ERAS = ["legacy", "2026-07-28"]
SERVE = [sys.executable, "-m", "bridge.cli", "serve"]
FIXTURE = str(ROOT / "tests/fixtures/step_tools.py")


def _runs(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


@pytest.mark.parametrize("era", ERAS)
async def test_a_step_runs_once_over_http(era: str, tmp_path: Path) -> None:
    marks = tmp_path / "charges"
    async with (
        served(step_tools.server) as url,
        connect(
            url, era=era, sampler=ScriptedModel(), elicitation=Accepting({"ok": True})
        ) as client,
    ):  # type: ignore[arg-type]
        result = await client.call_tool("charge", {"path": str(marks)})
    assert result.text == "charged; accept; answer to Summarise: charged"
    assert len(_runs(marks)) == 1


@pytest.mark.parametrize("era", ERAS)
async def test_a_step_runs_once_over_stdio(era: str, tmp_path: Path) -> None:
    marks = tmp_path / "charges"
    with trio.fail_after(120):
        async with connect(
            [*SERVE, FIXTURE],
            era=era,
            cwd=str(ROOT),
            connect_timeout=STARTUP,
            sampler=ScriptedModel(),
            elicitation=Accepting({"ok": True}),
        ) as client:  # type: ignore[arg-type]
            result = await client.call_tool("charge", {"path": str(marks)})
    assert result.text == "charged; accept; answer to Summarise: charged"
    assert len(_runs(marks)) == 1


async def _sdk_sampling(context: Any, params: Any) -> types.CreateMessageResult:
    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(type="text", text="summary"),
        model="sdk",
    )


async def _sdk_elicitation(context: Any, params: Any) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"ok": True})


@pytest.mark.parametrize("mode", ERAS)
async def test_a_step_runs_once_with_the_official_client(
    mode: str, tmp_path: Path
) -> None:
    marks = tmp_path / "charges"
    server = StdioServerParameters(command=SERVE[0], args=[*SERVE[1:], FIXTURE])
    with trio.fail_after(60):
        async with SdkClient(
            server,
            mode=mode,
            sampling_callback=_sdk_sampling,
            elicitation_callback=_sdk_elicitation,
        ) as client:  # type: ignore[call-arg]
            result = await client.call_tool("charge", {"path": str(marks)})
    assert not result.is_error, result.content
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    assert block.text == "charged; accept; summary"
    assert len(_runs(marks)) == 1


@pytest.mark.parametrize("era", ERAS)
async def test_a_failing_step_replays_its_failure(era: str, tmp_path: Path) -> None:
    marks = tmp_path / "declines"
    handler = Accepting({"ok": True})
    async with (
        served(step_tools.server) as url,
        connect(url, era=era, elicitation=handler) as client,  # type: ignore[arg-type]
    ):
        result = await client.call_tool("declined", {"path": str(marks)})
    # The elicit's round replays the step: it raises the recorded failure,
    # so the tool takes the same path, and the card is tried once.
    assert result.text == "ValueError: card declined; accept"
    assert len(_runs(marks)) == 1

"""Structured output like the official SDK's: a tool's return annotation gives
the same ``outputSchema`` (up to ``title`` keys) and ``structuredContent`` as
``mcp`` 2.3's ``MCPServer`` for the same function, over the wire, in both eras.

Both servers serve ``tests/fixtures/output_shapes.py`` over stdio; our client
reads both (and checks each result against its schema on the way).
"""

from __future__ import annotations

import sys
from typing import Any

import pytest
import trio

from bridge.client import connect
from tests.fixtures import output_shapes
from tests.helpers import ROOT, STARTUP

SHAPES = str(ROOT / "tests/fixtures/output_shapes.py")
OURS = [sys.executable, "-m", "bridge.cli", "serve", SHAPES]
SDK = [sys.executable, SHAPES]
NAMES = [function.__name__ for function in output_shapes.FUNCTIONS]

# One worker runs this module, so the fixture below starts its two servers once
# per era rather than once per era on every worker that gets one of its tests.
pytestmark = pytest.mark.xdist_group("output-shapes")


def _untitled(value: Any) -> Any:
    """``value`` without ``title`` keys (pydantic names models differently)."""
    if isinstance(value, dict):
        return {
            k: _untitled(v)
            for k, v in value.items()  # pyright: ignore[reportUnknownVariableType]
            if k != "title"
        }
    if isinstance(value, list):
        return [_untitled(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
    return value


async def _observe(command: list[str], era: str) -> dict[str, Any]:
    """Each tool's outputSchema, and each call's structuredContent and text."""
    seen: dict[str, Any] = {}
    with trio.fail_after(120):
        async with connect(
            command, era=era, cwd=str(ROOT), connect_timeout=STARTUP
        ) as client:  # type: ignore[arg-type]
            tools = {t["name"]: t for t in await client.list_tools()}
            for name in NAMES:
                calls = []
                for arguments in output_shapes.ARGUMENTS.get(name, [{}]):
                    result = await client.call_tool(name, arguments)
                    assert not result.is_error, (name, result.text)
                    calls.append(
                        (result.structured_content, result.text, result.content)
                    )
                seen[name] = (tools[name].get("outputSchema"), calls)
    return seen


@pytest.fixture(scope="module", params=["legacy", "2026-07-28"])
def both(request: pytest.FixtureRequest) -> tuple[dict[str, Any], dict[str, Any]]:
    era = request.param
    return trio.run(_observe, OURS, era), trio.run(_observe, SDK, era)


@pytest.mark.parametrize("name", NAMES)
def test_the_output_schema_is_the_sdks(
    both: tuple[dict[str, Any], dict[str, Any]], name: str
) -> None:
    ours, sdk = both
    assert sdk[name][0] is not None, f"the SDK gives {name} no outputSchema"
    assert _untitled(ours[name][0]) == _untitled(sdk[name][0])


@pytest.mark.parametrize("name", NAMES)
def test_the_structured_content_is_the_sdks(
    both: tuple[dict[str, Any], dict[str, Any]], name: str
) -> None:
    ours, sdk = both
    assert [c[0] for c in ours[name][1]] == [c[0] for c in sdk[name][1]]


@pytest.mark.parametrize("name", NAMES)
def test_a_text_block_stays_beside_the_structured_content(
    both: tuple[dict[str, Any], dict[str, Any]], name: str
) -> None:
    ours, _sdk = both
    for structured, text, content in ours[name][1]:
        if structured == {"result": None}:
            assert content == ()  # nothing to say, as the SDK
        else:
            assert text, (name, structured)

"""Tools with plain typed parameters, as a newcomer writes them first.

The input schema of each signature is compared with what the official ``mcp``
package's server (``MCPServer``) generates for the very same function: a
client sees the same ``inputSchema`` whichever SDK serves the tool.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import pytest
import trio
from pydantic import BaseModel, Field

from runtime import Context, Op, tool
from runtime.lowlevel import InvalidArguments, InvalidTool
from runtime.testing import ScriptedPeer, run_scripted


class Point(BaseModel):
    x: int
    y: int = 0


class Where(BaseModel):
    """Where to look."""

    city: str


# --- the signatures compared with the official SDK ----------------------------------


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def greet(name: str, greeting: str = "Hello", times: int | None = None) -> str:
    return f"{greeting}, {name}" * (times or 1)


def described(
    city: Annotated[str, Field(description="The city to look up")],
    days: Annotated[int, Field(ge=1, le=10, description="How many days")] = 3,
    unit: Literal["C", "F"] = "C",
    tags: list[str] | None = None,
) -> str:
    return city


def nested(at: Point, label: str = "", scores: dict[str, float] | None = None) -> str:
    return label


def shadowing(json: str, copy: bool = False) -> str:
    """Parameter names that BaseModel also uses."""
    return json


SIGNATURES = [add, greet, described, nested, shadowing]


def _official_schemas() -> dict[str, dict[str, Any]]:
    from mcp.server.mcpserver import MCPServer

    official = MCPServer("compare")
    for fn in SIGNATURES:
        official.tool()(fn)

    async def listed() -> dict[str, dict[str, Any]]:
        return {t.name: t.input_schema for t in await official.list_tools()}

    return trio.run(listed)


OFFICIAL = _official_schemas()


@pytest.mark.parametrize("fn", SIGNATURES, ids=lambda fn: fn.__name__)
def test_the_input_schema_is_the_official_sdks(fn: Any) -> None:
    assert tool(fn).input_schema == OFFICIAL[fn.__name__]


# --- running them -------------------------------------------------------------------


def test_a_plain_tool_runs_with_its_arguments() -> None:
    assert run_scripted(tool(add), {"a": 2, "b": 3}, ScriptedPeer()) == 5
    assert run_scripted(tool(greet), {"name": "Ada"}, ScriptedPeer()) == "Hello, Ada"
    assert run_scripted(tool(shadowing), {"json": "j"}, ScriptedPeer()) == "j"


def test_annotated_fields_and_defaults_are_in_the_schema_and_enforced() -> None:
    schema = tool(described).input_schema
    assert schema["required"] == ["city"]
    days = schema["properties"]["days"]
    assert (days["default"], days["minimum"], days["maximum"]) == (3, 1, 10)
    assert days["description"] == "How many days"
    with pytest.raises(InvalidArguments) as info:
        tool(described).check_arguments({"city": "Rome", "days": 11})
    assert info.value.problems == ("days: Input should be less than or equal to 10",)


@tool
def ctx_first(ctx: Context, topic: str, n: int = 1) -> Op[str]:
    yield ctx.log("info", topic)
    return topic * n


@tool
def ctx_between(topic: str, ctx: Context, n: int = 1) -> Op[str]:
    yield ctx.log("info", topic)
    return topic * n


@tool
def ctx_keyword(topic: str, /, n: int = 1, *, ctx: Context | None = None) -> Op[str]:
    assert ctx is not None
    yield ctx.log("info", topic)
    return topic * n


@pytest.mark.parametrize("t", [ctx_first, ctx_between, ctx_keyword], ids=repr)
def test_the_context_is_found_by_its_annotation_wherever_it_stands(t: Any) -> None:
    assert set(t.input_schema["properties"]) == {"topic", "n"}
    assert run_scripted(t, {"topic": "ab", "n": 2}, ScriptedPeer()) == "abab"


def test_an_unannotated_parameter_named_ctx_is_the_context() -> None:
    @tool
    def shout(word: str, ctx) -> Op[str]:  # type: ignore[no-untyped-def]
        yield ctx.log("info", word)
        return word.upper()

    assert set(shout.input_schema["properties"]) == {"word"}
    assert run_scripted(shout, {"word": "hi"}, ScriptedPeer()) == "HI"


def test_an_unannotated_parameter_takes_any_value() -> None:
    @tool
    def echo(value) -> Any:  # type: ignore[no-untyped-def]
        return value

    assert run_scripted(echo, {"value": [1, "x"]}, ScriptedPeer()) == [1, "x"]


# --- a sole model parameter (issue 26, item 3) --------------------------------------


@tool
def look(where: Where) -> str:
    """One model, no ctx."""
    return where.city


def test_a_sole_model_parameter_is_the_params_model_without_ctx() -> None:
    assert look.params is Where
    assert look.input_schema == Where.model_json_schema()
    assert run_scripted(look, {"city": "Oslo"}, ScriptedPeer()) == "Oslo"


def test_the_model_form_with_ctx_first_is_read_too() -> None:
    @tool
    def look_again(ctx: Context, where: Where) -> Op[str]:
        yield ctx.log("info", where.city)
        return where.city

    assert look_again.params is Where
    assert run_scripted(look_again, {"city": "Oslo"}, ScriptedPeer()) == "Oslo"


# --- definition mistakes ------------------------------------------------------------


def test_variadic_parameters_are_refused() -> None:
    with pytest.raises(InvalidTool, match=r"\*\*rest cannot be described"):

        @tool
        def t(a: int, **rest: int) -> int:
            return a


def test_a_private_parameter_name_is_refused() -> None:
    with pytest.raises(InvalidTool, match="'_a' starts with '_'"):

        @tool
        def t(_a: int) -> int:
            return _a


def test_two_context_parameters_are_refused() -> None:
    with pytest.raises(InvalidTool, match="only one parameter may be the Context"):

        @tool
        def t(a: Context, b: Context) -> int:
            return 1

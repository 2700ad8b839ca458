"""What a client reads when a tool fails: plain sentences, never a Python
class name at the start (``CapabilityError: the client did not declare…``).

The text of an ``isError`` result is read by the client's model, and a
prompt's failure is a JSON-RPC error with the same text
(:mod:`bridge.server.failures`). Our client, our server, both eras.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import inspect
import re
import sys
from collections.abc import AsyncIterator, Mapping
from typing import Any

import pydantic
import pytest
import trio

import runtime.errors
from bridge.client import Client
from bridge.server import Server, resource, resource_template
from bridge.transports.memory import memory_pair
from runtime import Context, Op, Text, ToolSpec, tool
from runtime.errors import PeerError, exits_the_call_only
from runtime.lowlevel import SampleReply, SamplingRequest

ERAS = ["legacy", "2026-07-28"]


class Tip(pydantic.BaseModel):
    tip: str


@tool
def asks(ctx: Context) -> Op[str]:
    """Samples: a client without sampling cannot answer."""
    reply = yield from ctx.sample("hello")
    return reply.text


@tool
def with_context(ctx: Context) -> Op[str]:
    """Asks for the server's context in the prompt."""
    reply = yield from ctx.sample("hello", include_context="thisServer")
    return reply.text


@tool
def misuses(ctx: Context) -> Op[str]:
    """A tool bug yieldmcp catches: schema and tools at once."""
    spec = ToolSpec(
        name="lookup", description="Look up", input_schema={"type": "object"}
    )
    reply = yield from ctx.sample("hello", schema=Tip, tools=[spec])
    return reply.text


@tool
def validates() -> str:
    """A pydantic model refuses what the tool built."""
    return Tip.model_validate({"tip": 3}).tip


@tool
def crashes() -> str:
    """Anything else: internal."""
    raise RuntimeError("db connect failed: password=hunter2")


class Thing:
    """No JSON form: not a model, a dataclass or plain data."""


@tool
def returns_a_thing():  # no annotation: what it returns is checked when sent
    """Returns a value that cannot be sent."""
    return {"thing": Thing()}


@tool
def elicits_a_dict(ctx: Context) -> Op[str]:
    """Asks with a dict where a form's key goes (another framework's habit)."""
    answer = yield from ctx.elicit({"ok": bool}, "OK?")  # type: ignore[call-overload]
    return str(answer)


class OwnBase(BaseException):
    """A tool's own BaseException (not an Exception)."""


@tool
def exits(how: str, ctx: Context) -> Op[str]:
    """Raises a BaseException that is no Exception, as a library may."""
    yield ctx.log("info", "about to go")
    if how == "exit":
        sys.exit(3)
    if how == "generator-exit":
        raise GeneratorExit("closed")
    if how == "asyncio":
        raise asyncio.CancelledError()
    raise OwnBase("own")


@tool
def exits_at_once() -> str:
    """A plain tool calling sys.exit."""
    sys.exit("bye")


@tool
def exits_in_a_step(ctx: Context) -> Op[str]:
    """A step calling sys.exit."""

    def leave() -> str:
        sys.exit(4)

    return (yield from ctx.step(leave))


@tool
async def exits_async() -> str:
    """An async tool calling sys.exit."""
    sys.exit(5)


@tool
def exits_in_a_branch(ctx: Context) -> Op[list[str]]:
    """A branch child calling sys.exit."""

    def child(c: Context) -> Op[str]:
        yield c.log("info", "child")
        sys.exit(6)

    return (yield from ctx.branch(child))


EXITING = [exits, exits_at_once, exits_in_a_step, exits_async, exits_in_a_branch]


@resource("test://exits", name="exits", mime_type="text/plain")
def exiting_resource() -> str:
    sys.exit(7)


@resource_template("test://exits/{how}", name="exits-how", mime_type="text/plain")
def exiting_template(variables: Mapping[str, str]) -> str:
    if variables["how"] == "generator-exit":
        raise GeneratorExit
    raise OwnBase("own")


def _exception_names() -> set[str]:
    found = {
        name
        for module in (runtime.errors, builtins, pydantic)
        for name, value in vars(module).items()
        if inspect.isclass(value) and issubclass(value, BaseException)
    }
    return found | {"Tip", "SampleValidationError", "ValidationError"}


EXCEPTION_NAMES = _exception_names()


def _starts_with_a_class_name(text: str) -> bool:
    first = re.match(r"[A-Za-z_][A-Za-z0-9_]*", text)
    return first is not None and first.group() in EXCEPTION_NAMES


@contextlib.asynccontextmanager
async def in_memory(
    era: str, sampler: Any = None, **server: Any
) -> AsyncIterator[Client]:
    server_end, client_end = memory_pair()
    tools = [asks, with_context, misuses, validates, crashes]
    items = [*tools, returns_a_thing, elicits_a_dict, *EXITING]
    serving = Server([*items, exiting_resource, exiting_template], **server)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(serving.serve, server_end)
        async with Client.connect(client_end, era=era, sampler=sampler) as client:  # type: ignore[arg-type]
            yield client
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("debug", [False, True])
async def test_no_failure_text_starts_with_a_class_name(era: str, debug: bool) -> None:
    texts: dict[str, str] = {}
    refused: dict[str, str] = {}
    async with in_memory(era, debug=debug) as client:
        for name in ("asks", "misuses", "validates", "crashes"):
            try:
                result = await client.call_tool(name)
            except PeerError as exc:  # 2026-07-28: a missing capability, -32021
                refused[name] = exc.message
            else:
                assert result.is_error, (name, result)
                texts[name] = result.text
    for name, text in {**texts, **refused}.items():
        assert not _starts_with_a_class_name(text), (name, text)
    if era == "legacy":
        assert texts["asks"].startswith("The client did not declare the sampling")
    else:
        assert refused["asks"].startswith("the client did not declare the sampling")
    # A name or a prefix naming what failed keeps its case.
    assert texts["misuses"].startswith("sample: `schema` and `tools` are mutually")
    assert texts["validates"] == "Validation failed for Tip: tip"
    assert texts["crashes"].startswith("The tool failed")
    assert "password" not in texts["crashes"] or debug


@pytest.mark.parametrize("era", ERAS)
async def test_debug_still_names_the_exception(era: str) -> None:
    async with in_memory(era, debug=True) as client:
        result = await client.call_tool("crashes")
    assert "RuntimeError" in result.text
    assert "db connect failed" in result.text


@pytest.mark.parametrize("era", ERAS)
async def test_a_value_with_no_json_form_tells_the_client_its_type(era: str) -> None:
    # Was, in 2026-07-28, a bare JSON-RPC "Internal error (-32603)".
    async with in_memory(era) as client:
        result = await client.call_tool("returns_a_thing")
    assert result.is_error
    assert "returned a dict" in result.text
    assert "Thing" in result.text
    assert "has no JSON form" in result.text
    assert "\n" not in result.text


@pytest.mark.parametrize("era", ERAS)
async def test_eliciting_with_a_dict_says_what_elicit_takes(era: str) -> None:
    # Was "unhashable type: 'dict'", as an internal error.
    async with in_memory(era) as client:
        result = await client.call_tool("elicits_a_dict")
    assert result.is_error
    assert result.text.startswith("elicit: takes an ElicitKey")
    assert "elicits=" in result.text


@pytest.mark.parametrize("era", ERAS)
async def test_a_tool_raising_system_exit_fails_its_call_and_the_server_goes_on(
    era: str,
) -> None:
    # SystemExit (a library's sys.exit()), GeneratorExit, asyncio's
    # CancelledError or a tool's own BaseException ended the whole server:
    # every client's calls with it.
    calls = [("exits", {"how": how}) for how in ("exit", "generator-exit")]
    calls += [("exits", {"how": "asyncio"}), ("exits", {"how": "own"})]
    calls += [(t.name, {}) for t in EXITING[1:]]
    async with in_memory(era) as client:
        for name, arguments in calls:
            result = await client.call_tool(name, arguments)
            assert result.is_error, (name, arguments)
            assert result.text.startswith("The tool failed with an internal error")
        for uri in ("test://exits", "test://exits/generator-exit", "test://exits/own"):
            with pytest.raises(PeerError) as failed:  # (the read fails, -32603)
                await client.request("resources/read", {"uri": uri})
            assert failed.value.code == -32603, uri
        assert (await client.call_tool("validates")).text == (
            "Validation failed for Tip: tip"
        )


def test_ctrl_c_in_a_tool_still_stops_what_it_stops() -> None:
    assert not exits_the_call_only(KeyboardInterrupt())
    assert exits_the_call_only(SystemExit(1))
    assert not exits_the_call_only(BaseExceptionGroup("g", [SystemExit(1)]))


class Echo:
    """A model that answers every sample (and declares sampling, no context)."""

    async def complete(self, request: SamplingRequest) -> SampleReply:
        return SampleReply(content=(Text("hi"),), model="echo")


async def test_include_context_needs_sampling_context_as_the_docs_say() -> None:
    # docs/effects.md: "include_context other than "none" is sent only to a
    # client that declares sampling.context".
    async with in_memory("legacy", sampler=Echo()) as client:
        legacy = await client.call_tool("with_context")
    assert legacy.is_error
    assert legacy.text == (
        "include_context needs the client's sampling.context capability"
    )
    async with in_memory("2026-07-28", sampler=Echo()) as client:
        with pytest.raises(PeerError) as refused:
            await client.call_tool("with_context")
    assert refused.value.code == -32021
    assert refused.value.data == {"requiredCapabilities": {"sampling": {"context": {}}}}


def test_a_store_failure_tells_the_client_no_address_and_logs_one_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A store's errors name it: a 2025-11-25 call on a store that refused
    # connections told the client "Cannot reach postgresql://postgres@
    # 10.0.0.7:5433/calls: connection failed", internals an MCP client
    # should not see.
    import logging

    from bridge.durable import StoreUnavailable
    from bridge.server.failures import tool_failure

    failed = StoreUnavailable("cannot reach postgresql://postgres@10.0.0.7:5433/calls")
    with caplog.at_level(logging.INFO, logger="yieldmcp"):
        text = tool_failure("book", failed)
    assert re.fullmatch(
        r"The server's store failed \(error id [0-9a-f]{12}\); try again later\.",
        text,
    ), text
    error_id = text.split("error id ")[1][:12]
    [record] = caplog.records
    assert record.levelname == "WARNING"
    assert record.exc_info is None  # an outage: one line, no traceback
    assert record.getMessage() == (
        f"tool book: cannot reach postgresql://postgres@10.0.0.7:5433/calls "
        f"(error id {error_id})"
    )

"""Our client against a stdio server that abuses it (``hostile_stdio.py``):
each abuse ends in one clear error, or is bounded, never a traceback, a hang
or the client's memory filled.

* a 2026-07-28 question whose params are not an object, in a call's round or
  a followed task's (:mod:`bridge.client._rounds`);
* ``tools/list`` pages whose cursors are as large as a message, without end
  (:mod:`bridge.client.pages`);
* an ``outputSchema`` jsonschema-rs cannot compile, with a ``pattern`` that
  is exponential in a backtracking engine (:mod:`bridge.client.output_schemas`);
* log notices whose ``level`` is not a string (:mod:`bridge.client.answers`).
"""

from __future__ import annotations

import logging
import sys

import pytest
import trio

from bridge.client import connect
from bridge.elicit import Always
from runtime.errors import PeerError, RemoteProtocolError
from tests.helpers import ROOT

HOSTILE = [sys.executable, str(ROOT / "tests/bridge/client/hostile_stdio.py")]


@pytest.mark.parametrize("task", [False, True], ids=["round", "task"])
async def test_a_question_whose_params_are_not_an_object_is_a_protocol_error(
    task: bool,
) -> None:
    # It was a TypeError (dict() of a list) and a 64-line traceback.
    scenario = "task-params" if task else "params"
    with trio.fail_after(30):
        async with connect(
            [*HOSTILE, "modern", scenario],
            era="2026-07-28",
            elicitation=Always("cancel"),
        ) as client:
            with pytest.raises(RemoteProtocolError) as caught:
                await client.call_tool("t", task=task)
    assert str(caught.value) == (
        "inputRequests['k'] is malformed: params must be an object"
    )


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
async def test_cursors_count_in_the_listing_and_are_not_kept(
    era: str, caplog: pytest.LogCaptureFixture
) -> None:
    # Empty pages with a new 256 KiB cursor each: the old client read all
    # 100 pages and kept every cursor (8 MB ones: 0.9 GB), whatever
    # max_listing said.
    wire = "modern" if era != "legacy" else "legacy"
    command = [*HOSTILE, wire, "cursors", str(256 * 1024)]
    with trio.fail_after(60):
        async with connect(
            command, era=era, max_listing=1024 * 1024, validate_output=False
        ) as client:  # type: ignore[arg-type]
            assert await client.list_tools() == []
            read = (await client.call_tool("count")).text
    assert read == "4"  # the fourth page's cursor passes 1 MiB: not followed
    assert "its pages take more than 1048576 characters" in caplog.text


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
async def test_a_schema_the_fast_validator_cannot_compile_is_not_checked(
    era: str, caplog: pytest.LogCaptureFixture
) -> None:
    # jsonschema-rs cannot compile a $ref elsewhere; the client then checked
    # with Python's jsonschema, whose re backtracks: 29 a's took 35-58 s on
    # the event loop (no --timeout, no Ctrl-C). A short string shows which
    # engine ran: re rejected it, the client now checks nothing, and says so.
    wire = "modern" if era != "legacy" else "legacy"
    caplog.set_level(logging.WARNING, "yieldmcp.client")
    with trio.fail_after(30):
        async with connect([*HOSTILE, wire, "redos", "12"], era=era) as client:  # type: ignore[arg-type]
            result = await client.call_tool("t")
    assert result.structured_content == {"a": "a" * 12 + "!"}
    warned = [r.getMessage() for r in caplog.records if "outputSchema" in r.message]
    assert len(warned) == 1
    assert warned[0].startswith(
        "tool 't': the client cannot check results against its outputSchema "
        "(\"Resource 'https://example.invalid/schema.json' is not present"
    )
    assert warned[0].endswith("; they are accepted unchecked")


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
async def test_log_notices_not_of_the_specs_shape_are_not_shown(era: str) -> None:
    # A level of 5 (or null, an object, a list) reached the CLI's display,
    # whose printable_line raised TypeError: the call failed with an
    # 83-line traceback, on one notification.
    wire = "modern" if era != "legacy" else "legacy"
    logged: list[tuple[str, object, str | None]] = []
    with trio.fail_after(30):
        async with connect(
            [*HOSTILE, wire, "loglevels"],
            era=era,  # type: ignore[arg-type]
            on_log=lambda level, data, logger: logged.append((level, data, logger)),
        ) as client:
            result = await client.call_tool("t")
    assert not result.is_error
    assert logged == [("warning", "d", "l")]


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
@pytest.mark.parametrize("depth", [300, 5000], ids=["id-read", "id-lost"])
async def test_a_reply_nested_past_the_parser_fails_its_call_at_once(
    era: str, depth: int
) -> None:
    # Valid JSON past pydantic_core's 200 levels: the client warned "not
    # valid JSON" and the call waited for ever. Python's json finds the id
    # (300); past its reach too (5000), every request waiting fails.
    wire = "modern" if era != "legacy" else "legacy"
    with trio.fail_after(20):
        async with connect([*HOSTILE, wire, "deep", str(depth)], era=era) as client:
            with pytest.raises(RemoteProtocolError) as caught:
                await client.call_tool("t")
    if depth == 300:
        assert str(caught.value) == (
            "the reply cannot be read: a response nested deeper than 200 "
            "levels, the most a message may"
        )
    else:
        assert str(caught.value) == (
            "the peer sent a message that cannot be read, perhaps the reply "
            "(Parse error: JSON nested deeper than 200 levels, the most a "
            "message may; its id cannot be found either)"
        )


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
async def test_an_error_naming_no_request_fails_the_call_waiting(era: str) -> None:
    # -32700 with no id: the server could not read the request, nor its id.
    # The call waited for ever.
    wire = "modern" if era != "legacy" else "legacy"
    with trio.fail_after(20):
        async with connect([*HOSTILE, wire, "unnamed"], era=era) as client:
            with pytest.raises(PeerError) as caught:
                await client.call_tool("t")
    assert caught.value.code == -32700
    assert caught.value.message == (
        "Parse error (an error naming no request: the peer could not read a "
        "message sent to it, perhaps this request)"
    )


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
@pytest.mark.parametrize(
    ("how", "why"),
    [
        (0, "a response with both result and error"),
        (1, "a response with a malformed error object"),
        (2, 'a response with jsonrpc other than "2.0"'),
        (
            3,
            "Invalid request: a message needs a method, or a result or an error",
        ),
        (5, "a result without an int or string id"),
    ],
)
async def test_a_reply_that_cannot_be_used_fails_its_call_at_once(
    era: str, how: int, why: str
) -> None:
    # It named its request (or no request at all) and was dropped: the call
    # waited for ever.
    wire = "modern" if era != "legacy" else "legacy"
    with trio.fail_after(20):
        async with connect([*HOSTILE, wire, "malformed", str(how)], era=era) as client:
            with pytest.raises(RemoteProtocolError) as caught:
                await client.call_tool("t")
    said = str(caught.value)
    if how == 5:
        assert said == (
            "the peer sent a reply that cannot be matched to a request, perhaps "
            f"this one's: {why}"
        )
    else:
        assert said == f"the reply cannot be read: {why}"


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
async def test_a_reply_whose_id_is_a_float_of_the_same_number_is_used(
    era: str,
) -> None:
    wire = "modern" if era != "legacy" else "legacy"
    with trio.fail_after(20):
        async with connect([*HOSTILE, wire, "malformed", "4"], era=era) as client:
            result = await client.call_tool("t")
    assert result.text == "x"

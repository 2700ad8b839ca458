"""Our client checks a tool's ``structuredContent`` against its ``outputSchema``.

The server is a real stdio process that lies (``tests/fixtures/lying_server.py``):
raw JSON-RPC, so nothing but our client stands between its answers and the
caller. Every case runs in both eras.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import AsyncIterator

import pytest
import trio

from bridge.client import Client, InvalidStructuredContent, connect
from runtime.errors import RemoteProtocolError
from tests.helpers import ROOT

ERAS = ["legacy", "2026-07-28"]
LIAR = [sys.executable, str(ROOT / "tests/fixtures/lying_server.py")]


@pytest.fixture(params=ERAS)
async def liar(request: pytest.FixtureRequest) -> AsyncIterator[Client]:
    with trio.fail_after(60):
        async with connect(LIAR, era=request.param) as client:
            yield client


async def test_a_result_that_breaks_the_schema_is_refused_naming_the_field(
    liar: Client,
) -> None:
    with pytest.raises(InvalidStructuredContent) as caught:
        await liar.call_tool("weather")
    message = str(caught.value)
    assert "'weather'" in message
    assert 'temp: "not a number" is not of type "integer"' in message
    assert (caught.value.tool, caught.value.field) == ("weather", "temp")
    assert isinstance(caught.value, RemoteProtocolError)  # what it was before


async def test_the_field_is_named_by_its_path(liar: Client) -> None:
    with pytest.raises(InvalidStructuredContent) as caught:
        await liar.call_tool("forecast")
    assert 'days/1: "high" is a required property' in str(caught.value)
    assert caught.value.field == "days/1"


async def test_a_declared_schema_with_no_structured_content_is_refused(
    liar: Client,
) -> None:
    # The tool is on the second page of tools/list: the client follows it.
    with pytest.raises(InvalidStructuredContent) as caught:
        await liar.call_tool("silent")
    assert "no structuredContent" in str(caught.value)


async def test_results_that_keep_their_promise_pass(liar: Client) -> None:
    honest = await liar.call_tool("honest")
    assert honest.structured_content == {"temp": 21}
    untyped = await liar.call_tool("untyped")  # no schema: nothing to check
    assert untyped.structured_content == {"anything": ["goes"]}


async def test_the_schemas_are_fetched_once_per_connection(liar: Client) -> None:
    first = await liar.call_tool("honest")
    again = await liar.call_tool("honest")
    # One tools/list (the first page holds the tool) before the first call,
    # none after: the second call used what the first fetched.
    assert (first.text, again.text) == ("lists: 1", "lists: 1")


async def test_a_changed_list_is_fetched_again(liar: Client) -> None:
    before = await liar.call_tool("honest")
    await liar.call_tool("renew")  # on page 2: two more tools/list
    after = await liar.call_tool("honest")  # renew said the list changed
    assert (before.text, after.text) == ("lists: 1", "lists: 4")


async def test_a_tool_changed_since_it_was_listed_is_checked_against_its_new_schema(
    liar: Client,
) -> None:
    """A reloaded server's tool, listed before it changed: its result is
    checked against the schema read again, not refused by the stale one."""
    await liar.list_tools()  # reshape promises an integer here
    reshaped = await liar.call_tool("reshape")
    assert reshaped.structured_content == {"temp": "warm"}
    # A result that breaks the schema read again is still refused.
    with pytest.raises(InvalidStructuredContent):
        await liar.call_tool("weather")


async def test_list_tools_reads_every_page_and_fills_the_cache(liar: Client) -> None:
    # It read the first page only: four of the seven tools were missing
    # from `yieldmcp call SERVER`, and from did-you-mean.
    names = [tool["name"] for tool in await liar.list_tools()]
    assert names == [
        "weather", "forecast", "honest", "silent", "untyped", "renew", "reshape",
    ]  # fmt: skip
    called = await liar.call_tool("honest")
    assert called.text == "lists: 3"  # its three pages, and none for the call


@pytest.mark.parametrize("era", ERAS)
async def test_the_check_can_be_turned_off(era: str) -> None:
    with trio.fail_after(60):
        async with connect(LIAR, era=era, validate_output=False) as client:  # type: ignore[arg-type]
            result = await client.call_tool("weather")
            honest = await client.call_tool("honest")
    assert result.structured_content == {"temp": "not a number"}
    assert honest.text == "lists: 0"  # and no tools/list is asked for it


async def test_a_schema_that_refers_elsewhere_is_never_fetched_and_checks_nothing() -> (
    None
):
    # A hostile server's outputSchema points at a URL (here a loopback
    # listener that counts who connects): the client fetches nothing, and a
    # schema it cannot resolve checks nothing, like an invalid one, instead
    # of failing the call with the resolver's own exception.
    connected: list[object] = []

    async def count(stream: trio.SocketStream) -> None:
        connected.append(stream)
        await stream.aclose()

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            functools.partial(trio.serve_tcp, count, 0, host="127.0.0.1")
        )
        port = listeners[0].socket.getsockname()[1]
        url = f"http://127.0.0.1:{port}/schema.json"
        for era in ERAS:
            with trio.fail_after(60):
                async with connect([*LIAR, "--remote-ref", url], era=era) as client:
                    result = await client.call_tool("remote")
            assert result.structured_content == {"whatever": 1}
        await trio.sleep(0.2)  # time for a fetch to arrive, were one made
        nursery.cancel_scope.cancel()
    assert connected == []


async def test_a_server_listing_new_tools_each_time_fills_no_memory() -> None:
    # Each call to a tool the client has not seen reads tools/list again; a
    # server that names new tools in every read, in endless pages, could
    # make the client keep them all. Only the last (bounded) read is kept.
    from bridge.client.output_schemas import OutputSchemas

    reads = 0

    async def request(method: str, params: object) -> dict[str, object]:
        nonlocal reads
        reads += 1
        tools = [{"name": f"t{reads}-{i}", "outputSchema": {}} for i in range(50)]
        return {"tools": tools, "nextCursor": f"c{reads}"}

    schemas = OutputSchemas(max_listing=20_000)
    for name in ("a", "b", "c"):
        before = reads
        await schemas.fetch(name, request)
    kept = schemas._schemas  # pyright: ignore[reportPrivateUsage]
    assert 0 < len(kept) <= 20_000 // len('{"name":"t1-1","outputSchema":{}}')
    assert all(int(name[1:].split("-")[0]) > before for name in kept)
    assert not schemas.complete


@pytest.mark.parametrize(
    ("schema", "value", "problem"),
    [
        (  # exponential in a backtracking regex engine (Python's re)
            {"type": "object", "properties": {"s": {"pattern": "^(a+)+$"}}},
            {"s": "a" * 60 + "!"},
            ("s", f'"{"a" * 60}!" does not match "^(a+)+$"'),
        ),
        (  # quadratic in Python's jsonschema: minutes for 50,000 items
            {
                "type": "object",
                "properties": {
                    "xs": {"uniqueItems": True},
                    "bad": {"type": "integer"},
                },
            },
            {"xs": [{"k": i} for i in range(50_000)], "bad": "x"},
            ("bad", '"x" is not of type "integer"'),
        ),
    ],
    ids=["catastrophic-pattern", "unique-items"],
)
def test_a_servers_schema_cannot_hold_the_check_for_long(
    schema: dict[str, object], value: object, problem: tuple[str, str]
) -> None:
    # The server picks both the schema and the value. The check ran on the
    # event loop in Python's jsonschema, where --timeout could not end it
    # (the pattern with 28 a's took 23.8 s; 60 would take centuries).
    from bridge.client.output_schemas import structured_problem

    assert structured_problem(schema, value) == problem


def test_a_value_too_deep_to_describe_is_judged_by_the_fast_validator() -> None:
    # jsonschema-rs cannot describe an error in a value nested 300 deep; the
    # client then checked with Python's jsonschema, whose re backtracks (40
    # a's: for ever, on the event loop). Its answer now comes from
    # jsonschema-rs, which says whether the value is valid, naming no field.
    from bridge.client.output_schemas import structured_problem

    deep: list[object] = []
    for _ in range(300):
        deep = [deep]
    schema = {
        "type": "object",
        "properties": {"deep": {"type": "object"}, "s": {"pattern": "^(a+)+$"}},
    }
    problem = structured_problem(schema, {"deep": deep, "s": "a" * 12 + "!"})
    assert problem == (
        "<root>",
        "it breaks the schema somewhere nested too deep to name",
    )
    schema["properties"]["deep"] = {"type": "array"}  # pyright: ignore[reportIndexIssue]
    assert structured_problem(schema, {"deep": deep, "s": "aa"}) is None

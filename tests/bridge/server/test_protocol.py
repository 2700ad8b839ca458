"""The 2025-11-25 server on the wire: raw JSON-RPC frames in, raw frames out.

Each test talks to a real :class:`~bridge.server.Server` over a memory pipe
whose client end is not a session: the test writes the frames a client would
write and reads exactly what the server sent, so what is asserted is the wire.
``tasks=True`` runs the same server over a transport that cannot send without
waiting, so calls run in tasks (:class:`~bridge.server.live.LiveExecutor`) instead of
parking as records (:mod:`bridge.server.calls.live`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
from collections.abc import AsyncIterator, Mapping
from typing import Any

import pytest
import trio
import trio.testing

from bridge.jsonrpc import Message, RequestId
from bridge.jsonrpc.session import Session
from bridge.server import Server
from bridge.transports.memory import MemoryTransport, memory_pair
from runtime import Context, tool
from runtime.errors import InvalidTool, ToolError, UrlElicitationRequired
from tests.fixtures import protocol_tools as tools
from tests.mcp_schema import validate, validate_message

ERA = "2025-11-25"
ALL_CAPS: dict[str, Any] = {
    "sampling": {"tools": {}},
    "elicitation": {"form": {}, "url": {}},
    "roots": {},
}
TEXT_ANSWER = {
    "role": "assistant",
    "content": {"type": "text", "text": "an answer"},
    "model": "m",
    "stopReason": "endTurn",
}

Frame = dict[str, Any]


def _server() -> Server:
    return Server(
        [
            tools.levels,
            tools.counts,
            tools.asks,
            tools.uses_tools,
            tools.forecast,
            tools.asks_name,
            tools.connects,
            tools.needs_connection,
            tools.fails,
            tools.waits,
        ]
    )


class _Tasked:
    """The server's end of the pipe without ``send_nowait``: a receive loop, and
    every call in a task of its own."""

    def __init__(self, end: MemoryTransport) -> None:
        self._end = end

    async def receive(self) -> bytes:
        return await self._end.receive()

    async def send(self, message: Message, *, related: RequestId | None = None) -> None:
        await self._end.send(message, related=related)


class Raw:
    """The client end of a connection, written and read as JSON frames."""

    def __init__(
        self, end: MemoryTransport, server_end: MemoryTransport, session: Session
    ) -> None:
        self.end = end
        self.server_end = server_end
        self.session = session  # the server's session (to ping the client)

    async def send(self, frame: Frame) -> None:
        await self.end.send_raw(json.dumps(frame).encode())

    async def request(
        self, request_id: Any, method: str, params: Mapping[str, Any] | None = None
    ) -> None:
        frame: Frame = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            frame["params"] = dict(params)
        await self.send(frame)

    async def notify(
        self, method: str, params: Mapping[str, Any] | None = None
    ) -> None:
        frame: Frame = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            frame["params"] = dict(params)
        await self.send(frame)

    async def respond(self, request_id: Any, result: Any) -> None:
        await self.send({"jsonrpc": "2.0", "id": request_id, "result": result})

    async def next(self) -> Frame:
        """The next frame the server sent."""
        with trio.fail_after(5):
            return json.loads(await self.end.receive())

    async def reply_to(self, request_id: Any) -> tuple[Frame, list[Frame]]:
        """The response to our request ``request_id``, and the frames before it."""
        before: list[Frame] = []
        while True:
            frame = await self.next()
            if "method" not in frame and frame.get("id") == request_id:
                return frame, before
            before.append(frame)

    async def call(
        self, request_id: Any, method: str, params: Mapping[str, Any] | None = None
    ) -> tuple[Frame, list[Frame]]:
        await self.request(request_id, method, params)
        return await self.reply_to(request_id)

    async def initialize(self, capabilities: Mapping[str, Any]) -> Frame:
        reply, before = await self.call(
            "init",
            "initialize",
            {
                "protocolVersion": ERA,
                "capabilities": dict(capabilities),
                "clientInfo": {"name": "raw", "version": "1"},
            },
        )
        assert before == []
        await self.notify("notifications/initialized")
        return reply

    async def quiet(self) -> None:
        """Assert the server has sent nothing more (once everything settled)."""
        await trio.testing.wait_all_tasks_blocked()
        with pytest.raises(trio.TooSlowError), trio.fail_after(0.01):
            await self.end.receive()

    def sent(self) -> list[Frame]:
        """Every frame the server sent so far."""
        return [json.loads(f) for f in self.server_end.sent]


@contextlib.asynccontextmanager
async def connect(
    server: Server | None = None,
    capabilities: Mapping[str, Any] | None = None,
    *,
    tasks: bool = False,
) -> AsyncIterator[Raw]:
    """A raw client connected to ``server`` (initialized if ``capabilities``)."""
    server_end, client_end = memory_pair()
    server_end.record = True
    transport = _Tasked(server_end) if tasks else server_end
    session = Session(transport, (server or _server()).connection())
    async with trio.open_nursery() as nursery:
        await nursery.start(session.run)
        raw = Raw(client_end, server_end, session)
        if capabilities is not None:
            await raw.initialize(capabilities)
        try:
            yield raw
        finally:
            await client_end.aclose()
            nursery.cancel_scope.cancel()


def _call(name: str, arguments: Mapping[str, Any] | None = None, **meta: Any) -> Frame:
    params: Frame = {"name": name, "arguments": dict(arguments or {})}
    if meta:
        params["_meta"] = meta
    return params


def _text(reply: Frame) -> str:
    assert "result" in reply, reply
    content = reply["result"]["content"]
    assert len(content) == 1
    assert content[0]["type"] == "text"
    return content[0]["text"]


def _tool_error(reply: Frame) -> str:
    assert reply["result"].get("isError") is True, reply
    return _text(reply)


both_paths = pytest.mark.parametrize("tasks", [False, True], ids=["parked", "tasks"])


# --- 1. JSON-RPC ids -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("call_id", "cancel_id"),
    [(7, "7"), (0, "0"), ("7", 7)],
    ids=["string-cancels-int", "string-zero-cancels-zero", "int-cancels-string"],
)
@both_paths
async def test_a_cancellation_matches_the_id_however_it_is_spelled(
    call_id: RequestId, cancel_id: RequestId, tasks: bool
) -> None:
    async with connect(capabilities=ALL_CAPS, tasks=tasks) as raw:
        await raw.request(call_id, "tools/call", _call("waits"))
        sample = await raw.next()
        assert sample["method"] == "sampling/createMessage"
        await raw.notify(
            "notifications/cancelled", {"requestId": cancel_id, "reason": "stop"}
        )
        withdrawn = await raw.next()  # the server withdraws its own question
        assert withdrawn["method"] == "notifications/cancelled"
        assert withdrawn["params"]["requestId"] == sample["id"]
        reply, before = await raw.call(99, "ping")
        assert reply["result"] == {}
        assert before == []  # and the cancelled call got no response
        await raw.quiet()
        assert raw.session.in_flight == 0


@both_paths
async def test_a_string_response_id_settles_our_int_request(tasks: bool) -> None:
    async with connect(capabilities=ALL_CAPS, tasks=tasks) as raw:
        await raw.request(1, "tools/call", _call("asks", {"prompt": "hi"}))
        sample = await raw.next()
        assert isinstance(sample["id"], int)
        await raw.respond(str(sample["id"]), TEXT_ANSWER)
        reply, before = await raw.reply_to(1)
        assert before == []
        assert _text(reply) == "an answer"


@pytest.mark.parametrize("bad_id", [True, False])
async def test_a_boolean_request_id_is_an_invalid_request(bad_id: bool) -> None:
    async with connect(capabilities=ALL_CAPS) as raw:
        await raw.request(bad_id, "ping")
        reply = await raw.next()
        assert reply["error"]["code"] == -32600
        # The rule in bridge.jsonrpc: an id we cannot use is not echoed (MCP's
        # schema refuses a null id; it allows none).
        assert "id" not in reply
        validate_message(ERA, reply)
        await raw.quiet()


async def test_boolean_ids_never_alias_1_or_0() -> None:
    async with connect(capabilities=ALL_CAPS) as raw:
        await raw.request(1, "tools/call", _call("asks", {"prompt": "hi"}))
        sample = await raw.next()
        assert sample["id"] == 1  # our first request: true would alias it
        await raw.notify("notifications/cancelled", {"requestId": True})
        await raw.respond(True, TEXT_ANSWER)
        await raw.quiet()  # neither cancelled nor settled, and not answered
        assert raw.session.outstanding == [1]
        await raw.respond(1, TEXT_ANSWER)
        reply, _ = await raw.reply_to(1)
        assert _text(reply) == "an answer"


# --- 2. logging/setLevel -------------------------------------------------------------


def _logs(frames: list[Frame]) -> list[tuple[str, Any]]:
    return [
        (f["params"]["level"], f["params"]["data"])
        for f in frames
        if f.get("method") == "notifications/message"
    ]


@both_paths
async def test_set_level_error_sends_error_logs_only(tasks: bool) -> None:
    async with connect(capabilities=ALL_CAPS, tasks=tasks) as raw:
        reply, _ = await raw.call(1, "logging/setLevel", {"level": "error"})
        assert reply["result"] == {}
        reply, before = await raw.call(2, "tools/call", _call("levels"))
        assert _text(reply) == "logged"
        assert _logs(before) == [("error", "error line")]
        assert before[0]["params"]["logger"] == "protocol"


async def test_set_level_applies_to_the_call_sent_right_after_it() -> None:
    async with connect(capabilities=ALL_CAPS) as raw:
        # Pipelined, as a client may: the call does not wait for the reply.
        await raw.request(1, "logging/setLevel", {"level": "error"})
        await raw.request(2, "tools/call", _call("levels"))
        reply, before = await raw.reply_to(2)
        assert _logs(before) == [("error", "error line")]
        assert [f.get("id") for f in before if "method" not in f] == [1]
        assert _text(reply) == "logged"


@pytest.mark.parametrize("params", [{"level": "loud"}, {"level": 3}, {}])
async def test_a_bad_log_level_is_invalid_params(params: Frame) -> None:
    async with connect(capabilities=ALL_CAPS) as raw:
        reply, _ = await raw.call(1, "logging/setLevel", params)
        assert reply["error"]["code"] == -32602
        # and the level in force is unchanged: every level still goes out
        _, before = await raw.call(2, "tools/call", _call("levels"))
        assert [level for level, _ in _logs(before)] == ["debug", "info", "error"]


async def test_without_set_level_every_level_is_sent() -> None:
    """The documented default (``CallScope.log_level`` None): send every level."""
    async with connect(capabilities=ALL_CAPS) as raw:
        _, before = await raw.call(1, "tools/call", _call("levels"))
        assert _logs(before) == [
            ("debug", "debug line"),
            ("info", "info line"),
            ("error", "error line"),
        ]


# --- 3. capability refusals ----------------------------------------------------------


@both_paths
async def test_sampling_with_tools_needs_sampling_tools(tasks: bool) -> None:
    async with connect(capabilities={"sampling": {}}, tasks=tasks) as raw:
        reply, before = await raw.call(
            1, "tools/call", _call("uses_tools", {"prompt": "x"})
        )
        assert before == []  # no sampling request carried tools to this client
        assert "sampling.tools" in _tool_error(reply)


@both_paths
async def test_a_schema_sample_falls_back_to_an_instruction(tasks: bool) -> None:
    """Without sampling.tools, ``schema=`` asks for JSON in the system prompt."""
    async with connect(capabilities={"sampling": {}}, tasks=tasks) as raw:
        await raw.request(1, "tools/call", _call("forecast", {"prompt": "Oslo?"}))
        sample = await raw.next()
        assert sample["method"] == "sampling/createMessage"
        params = sample["params"]
        assert "tools" not in params
        assert "toolChoice" not in params
        assert '"celsius"' in params["systemPrompt"]
        validate_message(ERA, sample)
        answer = dict(
            TEXT_ANSWER,
            content={"type": "text", "text": '{"city": "Oslo", "celsius": 3}'},
        )
        await raw.respond(sample["id"], answer)
        reply, _ = await raw.reply_to(1)
        assert _text(reply) == "Oslo:3"


async def test_sampling_needs_the_sampling_capability() -> None:
    async with connect(capabilities={}) as raw:
        reply, before = await raw.call(1, "tools/call", _call("asks", {"prompt": "x"}))
        assert before == []
        assert "sampling capability" in _tool_error(reply)


@pytest.mark.parametrize(
    ("capabilities", "named"),
    [
        ({}, "elicitation capability"),
        ({"elicitation": {"url": {}}}, "elicitation.form"),
    ],
    ids=["no-elicitation", "url-only"],
)
@both_paths
async def test_a_form_needs_form_elicitation(
    capabilities: Frame, named: str, tasks: bool
) -> None:
    async with connect(capabilities=capabilities, tasks=tasks) as raw:
        reply, before = await raw.call(1, "tools/call", _call("asks_name"))
        assert before == []  # no elicitation/create in a mode it did not declare
        assert named in _tool_error(reply)


@pytest.mark.parametrize("elicitation", [{}, {"form": {}}])
async def test_a_form_goes_to_a_client_with_form_mode(elicitation: Frame) -> None:
    async with connect(capabilities={"elicitation": elicitation}) as raw:
        await raw.request(1, "tools/call", _call("asks_name"))
        ask = await raw.next()
        assert ask["method"] == "elicitation/create"
        assert ask["params"].get("mode", "form") == "form"
        await raw.respond(ask["id"], {"action": "accept", "content": {"name": "Ada"}})
        reply, _ = await raw.reply_to(1)
        assert _text(reply) == "Ada"


# --- 4. method and params errors, ping -----------------------------------------------


@pytest.mark.parametrize("method", ["tools/frobnicate", "sampling/createMessage"])
async def test_an_unknown_method_is_method_not_found(method: str) -> None:
    async with connect(capabilities=ALL_CAPS) as raw:
        reply, _ = await raw.call(1, method, {})
        assert reply["error"]["code"] == -32601
        assert reply["id"] == 1
        validate_message(ERA, reply)


@pytest.mark.parametrize(
    "params",
    [
        {"ref": {"type": "ref/prompt", "name": ["x"]}, "argument": {"name": "a"}},
        {"ref": {"type": "ref/resource", "uri": {}}, "argument": {"name": "a"}},
        {"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": 1}},
        {"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"value": 2}},
    ],
)
async def test_a_completion_with_a_non_string_name_is_invalid_params(
    params: Frame,
) -> None:
    async with connect(capabilities=ALL_CAPS) as raw:
        reply, _ = await raw.call(1, "completion/complete", params)
        assert reply["error"]["code"] == -32602
        validate_message(ERA, reply)


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"n": 99}, "n: Input should be less than or equal to 10"),
        ({"n": -1}, "n: Input should be greater than or equal to 0"),
        ({"n": "many"}, "n: Input should be a valid integer"),
        ({}, "n: Field required"),
    ],
)
@both_paths
async def test_arguments_failing_the_input_schema_are_a_tool_error(
    arguments: Frame, problem: str, tasks: bool
) -> None:
    # SEP-1303: the model that made the call reads what to fix.
    async with connect(capabilities=ALL_CAPS, tasks=tasks) as raw:
        listed, _ = await raw.call(1, "tools/list")
        schema = next(
            t["inputSchema"] for t in listed["result"]["tools"] if t["name"] == "counts"
        )
        assert schema["properties"]["n"]["maximum"] == 10
        reply, before = await raw.call(2, "tools/call", _call("counts", arguments))
        assert before == []
        text = _tool_error(reply)
        assert text.startswith("Invalid arguments for tool 'counts':\n")
        assert problem in text
        validate_message(ERA, reply, answering="tools/call")


@tool(
    input_schema={
        "type": "object",
        "properties": {"pin": {"type": "integer"}},
        "required": ["pin"],
    }
)
def unlocks(ctx: Context) -> str:
    return "open"


async def test_the_tool_error_quotes_bad_values_to_the_caller_and_not_to_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="yieldmcp")
    async with connect(Server([unlocks]), capabilities=ALL_CAPS) as raw:
        reply, _ = await raw.call(1, "tools/call", _call("unlocks", {"pin": "s3cret"}))
    assert _tool_error(reply) == (
        "Invalid arguments for tool 'unlocks':\npin: 's3cret' is not of type 'integer'"
    )
    assert "invalid arguments at pin" in caplog.text
    assert "s3cret" not in caplog.text


@pytest.mark.parametrize("arguments", [[1], "n=3", 7])
@both_paths
async def test_arguments_that_are_not_an_object_are_invalid_params(
    arguments: Any, tasks: bool
) -> None:
    async with connect(capabilities=ALL_CAPS, tasks=tasks) as raw:
        params = {"name": "counts", "arguments": arguments}
        reply, _ = await raw.call(1, "tools/call", params)
        assert reply["error"]["code"] == -32602
        validate_message(ERA, reply)


async def test_an_unknown_tool_is_invalid_params() -> None:
    async with connect(capabilities=ALL_CAPS) as raw:
        reply, _ = await raw.call(1, "tools/call", _call("nope"))
        assert reply["error"]["code"] == -32602
        assert reply["error"]["message"] == "Unknown tool: nope"


async def test_a_typod_tool_name_is_told_the_closest_tool() -> None:
    async with connect(capabilities=ALL_CAPS) as raw:
        reply, _ = await raw.call(1, "tools/call", _call("count"))
        assert reply["error"]["code"] == -32602
        assert reply["error"]["message"] == (
            "Unknown tool: count; did you mean counts?"
        )
        assert reply["error"]["data"] == {"name": "count"}
        validate_message(ERA, reply)


@tool
def answers_at_once(ctx: Context) -> str:
    return "at once"


@tool
def refuses_at_once(ctx: Context) -> str:
    raise ToolError("no such city")


@tool
def breaks_its_output_type(ctx: Context) -> int:
    return "not an int"  # type: ignore[return-value]


@tool
def asks_for_a_connection_at_once(ctx: Context) -> str:
    flow = ctx.elicit_url("Connect", tools.CONNECT_URL, elicitation_id="f")
    raise UrlElicitationRequired([flow], "Connect first.")


PLAIN_TOOLS = [
    answers_at_once,
    refuses_at_once,
    breaks_its_output_type,
    asks_for_a_connection_at_once,
]


@pytest.mark.parametrize("name", [t.name for t in PLAIN_TOOLS])
async def test_a_plain_tool_is_answered_alike_whether_calls_park_or_run_in_tasks(
    name: str,
) -> None:
    # A parked session answers a plain function's call at once, with no call
    # record; a session that runs calls in tasks goes through the driver.
    replies: list[Frame] = []
    for tasks in (False, True):
        async with connect(Server(PLAIN_TOOLS), ALL_CAPS, tasks=tasks) as raw:
            reply, before = await raw.call(1, "tools/call", _call(name))
            assert before == []
            await raw.quiet()
            assert raw.session.in_flight == 0
            validate_message(ERA, reply, answering="tools/call")
            replies.append(reply)
    # An unexpected failure's error id is fresh each time; the rest is the same.
    parked, in_a_task = (
        json.loads(re.sub(r"error id [0-9a-f]+", "error id X", json.dumps(r)))
        for r in replies
    )
    assert parked == in_a_task


async def test_a_refused_initialize_leaves_the_connection_as_it_was() -> None:
    # The oversized value was kept, and the connection taken as initialized,
    # before the size check refused it: a tools/list then succeeded, and
    # over HTTP a refused initialize re-sent on a session held its value.
    from bridge.server.limits import ServerLimits

    server = Server(PLAIN_TOOLS, limits=ServerLimits(max_client_value=1000))
    big = {"experimental": {"x": "y" * 5000}}
    async with connect(server) as raw:
        connection = raw.session.handler
        reply, _ = await raw.call(
            1,
            "initialize",
            {"protocolVersion": ERA, "capabilities": big, "clientInfo": {"name": "r"}},
        )
        assert "capabilities is too large" in reply["error"]["message"]
        assert connection.protocol_version is None
        assert connection.client_capabilities == {}
        reply, _ = await raw.call(2, "tools/list")
        assert "before initialize" in reply["error"]["message"]


@both_paths
async def test_ping_is_answered_with_an_empty_result(tasks: bool) -> None:
    async with connect(tasks=tasks) as raw:
        reply, _ = await raw.call("before", "ping")  # allowed before initialize
        assert reply == {"jsonrpc": "2.0", "id": "before", "result": {}}
        await raw.initialize(ALL_CAPS)
        reply, _ = await raw.call(5, "ping")
        assert reply == {"jsonrpc": "2.0", "id": 5, "result": {}}
        validate_message(ERA, reply, answering="ping")


async def test_the_server_can_ping_the_client() -> None:
    async with connect(capabilities=ALL_CAPS) as raw, trio.open_nursery() as nursery:
        done = trio.Event()

        async def ping() -> None:
            await raw.session.ping(timeout=5)
            done.set()

        nursery.start_soon(ping)
        frame = await raw.next()
        assert frame["method"] == "ping"
        assert "params" not in frame or frame["params"] == {}
        validate_message(ERA, frame)
        await raw.respond(frame["id"], {})
        with trio.fail_after(5):
            await done.wait()


# --- 5. URL-mode elicitation ---------------------------------------------------------


def _completion(elicitation_id: str) -> Frame:
    return {
        "jsonrpc": "2.0",
        "method": "notifications/elicitation/complete",
        "params": {"elicitationId": elicitation_id},
    }


@both_paths
async def test_a_url_elicitation_end_to_end(tasks: bool) -> None:
    server = _server()
    async with connect(server, ALL_CAPS, tasks=tasks) as raw:
        await raw.request(1, "tools/call", _call("connects"))
        ask = await raw.next()
        assert ask["method"] == "elicitation/create"
        assert ask["params"] == {
            "mode": "url",
            "message": "Connect your account",
            "url": tools.CONNECT_URL,
            "elicitationId": tools.FLOW_ID,
        }
        validate_message(ERA, ask)
        await raw.respond(ask["id"], {"action": "accept"})  # consent, not completion
        reply, _ = await raw.reply_to(1)
        assert _text(reply) == f"accept:{tools.FLOW_ID}"
        await raw.quiet()  # no completion until the flow completes out of band

        # The page the user visited tells the server the flow is done:
        assert await server.complete_elicitation(tools.FLOW_ID) is True
        note = await raw.next()
        assert note == _completion(tools.FLOW_ID)
        validate_message(ERA, note)
        # Once only: a second completion (or an unknown id) sends nothing.
        assert await server.complete_elicitation(tools.FLOW_ID) is False
        assert await server.complete_elicitation("never-sent") is False
        await raw.quiet()


@both_paths
async def test_url_elicitation_required_is_error_32042(tasks: bool) -> None:
    server = _server()
    async with connect(server, ALL_CAPS, tasks=tasks) as raw:
        reply, before = await raw.call(1, "tools/call", _call("needs_connection"))
        assert before == []
        assert reply == {
            "jsonrpc": "2.0",
            "id": 1,
            "error": {
                "code": -32042,
                "message": "Connect your account first.",
                "data": {
                    "elicitations": [
                        {
                            "mode": "url",
                            "elicitationId": tools.FLOW_ID,
                            "url": tools.CONNECT_URL,
                            "message": "Connect your account",
                        }
                    ]
                },
            },
        }
        validate(ERA, "URLElicitationRequiredError", reply)
        # The client may wait for the completion to retry the call:
        assert await server.complete_elicitation(tools.FLOW_ID) is True
        assert await raw.next() == _completion(tools.FLOW_ID)


@pytest.mark.parametrize("name", ["connects", "needs_connection"])
@pytest.mark.parametrize(
    "capabilities",
    [{"elicitation": {}}, {"elicitation": {"form": {}}}, {}],
    ids=["elicitation-empty", "form-only", "none"],
)
@both_paths
async def test_without_url_mode_no_url_elicitation_is_sent(
    name: str, capabilities: Frame, tasks: bool
) -> None:
    """-32042 stands for a URL elicitation: a client that did not declare URL
    mode gets neither it nor elicitation/create, but a tool error naming it."""
    server = _server()
    async with connect(server, capabilities, tasks=tasks) as raw:
        reply, before = await raw.call(1, "tools/call", _call(name))
        assert before == []
        assert "elicitation.url" in _tool_error(reply)
        assert await server.complete_elicitation(tools.FLOW_ID) is False


async def test_a_completion_goes_only_to_the_client_that_was_asked() -> None:
    server = _server()
    async with connect(server, ALL_CAPS) as asked, connect(server, ALL_CAPS) as other:
        reply, _ = await asked.call(1, "tools/call", _call("needs_connection"))
        assert reply["error"]["code"] == -32042
        assert await server.complete_elicitation(tools.FLOW_ID) is True
        assert await asked.next() == _completion(tools.FLOW_ID)
        await other.quiet()


async def test_a_completion_for_a_client_that_left_is_dropped() -> None:
    server = _server()
    async with connect(server, ALL_CAPS) as raw:
        reply, _ = await raw.call(1, "tools/call", _call("needs_connection"))
        assert reply["error"]["code"] == -32042
    assert await server.complete_elicitation(tools.FLOW_ID) is False


# --- 6. a whole session against the official schema ----------------------------------


async def test_every_frame_of_a_session_is_valid_2025_11_25() -> None:
    server = _server()
    methods: dict[Any, str] = {}

    async with connect(server) as raw:

        async def call(
            request_id: Any, method: str, params: Mapping[str, Any] | None = None
        ) -> tuple[Frame, list[Frame]]:
            methods[request_id] = method
            return await raw.call(request_id, method, params)

        methods["init"] = "initialize"
        await raw.initialize(ALL_CAPS)
        await call(1, "tools/list")
        await call(2, "logging/setLevel", {"level": "info"})
        await call(3, "ping")
        _, before = await call(
            4, "tools/call", _call("counts", {"n": 2}, progressToken="p")
        )
        assert [f["method"] for f in before] == ["notifications/progress"] * 2
        _, before = await call(5, "tools/call", _call("levels"))
        assert len(before) == 2  # info and error; debug is below the level

        # a call that samples
        methods[6] = "tools/call"
        await raw.request(6, "tools/call", _call("asks", {"prompt": "hi"}))
        sample = await raw.next()
        await raw.respond(sample["id"], TEXT_ANSWER)
        await raw.reply_to(6)

        # a call that elicits with a form, and one with a URL
        methods[7] = "tools/call"
        await raw.request(7, "tools/call", _call("asks_name"))
        ask = await raw.next()
        await raw.respond(ask["id"], {"action": "accept", "content": {"name": "Ada"}})
        await raw.reply_to(7)
        methods[8] = "tools/call"
        await raw.request(8, "tools/call", _call("connects"))
        ask = await raw.next()
        await raw.respond(ask["id"], {"action": "accept"})
        await raw.reply_to(8)
        assert await server.complete_elicitation(tools.FLOW_ID)
        await raw.next()

        # a cancelled call: the server withdraws its question
        methods[9] = "tools/call"
        await raw.request(9, "tools/call", _call("waits"))
        await raw.next()
        await raw.notify("notifications/cancelled", {"requestId": 9})
        assert (await raw.next())["method"] == "notifications/cancelled"

        # errors: a tool error, -32042, -32601, -32602, -32600
        reply, _ = await call(10, "tools/call", _call("fails"))
        assert _tool_error(reply) == "no such city"
        await call(11, "tools/call", _call("needs_connection"))
        await call(12, "tools/frobnicate")
        await call(13, "tools/call", {"name": "counts", "arguments": [99]})
        reply, _ = await call(15, "tools/call", _call("counts", {"n": 99}))
        assert "n: Input should be less than" in _tool_error(reply)
        await call(14, "logging/setLevel", {"level": "loud"})
        await raw.request(True, "ping")
        await raw.next()

        # the server pings the client
        async with trio.open_nursery() as nursery:
            nursery.start_soon(raw.session.ping)
            ping = await raw.next()
            await raw.respond(ping["id"], {})
        await raw.quiet()

        kinds: dict[str, int] = {}
        for frame in raw.sent():
            if "method" in frame:
                kind = frame["method"]
                validate_message(ERA, frame)
            elif "error" in frame:
                kind = f"error {frame['error']['code']}"
                validate_message(ERA, frame)
            else:
                kind = f"result {methods[frame['id']]}"
                validate_message(ERA, frame, answering=methods[frame["id"]])
            kinds[kind] = kinds.get(kind, 0) + 1

    assert kinds == {
        "result initialize": 1,
        "result tools/list": 1,
        "result logging/setLevel": 1,
        "result ping": 1,
        "result tools/call": 7,
        "notifications/progress": 2,
        "notifications/message": 2,
        "sampling/createMessage": 2,
        "elicitation/create": 2,
        "notifications/elicitation/complete": 1,
        "notifications/cancelled": 1,
        "ping": 1,
        "error -32042": 1,
        "error -32601": 1,
        "error -32602": 2,
        "error -32600": 1,
    }


def test_two_tools_of_one_name_on_a_server_is_invalid_tool() -> None:
    @tool
    def t(ctx: Context) -> str:
        return "a"

    @tool(name="t")
    def u(ctx: Context) -> str:
        return "b"

    with pytest.raises(InvalidTool, match="two tools are named 't'"):
        Server([t, u])

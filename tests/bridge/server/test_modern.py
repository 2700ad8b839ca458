"""The 2026-07-28 era: envelopes, discover, and multi-round calls (MRTR)."""

from __future__ import annotations

import random
from typing import Annotated, Any

import pytest
import trio
from pydantic import AfterValidator, BaseModel, ConfigDict

from bridge.jsonrpc import Notification, Request, parse
from bridge.jsonrpc.session import Session
from bridge.server import Server
from bridge.server.calls import rounds as _rounds
from bridge.server.questions import CallScope
from bridge.server.state_token import Sealer
from bridge.transports.memory import memory_pair
from runtime import Context, Op, tool
from runtime.errors import InvalidAnswer, PeerError
from runtime.lowlevel import CapabilityError
from tests.bridge.wire import WirePeer, modern_meta, wire_peer
from tests.fixtures import interop_server as fx
from tests.mcp_schema import validate


def server(*extra: Any, **options: Any) -> Server:
    return Server(
        [fx.ask, fx.weather, fx.agent, fx.confirm, fx.chatty, fx.fails, *extra],
        **options,
    )


async def call(
    peer: WirePeer, name: str, arguments: dict[str, Any], **params: Any
) -> dict[str, Any]:
    meta = params.pop("meta", None) or modern_meta()
    result = await peer.request(
        "tools/call", {"name": name, "arguments": arguments, "_meta": meta, **params}
    )
    validate("2026-07-28", _result_type(result), result)
    return result


def _result_type(result: dict[str, Any]) -> str:
    if result.get("resultType") == "input_required":
        return "InputRequiredResult"
    return "CallToolResult"


SAMPLE_ANSWER = {
    "role": "assistant",
    "content": {"type": "text", "text": "hello"},
    "model": "wire-model",
    "stopReason": "endTurn",
}


# --- envelope and discovery ---------------------------------------------------------


async def test_discover_lists_versions_capabilities_and_identity() -> None:
    async with wire_peer(server(name="srv", version="9")) as peer:
        result = await peer.request("server/discover", {"_meta": modern_meta()})
    validate("2026-07-28", "DiscoverResult", result)
    assert result["supportedVersions"] == ["2026-07-28"]
    assert "tools" in result["capabilities"]
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"] == {
        "name": "srv",
        "version": "9",
    }


@pytest.mark.parametrize(
    ("meta", "code"),
    [
        ({}, -32602),
        ({"io.modelcontextprotocol/protocolVersion": "2026-07-28"}, -32602),
        (
            {
                "io.modelcontextprotocol/protocolVersion": "v999",
                "io.modelcontextprotocol/clientCapabilities": {},
            },
            -32022,
        ),
    ],
    ids=["no-envelope", "no-capabilities", "unsupported-version"],
)
async def test_bad_envelopes_are_rejected(meta: dict[str, Any], code: int) -> None:
    async with wire_peer(server()) as peer:
        with pytest.raises(PeerError) as info:
            await peer.request("server/discover", {"_meta": meta})
    assert info.value.code == code
    if code == -32022:
        assert info.value.data == {"supported": ["2026-07-28"], "requested": "v999"}


@pytest.mark.parametrize(
    "method", ["ping", "logging/setLevel", "resources/subscribe", "unknown/method"]
)
async def test_methods_removed_in_2026_are_unknown(method: str) -> None:
    async with wire_peer(server()) as peer:
        with pytest.raises(PeerError) as info:
            await peer.request(method, {"_meta": modern_meta()})
    assert info.value.code == -32601


async def test_lists_carry_result_type_and_cache_hints() -> None:
    async with wire_peer(server()) as peer:
        result = await peer.request("tools/list", {"_meta": modern_meta()})
    validate("2026-07-28", "ListToolsResult", result)
    assert (result["resultType"], result["ttlMs"], result["cacheScope"]) == (
        "complete",
        0,
        "private",
    )


# --- multi-round calls --------------------------------------------------------------


async def test_an_elicitation_round_trip() -> None:
    async with wire_peer(server()) as peer:
        first = await call(peer, "confirm", {"prompt": "Proceed?"})
        assert first["resultType"] == "input_required"
        (key,) = first["inputRequests"]
        assert key == "confirm"
        request = first["inputRequests"][key]
        assert request["method"] == "elicitation/create"
        validate("2026-07-28", "ElicitRequestFormParams", request["params"])
        answer = {"action": "accept", "content": {"ok": True, "note": "fine"}}
        second = await call(
            peer,
            "confirm",
            {"prompt": "Proceed?"},
            inputResponses={key: answer},
            requestState=first["requestState"],
        )
    assert second["resultType"] == "complete"
    assert second["content"][0]["text"] == "accept:True:fine"


async def test_a_tool_use_conversation_takes_two_rounds_of_sampling() -> None:
    async with wire_peer(server()) as peer:
        first = await call(peer, "agent", {"prompt": "go"})
        sampling = first["inputRequests"]["sample"]
        assert [t["name"] for t in sampling["params"]["tools"]] == ["lookup"]
        use = {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "u1",
                    "name": "lookup",
                    "input": {"query": "trio"},
                }
            ],
            "model": "m",
            "stopReason": "toolUse",
        }
        second = await call(
            peer,
            "agent",
            {"prompt": "go"},
            inputResponses={"sample": use},
            requestState=first["requestState"],
        )
        final_request = second["inputRequests"]["sample"]["params"]
        assert final_request["messages"][-1]["content"]["type"] == "tool_result"
        assert final_request["toolChoice"] == {"mode": "none"}
        third = await call(
            peer,
            "agent",
            {"prompt": "go"},
            inputResponses={"sample": SAMPLE_ANSWER},
            requestState=second["requestState"],
        )
    assert third["content"][0]["text"] == "trio|hello"
    assert second["requestState"] != first["requestState"]


class Empty(BaseModel):
    pass


@tool
def fan_out(ctx: Context) -> Op[str]:
    def ask(c: Context, topic: str) -> Op[str]:
        reply = yield from c.sample(f"about {topic}")
        return reply.text

    a, b, c = yield from ctx.branch(
        lambda x: ask(x, "a"), lambda x: ask(x, "b"), lambda x: ask(x, "c")
    )
    return a + b + c


async def test_concurrent_branch_questions_are_asked_in_one_round() -> None:
    async with wire_peer(server(fan_out)) as peer:
        first = await call(peer, "fan_out", {})
        keys = sorted(first["inputRequests"])
        assert keys == ["sample@0.0/0", "sample@0.1/0", "sample@0.2/0"]
        answers = {
            key: {**SAMPLE_ANSWER, "content": {"type": "text", "text": key[-3]}}
            for key in keys
        }
        partial = await call(
            peer,
            "fan_out",
            {},
            inputResponses={keys[1]: answers[keys[1]]},
            requestState=first["requestState"],
        )
        assert sorted(partial["inputRequests"]) == [keys[0], keys[2]]
        done = await call(
            peer,
            "fan_out",
            {},
            inputResponses=answers,
            requestState=partial["requestState"],
        )
    assert done["content"][0]["text"] == "012"


async def test_a_missing_response_asks_again_and_extra_keys_are_ignored() -> None:
    async with wire_peer(server()) as peer:
        first = await call(peer, "confirm", {"prompt": "?"})
        again = await call(
            peer,
            "confirm",
            {"prompt": "?"},
            inputResponses={"unrelated": {"action": "accept"}},
            requestState=first["requestState"],
        )
        assert list(again["inputRequests"]) == ["confirm"]
        done = await call(
            peer,
            "confirm",
            {"prompt": "?"},
            inputResponses={
                "confirm": {"action": "decline"},
                "extra": {"action": "accept", "content": {"x": 1}},
            },
            requestState=again["requestState"],
        )
    assert done["content"][0]["text"] == "decline"


async def test_the_first_round_refuses_answers_to_questions_never_asked() -> None:
    # No requestState: nothing was asked, so an "answer" is not one; the
    # question is asked.
    async with wire_peer(server()) as peer:
        again = await call(
            peer,
            "confirm",
            {"prompt": "?"},
            inputResponses={"confirm": {"action": "accept", "content": {"ok": False}}},
        )
    assert again["resultType"] == "input_required"
    assert list(again["inputRequests"]) == ["confirm"]


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"prompt": 3}, "prompt: Input should be a valid string"),
        ({}, "prompt: Field required"),
    ],
)
async def test_arguments_failing_the_input_schema_are_a_tool_error(
    arguments: dict[str, Any], problem: str
) -> None:
    # SEP-1303, in this era too: a result the model reads, not -32602.
    async with wire_peer(server()) as peer:
        result = await call(peer, "ask", arguments)
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert text.startswith("Invalid arguments for tool 'ask':\n")
    assert problem in text


async def test_arguments_that_are_not_an_object_are_invalid_params() -> None:
    async with wire_peer(server()) as peer:
        with pytest.raises(PeerError) as info:
            await peer.request(
                "tools/call",
                {"name": "ask", "arguments": ["hi"], "_meta": modern_meta()},
            )
    assert info.value.code == -32602


@pytest.mark.parametrize(
    "bad", [12345, "accept", [1]], ids=["number", "string", "list"]
)
async def test_a_malformed_response_is_invalid_params(bad: Any) -> None:
    async with wire_peer(server()) as peer:
        with pytest.raises(PeerError) as info:
            await call(
                peer, "confirm", {"prompt": "?"}, inputResponses={"confirm": bad}
            )
    assert info.value.code == -32602


async def test_content_outside_the_schema_is_invalid_params() -> None:
    async with wire_peer(server()) as peer:
        first = await call(peer, "confirm", {"prompt": "?"})
        with pytest.raises(PeerError) as info:
            await call(
                peer,
                "confirm",
                {"prompt": "?"},
                inputResponses={
                    "confirm": {"action": "accept", "content": {"ok": "y"}}
                },
                requestState=first["requestState"],
            )
    assert info.value.code == -32602


# --- sealed state -------------------------------------------------------------------


def _tamper(state: str) -> list[str]:
    flipped = state[:-5] + ("A" if state[-5] != "A" else "B") + state[-4:]
    return [state + "-TAMPERED", flipped, state[:-10], "v1.garbage", "plain", ""]


async def test_tampered_states_all_get_one_uniform_error() -> None:
    async with wire_peer(server()) as peer:
        first = await call(peer, "confirm", {"prompt": "?"})
        errors: list[tuple[int, str, Any]] = []
        for state in _tamper(first["requestState"]):
            with pytest.raises(PeerError) as info:
                await call(
                    peer,
                    "confirm",
                    {"prompt": "?"},
                    inputResponses={"confirm": {"action": "decline"}},
                    requestState=state,
                )
            errors.append((info.value.code, info.value.message, info.value.data))
    assert len(set(map(repr, errors))) == 1
    assert errors[0][0] == -32602


async def test_a_state_is_bound_to_its_tool_and_arguments() -> None:
    async with wire_peer(server()) as peer:
        first = await call(peer, "confirm", {"prompt": "?"})
        for name, arguments in (("ask", {"prompt": "?"}), ("confirm", {"prompt": "!"})):
            with pytest.raises(PeerError) as info:
                await call(peer, name, arguments, requestState=first["requestState"])
            assert info.value.message == "Invalid or expired requestState"


async def test_an_expired_state_is_rejected() -> None:
    now = [1000.0]
    srv = server()
    srv.sealer = Sealer(ttl=60, clock=lambda: now[0])
    async with wire_peer(srv) as peer:
        first = await call(peer, "confirm", {"prompt": "?"})
        now[0] += 61
        with pytest.raises(PeerError) as info:
            await call(
                peer,
                "confirm",
                {"prompt": "?"},
                inputResponses={"confirm": {"action": "decline"}},
                requestState=first["requestState"],
            )
    assert info.value.message == "Invalid or expired requestState"


async def test_the_state_carries_answers_sealed_not_in_clear() -> None:
    import base64

    secret = "my-pin-4321"
    srv = server()
    async with wire_peer(srv) as peer:
        first = await call(peer, "agent", {"prompt": "go"})
        use = {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "u1",
                    "name": "lookup",
                    "input": {"query": secret},
                }
            ],
            "model": "m",
        }
        second = await call(
            peer,
            "agent",
            {"prompt": "go"},
            inputResponses={"sample": use},
            requestState=first["requestState"],
        )
    state = second["requestState"]
    body = state.removeprefix("v1.")
    raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    assert secret not in state
    assert secret.encode() not in raw
    assert secret in str(srv.sealer.open(state, purpose="tools/call"))


async def test_another_worker_with_the_same_key_resumes_the_call() -> None:
    key = b"k" * 32
    async with (
        wire_peer(server(state_keys=[key])) as one,
        wire_peer(server(state_keys=[key])) as two,
    ):
        first = await call(one, "confirm", {"prompt": "?"})
        done = await call(
            two,
            "confirm",
            {"prompt": "?"},
            inputResponses={"confirm": {"action": "accept", "content": {"ok": True}}},
            requestState=first["requestState"],
        )
    assert done["content"][0]["text"] == "accept:True:"


async def test_a_worker_with_another_key_rejects_the_state() -> None:
    async with (
        wire_peer(server(state_keys=[b"a" * 32])) as one,
        wire_peer(server(state_keys=[b"b" * 32])) as two,
    ):
        first = await call(one, "confirm", {"prompt": "?"})
        with pytest.raises(PeerError):
            await call(
                two,
                "confirm",
                {"prompt": "?"},
                inputResponses={"confirm": {"action": "decline"}},
                requestState=first["requestState"],
            )


class Topic(BaseModel):
    topic: str


def _versioned(prompt: str) -> Any:
    @tool(name="versioned")
    def versioned(params: Topic, ctx: Context) -> Op[str]:
        reply = yield from ctx.sample(prompt)
        return reply.text

    return versioned


async def test_a_changed_question_is_asked_again_not_answered_stale() -> None:
    key = b"k" * 32
    async with (
        wire_peer(Server([_versioned("old question")], state_keys=[key])) as old,
        wire_peer(Server([_versioned("new question")], state_keys=[key])) as new,
    ):
        first = await call(old, "versioned", {"topic": "x"})
        again = await call(
            new,
            "versioned",
            {"topic": "x"},
            inputResponses={"sample": SAMPLE_ANSWER},
            requestState=first["requestState"],
        )
    assert again["resultType"] == "input_required"
    message = again["inputRequests"]["sample"]["params"]["messages"][0]
    assert message["content"]["text"] == "new question"


def _six_digits(code: str) -> str:
    if len(code) != 6:
        raise ValueError("a PIN has six digits")
    return code


class _AnyPin(BaseModel):
    model_config = ConfigDict(title="Pin")
    code: str


class _SixDigitPin(BaseModel):
    model_config = ConfigDict(title="Pin")
    code: Annotated[str, AfterValidator(_six_digits)]  # not in the JSON schema


def _pin_then_sample(model: type[BaseModel]) -> Any:
    @tool(name="pin_then_sample", elicits={"pin": model})
    def pin_then_sample(ctx: Context) -> Op[str]:
        try:
            answer = yield from ctx.elicit("pin", "Your PIN?")
        except InvalidAnswer:
            return "the recorded PIN was refused"
        reply = yield from ctx.sample("Go on?")
        return f"{answer.content.code}:{reply.text}"

    return pin_then_sample


async def test_a_journaled_answer_that_no_longer_validates_is_refused() -> None:
    # The form's model became stricter between rounds, with the same JSON
    # schema (so the question, and its digest, are unchanged): the answer in
    # the sealed journal is validated again, and raised into the tool at its
    # yield as InvalidAnswer, as a live answer would be (bridge.server.rounds,
    # "Re-validation"); it never reaches the code after the yield.
    lax, strict = _pin_then_sample(_AnyPin), _pin_then_sample(_SixDigitPin)
    assert lax.context().elicit("pin", "Your PIN?").digest() == (
        strict.context().elicit("pin", "Your PIN?").digest()
    )
    key = b"k" * 32
    async with (
        wire_peer(Server([lax], state_keys=[key])) as before,
        wire_peer(Server([strict], state_keys=[key])) as after,
        wire_peer(Server([lax], state_keys=[key])) as unchanged,
    ):
        first = await call(before, "pin_then_sample", {})
        assert list(first["inputRequests"]) == ["pin"]
        second = await call(
            before,
            "pin_then_sample",
            {},
            inputResponses={"pin": {"action": "accept", "content": {"code": "1234"}}},
            requestState=first["requestState"],
        )
        assert list(second["inputRequests"]) == ["sample"]  # the PIN is journaled
        last_round = {
            "inputResponses": {"sample": SAMPLE_ANSWER},
            "requestState": second["requestState"],
        }
        refused = await call(after, "pin_then_sample", {}, **last_round)
        accepted = await call(unchanged, "pin_then_sample", {}, **last_round)
    assert refused["resultType"] == "complete"
    assert refused["content"][0]["text"] == "the recorded PIN was refused"
    assert accepted["content"][0]["text"] == "1234:hello"  # the same state, lax


# --- capabilities, notices ----------------------------------------------------------


async def test_an_undeclared_capability_fails_with_32021() -> None:
    async with wire_peer(server()) as peer:
        with pytest.raises(PeerError) as info:
            await call(
                peer, "confirm", {"prompt": "?"}, meta=modern_meta({"sampling": {}})
            )
    assert info.value.code == -32021
    assert info.value.data == {"requiredCapabilities": {"elicitation": {}}}


@tool(elicits={"confirm": fx.Confirm})
def adaptive(ctx: Context) -> Op[str]:
    try:
        reply = yield from ctx.elicit("confirm", "OK?")
    except CapabilityError:
        sampled = yield from ctx.sample("Is it OK?")
        return f"model says {sampled.text}"
    return reply.action


async def test_a_tool_can_handle_a_missing_capability_itself() -> None:
    async with wire_peer(server(adaptive)) as peer:
        first = await call(peer, "adaptive", {}, meta=modern_meta({"sampling": {}}))
    assert list(first["inputRequests"]) == ["sample"]


async def test_logs_need_an_opt_in_and_notices_are_sent_once() -> None:
    async with wire_peer(server()) as peer:
        await call(peer, "chatty", {})
        assert peer.notifications == []
        meta = modern_meta(
            **{"io.modelcontextprotocol/logLevel": "info", "progressToken": "p1"}
        )
        result = await call(peer, "chatty", {}, meta=meta)
        with trio.fail_after(5):
            await trio.testing.wait_all_tasks_blocked()
    assert result["content"][0]["text"] == "done"
    methods = [n.method for n in peer.notifications]
    assert methods.count("notifications/message") == 3
    assert methods.count("notifications/progress") == 3


async def test_a_failing_tool_is_an_error_result() -> None:
    async with wire_peer(server()) as peer:
        result = await call(peer, "fails", {})
    assert result["isError"] is True
    assert result["resultType"] == "complete"


async def test_every_frame_validates_against_the_2026_schema() -> None:
    async with wire_peer(server()) as peer:
        first = await call(peer, "agent", {"prompt": "x"})
        await peer.request("tools/list", {"_meta": modern_meta()})
        await peer.request("server/discover", {"_meta": modern_meta()})
        assert first["resultType"] == "input_required"
        checked = peer.check_schema(
            "2026-07-28",
            sent=[(1, "tools/call"), (2, "tools/list"), (3, "server/discover")],
        )
    assert checked == 3


async def test_a_request_is_answered_in_the_task_that_delivers_it() -> None:
    # Over a transport that sends at once (memory, stdio), a 2026 request
    # needs no task of its own: it never waits on the client. Its frames are
    # all out, notifications first and in order, when the delivery returns.
    server_end, client_end = memory_pair()
    received: list[Any] = []
    client_end.attach(lambda data: received.append(data and parse(data)))
    meta = modern_meta(
        **{"io.modelcontextprotocol/logLevel": "info", "progressToken": "p1"}
    )
    request = Request(7, "tools/call", {"name": "chatty", "_meta": meta})
    async with trio.open_nursery() as nursery:
        await nursery.start(Session(server_end, server().connection()).run)
        client_end.send_nowait(request)
        frames = list(received)
        nursery.cancel_scope.cancel()
    methods = [f.method if isinstance(f, Notification) else f.id for f in frames]
    assert methods == [
        *["notifications/message", "notifications/progress"] * 3,
        7,
    ]
    assert [f.params["progress"] for f in frames[1:6:2]] == [1, 2, 3]
    assert frames[-1].result["content"][0]["text"] == "done"


def test_a_round_draws_its_randomness_from_the_given_rng() -> None:
    @tool
    def roll(ctx: Context) -> Op[float]:
        return (yield from ctx.random())

    scope = CallScope(era="2026-07-28", request_id=1, client_capabilities={})
    round_ = _rounds.begin(
        Server([roll]), roll, roll.parse_arguments({}), {}, purpose="tools/call",
        scope=scope, store=None, bits=random.Random(7).getrandbits,
    )  # fmt: skip
    expected = random.Random(7).getrandbits(53) / (1 << 53)
    assert round_.now() == _rounds.Complete(expected)


@pytest.mark.parametrize(
    ("capabilities", "declared"),
    [
        ({"elicitation": {"form": {}}}, True),
        ({"elicitation": {"form": {"x": 1}}}, True),
        ({"elicitation": {"url": {}}}, False),
        ({"elicitation": {"form": None}}, False),
        ({"elicitation": {}}, False),
        ({"elicitation": None}, False),
        ({"elicitation": ["form"]}, False),
        ({"elicitation": "form"}, False),
        ({"elicitation": True}, False),
        ({"elicitation": 1}, False),
        ({}, False),
    ],
)
def test_a_capability_is_declared_only_by_an_object_path_to_a_value(
    capabilities: dict[str, Any], declared: bool
) -> None:
    scope = CallScope(era="2026-07-28", request_id=1, client_capabilities=capabilities)
    assert scope.capability("elicitation", "form") is declared
    assert scope.capability("elicitation") is (
        capabilities.get("elicitation") is not None
    )

"""KeyedHandlers, ScriptedAnswers and Always: routing, replies, fallbacks."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import trio
from pydantic import BaseModel, Field

from bridge.elicit import Always, KeyedHandlers, ScriptedAnswers, form_defaults
from runtime import ElicitKey
from runtime.errors import ScriptExhausted
from runtime.lowlevel import ElicitationRequest, ElicitReply


class Move(BaseModel):
    cell: int = Field(ge=0, le=8)
    note: str | None = None


MOVE = ElicitKey("pick_move", Move)
SCHEMA = {
    "type": "object",
    "properties": {
        "cell": {"type": "integer", "minimum": 0, "maximum": 8, "default": 4},
        "note": {"type": "string"},
    },
    "required": ["cell"],
}


def form(key: str | None = "pick_move", **context: Any) -> ElicitationRequest:
    return ElicitationRequest(
        message="Your move", requested_schema=SCHEMA, key=key, context=context
    )


URL = ElicitationRequest(
    message="Sign in", mode="url", url="https://example.com/a", elicitation_id="e"
)


async def answer(handler: Any, request: ElicitationRequest) -> ElicitReply:
    with trio.fail_after(5):
        return await handler.handle(request)


# --- KeyedHandlers --------------------------------------------------------------------


async def test_a_returned_model_is_accepted_with_its_json() -> None:
    handlers = KeyedHandlers().on(
        MOVE, lambda request, ctx: Move(cell=min(ctx["empty"]))
    )
    reply = await answer(handlers, form(empty=[2, 5]))
    assert reply == ElicitReply(action="accept", content={"cell": 2})


async def test_async_handlers_are_awaited_and_see_the_request() -> None:
    seen: list[ElicitationRequest] = []

    async def pick(request: ElicitationRequest, ctx: Mapping[str, Any]) -> Move:
        seen.append(request)
        await trio.lowlevel.checkpoint()
        return Move(cell=1, note="corner")

    request = form()
    reply = await answer(KeyedHandlers().on(MOVE, pick), request)
    assert reply.content == {"cell": 1, "note": "corner"}
    assert seen == [request]


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_an_explicit_reply_is_passed_through(action: Any) -> None:
    handlers = KeyedHandlers().on(MOVE, lambda request, ctx: ElicitReply(action=action))
    assert await answer(handlers, form()) == ElicitReply(action=action)


async def test_string_keys_accept_mappings() -> None:
    handlers = KeyedHandlers().on("pick_move", lambda request, ctx: {"cell": 7})
    assert (await answer(handlers, form())).content == {"cell": 7}


async def test_unknown_keys_url_mode_and_keyless_forms_go_to_the_fallback() -> None:
    handlers = KeyedHandlers().on(MOVE, lambda request, ctx: Move(cell=0))
    assert await answer(handlers, form("other")) == ElicitReply(action="decline")
    assert await answer(handlers, form(None)) == ElicitReply(action="decline")
    assert await answer(handlers, URL) == ElicitReply(action="decline")
    consenting = KeyedHandlers(fallback=Always("accept"))
    assert await answer(consenting, URL) == ElicitReply(action="accept")


async def test_a_handler_returning_the_wrong_type_is_an_error() -> None:
    class Other(BaseModel):
        cell: int

    handlers = KeyedHandlers().on(MOVE, lambda request, ctx: Other(cell=1))  # type: ignore[arg-type, return-value]
    with pytest.raises(TypeError, match="pick_move"):
        await answer(handlers, form())


def test_a_key_registers_once() -> None:
    handlers = KeyedHandlers().on(MOVE, lambda request, ctx: Move(cell=0))
    with pytest.raises(ValueError, match="pick_move"):
        handlers.on("pick_move", lambda request, ctx: {"cell": 1})
    assert handlers.keys == {"pick_move"}


# --- ScriptedAnswers ------------------------------------------------------------------


async def test_listed_answers_are_consumed_in_order() -> None:
    script = ScriptedAnswers({"pick_move": [{"cell": 1}, "decline", {"cell": 2}]})
    replies = [await answer(script, form()) for _ in range(3)]
    assert replies == [
        ElicitReply(action="accept", content={"cell": 1}),
        ElicitReply(action="decline"),
        ElicitReply(action="accept", content={"cell": 2}),
    ]
    assert script.remaining() == {"pick_move": 0}
    with pytest.raises(ScriptExhausted):
        await answer(script, form())


async def test_a_single_answer_repeats() -> None:
    script = ScriptedAnswers({"pick_move": {"cell": 3}})
    for _ in range(3):
        assert (await answer(script, form())).content == {"cell": 3}


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({"action": "decline"}, ElicitReply(action="decline")),
        ("cancel", ElicitReply(action="cancel")),
        ({"action": "cancel", "content": {}}, ElicitReply(action="cancel")),
        ("accept", ElicitReply(action="accept", content={"cell": 4})),
        (
            {"action": "accept", "content": {"note": "hi"}},
            ElicitReply(action="accept", content={"cell": 4, "note": "hi"}),
        ),
        ({"note": "x"}, ElicitReply(action="accept", content={"cell": 4, "note": "x"})),
    ],
)
async def test_answers_are_content_actions_or_replies_over_defaults(
    given: Any, expected: ElicitReply
) -> None:
    assert await answer(ScriptedAnswers({"pick_move": given}), form()) == expected


async def test_url_and_catch_all_entries() -> None:
    script = ScriptedAnswers({"$url": "accept", "*": "decline"})
    assert await answer(script, URL) == ElicitReply(action="accept")
    assert await answer(script, form("anything")) == ElicitReply(action="decline")
    assert await answer(script, form(None)) == ElicitReply(action="decline")


async def test_what_the_script_lacks_goes_to_the_fallback() -> None:
    script = ScriptedAnswers({"pick_move": [{"cell": 1}]}, fallback=Always("cancel"))
    await answer(script, form())
    assert await answer(script, form()) == ElicitReply(action="cancel")
    assert await answer(script, URL) == ElicitReply(action="cancel")


async def test_scripts_load_from_json_files(tmp_path: Path) -> None:
    path = tmp_path / "answers.json"
    path.write_text(json.dumps({"pick_move": [{"cell": 8}, {"action": "decline"}]}))
    script = ScriptedAnswers.from_file(path)
    assert (await answer(script, form())).content == {"cell": 8}
    assert await answer(script, form()) == ElicitReply(action="decline")


@pytest.mark.parametrize(
    "text", ["[1, 2]", '{"k": 3}', '{"k": ["maybe"]}', '{"k": [null]}']
)
def test_a_malformed_script_is_refused_when_loaded(text: str) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - the message is for people
        ScriptedAnswers.from_json(text)


# --- Always and defaults --------------------------------------------------------------


async def test_always_gives_its_action() -> None:
    assert await answer(Always("accept"), form()) == ElicitReply(
        action="accept", content={"cell": 4}
    )
    assert await answer(Always("accept"), URL) == ElicitReply(action="accept")
    assert await answer(Always("decline"), form()) == ElicitReply(action="decline")


def test_form_defaults_reads_each_fields_default() -> None:
    assert form_defaults(SCHEMA) == {"cell": 4}
    assert form_defaults({"type": "object"}) == {}

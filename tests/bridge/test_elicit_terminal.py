"""TerminalForm driven by scripted input lines: no TTY, no sleeps."""

from __future__ import annotations

import threading
from typing import Any

import pytest
import trio

from bridge.elicit import TerminalForm, line_reader, stdin_line
from bridge.host import run_in_process
from runtime import ElicitationRequest, ElicitReply
from runtime.replies import ElicitAction
from tests.helpers import load_example

conformance = load_example("conformance_server")

FORM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {
            "type": "string",
            "title": "Name",
            "description": "Who is travelling",
            "minLength": 2,
            "default": "Ada",
        },
        "age": {"type": "integer", "title": "Age", "minimum": 0, "maximum": 130},
        "score": {"type": "number", "minimum": 0, "maximum": 1},
        "newsletter": {"type": "boolean", "title": "Newsletter", "default": False},
        "seat": {"type": "string", "enum": ["window", "aisle", "middle"]},
        "meal": {
            "type": "string",
            "oneOf": [
                {"const": "veg", "title": "Vegetarian"},
                {"const": "fish", "title": "Fish"},
            ],
        },
        "extras": {
            "type": "array",
            "items": {"type": "string", "enum": ["wifi", "lounge", "bag"]},
            "maxItems": 2,
            "default": ["wifi"],
        },
        "depart": {"type": "string", "format": "date"},
        "email": {"type": "string", "format": "email"},
    },
    "required": ["name", "age", "seat"],
}
FIELDS = list(FORM["properties"])


async def fill(
    lines: list[str], request: ElicitationRequest | None = None
) -> tuple[ElicitReply, list[str]]:
    out: list[str] = []
    form = TerminalForm(read_line=line_reader(lines, echo=out.append), write=out.append)
    with trio.fail_after(5):
        reply = await form.handle(
            request
            or ElicitationRequest(
                message="Book a seat", requested_schema=FORM, key="booking"
            )
        )
    return reply, out


def errors(out: list[str]) -> list[str]:
    return [line.strip() for line in out if line.strip().startswith("!")]


async def test_enter_accepts_defaults_and_leaves_optional_fields_empty() -> None:
    #           name age   score newsletter seat meal extras depart email
    lines = ["", "36", "", "", "window", "", "", "", ""]
    reply, _ = await fill(lines)
    assert reply == ElicitReply(
        action="accept",
        content={
            "name": "Ada",
            "age": 36,
            "newsletter": False,
            "seat": "window",
            "extras": ["wifi"],
        },
    )


async def test_every_field_typed_in() -> None:
    lines = [
        "Grace",
        "85",
        "0.5",
        "yes",
        "2",
        "Fish",
        "1, lounge",
        "2026-05-01",
        "grace@example.com",
    ]
    reply, _ = await fill(lines)
    assert reply.content == {
        "name": "Grace",
        "age": 85,
        "score": 0.5,
        "newsletter": True,
        "seat": "aisle",
        "meal": "fish",
        "extras": ["wifi", "lounge"],
        "depart": "2026-05-01",
        "email": "grace@example.com",
    }


async def test_invalid_answers_are_explained_and_asked_again() -> None:
    lines = [
        "A",  # name too short
        "Al",
        "old",  # not a number
        "200",  # above the maximum
        "",  # age is required, no default
        "40",
        "2",  # score above 1
        "1",
        "maybe",
        "no",
        "7",  # no such choice
        "middle",
        "veg",
        "1,2,3",  # too many extras
        "bag",
        "2026-13-01",  # no 13th month
        "2026-12-01",
        "not-an-email",
        ":skip",
    ]
    reply, out = await fill(lines)
    assert len(errors(out)) == 10
    assert reply.content == {
        "name": "Al",
        "age": 40,
        "score": 1,
        "newsletter": False,
        "seat": "middle",
        "meal": "veg",
        "extras": ["bag"],
        "depart": "2026-12-01",
    }


async def test_skip_is_refused_for_a_required_field() -> None:
    lines = [":skip", "", ":skip", "3", ":skip", ":skip", "1", *[":skip"] * 4]
    reply, out = await fill(lines)
    assert reply.action == "accept"
    assert reply.content == {"name": "Ada", "age": 3, "seat": "window"}
    assert len(errors(out)) == 2


@pytest.mark.parametrize(
    ("command", "action"),
    [(":decline", "decline"), (":cancel", "cancel"), (":DECLINE", "decline")],
)
async def test_decline_and_cancel_stop_at_any_prompt(
    command: str, action: ElicitAction
) -> None:
    reply, _ = await fill(["Grace", command])
    assert reply == ElicitReply(action=action)


async def test_end_of_input_cancels() -> None:
    reply, out = await fill(["Grace", "40"])
    assert reply == ElicitReply(action="cancel")
    assert out[-1].endswith("^D")


async def test_the_form_shows_message_context_fields_and_numbered_choices() -> None:
    request = ElicitationRequest(
        message="Your move (X). Pick an empty cell.",
        requested_schema=FORM,
        key="pick_move",
        context={"board": "X | 1 | 2\n3 | O | 5\n6 | 7 | 8", "empty": [1, 2, 3]},
    )
    _, out = await fill([":cancel"], request)
    text = "\n".join(out)
    assert "Form: pick_move" in out[0]
    assert out[1] == "Your move (X). Pick an empty cell."
    assert out[2:6] == ["  board:", "    X | 1 | 2", "    3 | O | 5", "    6 | 7 | 8"]
    assert "  empty: [1, 2, 3]" in out
    assert "Name (required)" in text
    assert "Who is travelling" in text
    assert "Name [Ada]: :cancel" in out


async def test_choices_are_numbered_with_titles() -> None:
    _, out = await fill(["", "1", "", "", "1", ":cancel"])
    assert "  1) window" in out
    assert "  2) Fish (fish)" in out


async def test_sep1034_defaults_are_all_accepted_with_enter() -> None:
    form = TerminalForm(read_line=line_reader([""] * 5), write=lambda line: None)
    with trio.fail_after(5):
        result = await run_in_process(
            conformance.test_elicitation_sep1034_defaults, {}, elicitation=form
        )
    assert result == (
        'Elicitation result: action=accept, content={"name": "John Doe", "age": 30, '
        '"score": 95.5, "status": "active", "verified": true}'
    )


async def test_sep1330_enums_by_number_value_and_title() -> None:
    lines = ["pending", "High Priority", "2", "1, execute", "bug,Documentation"]
    form = TerminalForm(read_line=line_reader(lines), write=lambda line: None)
    with trio.fail_after(5):
        result = await run_in_process(
            conformance.test_elicitation_sep1330_enums, {}, elicitation=form
        )
    assert result.endswith(
        '{"untitledSingle": "pending", "titledSingle": "high", "legacyEnum": '
        '"medium", "untitledMulti": ["read", "execute"], "titledMulti": '
        '["bug", "docs"]}'
    )


# --- URL mode -------------------------------------------------------------------------

URL = ElicitationRequest(
    message="Sign in to continue",
    mode="url",
    url="https://auth.example.com/login?state=abc",
    elicitation_id="e1",
)


@pytest.mark.parametrize(
    ("lines", "action"),
    [
        (["yes"], "accept"),
        (["n"], "decline"),
        ([":decline"], "decline"),
        ([":cancel"], "cancel"),
        ([], "cancel"),
        (["open it", "YES"], "accept"),
    ],
)
async def test_url_mode_asks_for_explicit_consent(
    lines: list[str], action: ElicitAction
) -> None:
    reply, _ = await fill(lines, URL)
    assert reply == ElicitReply(action=action)


async def test_url_mode_shows_the_full_url_and_its_site() -> None:
    _, out = await fill(["no"], URL)
    assert "  URL:  https://auth.example.com/login?state=abc" in out
    assert "  site: auth.example.com" in out
    assert any("Nothing is opened for you" in line for line in out)


# --- stdin ----------------------------------------------------------------------------


async def test_stdin_reading_runs_in_a_thread_and_does_not_block_trio(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    typed = threading.Event()

    def blocking_input(prompt: str) -> str:
        assert typed.wait(timeout=5)
        return f"typed after {prompt}"

    monkeypatch.setattr("builtins.input", blocking_input)
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            results: list[str | None] = []

            async def read() -> None:
                results.append(await stdin_line("> "))

            nursery.start_soon(read)
            await trio.testing.wait_all_tasks_blocked()
            typed.set()  # only reachable because the loop is not blocked
    assert results == ["typed after > "]


async def test_stdin_end_of_input_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    def closed(prompt: str) -> str:
        raise EOFError

    monkeypatch.setattr("builtins.input", closed)
    with trio.fail_after(5):
        assert await stdin_line("> ") is None

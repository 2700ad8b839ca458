"""TerminalForm driven by scripted input lines: no TTY, no sleeps."""

from __future__ import annotations

import io
import os
from typing import Any

import pytest
import trio

from bridge.elicit import TerminalForm, line_reader, read_stdin_line
from bridge.host import run_in_process
from runtime.lowlevel import ElicitationRequest, ElicitReply
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


@pytest.mark.parametrize(
    ("url", "site"),
    [
        # What stands before an @ is no site: the browser goes to evil.example.
        (
            "https://accounts.google.com@evil.example/login",
            "evil.example (not 'accounts.google.com': that is written before its @)",
        ),
        # A Cyrillic first letter: the ASCII form a browser may show instead.
        (
            "https://\u0430pple.com/",
            "xn--pple-43d.com (written '\u0430pple.com': not only ASCII letters)",
        ),
        ("https://Auth.Example.com:8443/x", "auth.example.com, port 8443"),
        ("https://[::1/", "(none: the URL cannot be read)"),
        ("mailto:someone", "(none)"),
    ],
)
async def test_url_mode_shows_the_host_the_url_really_goes_to(
    url: str, site: str
) -> None:
    request = ElicitationRequest(message="Sign in", mode="url", url=url)
    _, out = await fill(["no"], request)
    assert f"  site: {site}" in out


# --- stdin ----------------------------------------------------------------------------


async def test_reading_the_terminal_does_not_block_trio() -> None:
    read_end, write_end = os.pipe()
    out = io.StringIO()
    try:
        with trio.fail_after(5):
            async with trio.open_nursery() as nursery:
                results: list[str | None] = []

                async def read() -> None:
                    results.append(await read_stdin_line("> ", out, fd=read_end))

                nursery.start_soon(read)
                await trio.testing.wait_all_tasks_blocked()
                os.write(write_end, b"typed\n")  # reachable: the loop runs
        assert results == ["typed"]
        assert out.getvalue() == "> "
    finally:
        os.close(read_end)
        os.close(write_end)


async def test_a_withdrawn_question_loses_no_line_and_blocks_nothing() -> None:
    read_end, write_end = os.pipe()
    out = io.StringIO()
    try:
        with trio.move_on_after(0.05):  # the question is withdrawn
            await read_stdin_line("> ", out, fd=read_end)
        os.write(write_end, "first\nsecond é\nthird".encode())
        os.close(write_end)
        with trio.fail_after(5):
            lines = [await read_stdin_line("> ", out, fd=read_end) for _ in range(4)]
        assert lines == ["first", "second é", "third", None]
    finally:
        os.close(read_end)


async def test_stdin_end_of_input_is_none() -> None:
    read_end, write_end = os.pipe()
    os.close(write_end)
    try:
        with trio.fail_after(5):
            assert await read_stdin_line("> ", io.StringIO(), fd=read_end) is None
    finally:
        os.close(read_end)


# --- commands, help, one form at a time ----------------------------------------------

ONE_FIELD: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string", "title": "City"}},
    "required": ["city"],
}


def ask(key: str = "trip") -> ElicitationRequest:
    return ElicitationRequest(message="Where?", requested_schema=ONE_FIELD, key=key)


@pytest.mark.parametrize("word", [":quit", ":exit", ":QUIT", ":cancel"])
async def test_quit_and_exit_cancel_the_form(word: str) -> None:
    reply, _ = await fill([word], ask())
    assert reply == ElicitReply(action="cancel")


async def test_an_unknown_command_is_not_an_answer_and_a_double_colon_is() -> None:
    reply, out = await fill([":lisbon", "::x"], ask())
    assert reply == ElicitReply(action="accept", content={"city": ":x"})
    assert len(errors(out)) == 1
    assert "unknown command :lisbon" in errors(out)[0]


async def test_the_help_line_is_shown_with_the_first_form_only_and_on_help() -> None:
    out: list[str] = []
    lines = ["Rome", ":help", "Oslo"]
    form = TerminalForm(read_line=line_reader(lines, echo=out.append), write=out.append)
    with trio.fail_after(5):
        await form.handle(ask())
        first = len(out)
        second = await form.handle(ask())
    helps = [i for i, line in enumerate(out) if line.startswith("Enter accepts")]
    asked = out.index("City: :help")
    assert helps == [helps[0], asked + 1]  # with the first form, then on :help
    assert helps[0] < first < asked
    assert second == ElicitReply(action="accept", content={"city": "Oslo"})


async def test_concurrent_forms_are_asked_one_whole_form_at_a_time() -> None:
    out: list[str] = []
    lines = ["Rome", "Oslo"]
    form = TerminalForm(read_line=line_reader(lines, echo=out.append), write=out.append)
    replies: dict[str, ElicitReply] = {}

    async def one(key: str) -> None:
        replies[key] = await form.handle(ask(key))

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(one, "a")
            nursery.start_soon(one, "b")
    headers = [i for i, line in enumerate(out) if line.startswith("── Form")]
    answers = [i for i, line in enumerate(out) if line.endswith(("Rome", "Oslo"))]
    assert len(headers) == 2
    assert headers[0] < answers[0] < headers[1] < answers[1]
    assert {r.content["city"] for r in replies.values() if r.content} == {
        "Rome",
        "Oslo",
    }


# --- a server's words -----------------------------------------------------------------

FORGED = "yieldmcp: error: FORGED"
EVIL = f"\x1b[31mred\x1b[0m\n{FORGED}"
ONE = f"red {FORGED}"  # EVIL, shown on one line


async def test_a_servers_words_in_a_form_print_no_line_of_their_own() -> None:
    # A title, a key, a description, a choice, a default, a bound or a context
    # value holding a line break printed a line of the server's at the left
    # edge; each is one line now, and the message keeps its lines indented.
    schema = {
        "type": "object",
        "properties": {
            "x" + EVIL: {
                "type": "string",
                "title": "T" + EVIL,
                "description": "D" + EVIL,
                "enum": ["a" + EVIL, "b"],
                "enumNames": ["A" + EVIL, "B"],
                "default": "a" + EVIL,
            },
            "n": {"type": "integer", "minimum": "0" + EVIL},
        },
        "required": ["n"],
    }
    request = ElicitationRequest(
        message=f"M{EVIL}\nsecond",
        requested_schema=schema,
        key="k" + EVIL,
        context={"c" + EVIL: "one", "board": "X|O\nO|X"},
    )
    reply, out = await fill(["", ":cancel"], request)
    assert reply == ElicitReply(action="cancel")
    assert [line for line in out if "\n" in line or line.startswith(FORGED)] == []
    assert out[0].startswith(f"── Form: k{ONE} ─")
    assert out[1:4] == ["Mred", f"  {FORGED}", "  second"]
    assert out[4:8] == [f"  c{ONE}: one", "  board:", "    X|O", "    O|X"]
    assert f"[1/2] T{ONE} (optional)" in out
    assert f"  D{ONE}" in out
    assert f"  1) A{ONE} (a{ONE})" in out
    assert f"T{ONE} [a{ONE}]: " in out
    assert f"  a whole number, at least 0{ONE}" in out


async def test_a_servers_url_is_one_line() -> None:
    request = ElicitationRequest(
        message="Sign in",
        mode="url",
        url="https://a.example/" + EVIL,
        elicitation_id="e",
    )
    _, out = await fill(["no"], request)
    assert f"  URL:  https://a.example/{ONE}" in out
    assert not any(line.startswith(FORGED) for line in out)


async def test_a_servers_word_on_one_line_is_cut() -> None:
    from bridge.elicit import MAX_LINE_SHOWN

    big = 1_000_000
    schema = {
        "type": "object",
        "properties": {"x": {"type": "string", "title": "T" * big}},
    }
    request = ElicitationRequest(message="m", requested_schema=schema)
    _, out = await fill([":cancel"], request)
    title = f"{'T' * MAX_LINE_SHOWN}… ({big - MAX_LINE_SHOWN:,} more characters)"
    assert f"[1/1] {title} (optional)" in out
    assert max(len(line) for line in out) < MAX_LINE_SHOWN + 100


def _one_field(field: dict[str, Any]) -> ElicitationRequest:
    schema = {"type": "object", "properties": {"a": field}, "required": ["a"]}
    return ElicitationRequest(message="m", requested_schema=schema, key="k")


async def test_a_servers_backtracking_pattern_is_checked_in_linear_time() -> None:
    # Python's re took minutes on this typed name against the server's
    # pattern, on the event loop: --timeout could not end it.
    field = {"type": "string", "title": "Full name", "pattern": r"^(\w+\s?)*$"}
    name = "Jonathan Alexander Smithson the Third"
    reply, out = await fill([f"{name}!", name], _one_field(field))
    assert reply.content == {"a": name}
    assert [e.startswith("! ") and "does not match" in e for e in errors(out)] == [True]


@pytest.mark.parametrize(
    "field",
    [
        {"$ref": "#"},
        {"type": "string", "allOf": [{"$ref": "#"}]},
        {"type": "string", "$ref": "https://example.invalid/name.json"},
        {"type": "string", "pattern": "(?<=a"},  # no regex at all
    ],
    ids=["ref-itself", "ref-itself-nested", "ref-elsewhere", "bad-pattern"],
)
async def test_a_field_whose_schema_cannot_be_checked_takes_the_answer(
    field: dict[str, Any],
) -> None:
    # {"$ref": "#"} recursed until Python's limit: a RecursionError and a
    # 2,000-line traceback. What cannot be checked here, the server checks.
    reply, _ = await fill(["hello"], _one_field({"title": "A", **field}))
    assert reply.content == {"a": "hello"}

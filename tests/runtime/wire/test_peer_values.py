"""A pattern is searched in time linear in the text a peer chose.

The server checks three such texts against an author's schema on its event
loop: a client's arguments to a tool with an explicit ``input_schema``, a
client's answer to a form, and a model's structured answer. ``jsonschema``
searched an author's ``pattern`` with Python's ``re``, which backtracks: 30
characters against ``^(\\w+\\s?)*$`` took minutes, and every other call
waited. ``offline_validator`` searches with jsonschema-rs's engine instead,
with jsonschema's own words.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import jsonschema
from hypothesis import given
from hypothesis import strategies as st

from runtime.lowlevel import offline_validator
from tests.helpers import ROOT

NAME = r"^(\w+\s?)*$"  # an author's ordinary "a name" pattern
HOSTILE = "a" * 40 + "!"  # about 2**40 ways to split it, for a backtracking engine

_EVERY_PATH = f"""
from runtime import tool
from runtime.errors import InvalidArguments, RemoteProtocolError
from runtime.lowlevel import ElicitationRequest
from runtime.sampling.outcome import _first_schema_error
import decoders.mcp as dec

name = {{"type": "string", "pattern": {NAME!r}}}
schema = {{"type": "object", "properties": {{"name": name}}}}
typed = {{"^(a+)+$": {{"type": "integer"}}}}
keyed = {{"type": "object", "patternProperties": typed, "additionalProperties": False}}
# unevaluatedProperties finds the keys patternProperties evaluate, beneath
# an allOf and a $ref as well
defs = {{"t": {{"patternProperties": typed}}}}
inner = {{"$defs": defs, "allOf": [{{"$ref": "#/$defs/t"}}]}}
unevaluated = {{**inner, "type": "object", "unevaluatedProperties": False}}

@tool(input_schema=schema)
def named(ctx) -> str:
    return "ok"

@tool(input_schema=keyed)
def keys(ctx) -> str:
    return "ok"

@tool(input_schema=unevaluated)
def left(ctx) -> str:
    return "ok"

calls = [
    (named, {{"name": {HOSTILE!r}}}),
    (keys, {{{HOSTILE!r}: "x"}}),
    (left, {{{HOSTILE!r}: "x"}}),
]
for checked, arguments in calls:
    try:
        checked.check_arguments(arguments)
        print("arguments: accepted")
    except InvalidArguments as exc:
        print("arguments:", exc.problems[0])
request = ElicitationRequest(message="m", requested_schema=schema)
answer = {{"action": "accept", "content": {{"name": {HOSTILE!r}}}}}
try:
    dec.elicit_reply(answer, request)
except RemoteProtocolError as exc:
    print("answer:", exc)
print("model:", _first_schema_error(schema, {{"name": {HOSTILE!r}}}))
"""


def test_a_backtracking_pattern_is_searched_in_linear_time_on_every_path() -> None:
    # In a process of its own: the old code would take years, not fail.
    done = subprocess.run(
        [sys.executable, "-c", _EVERY_PATH],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"arguments: name: '{HOSTILE}' does not match '^(\\\\w+\\\\s?)*$'",
        f"arguments: <root>: '{HOSTILE}' does not match any of the regexes: '^(a+)+$'",
        f"arguments: <root>: Unevaluated properties are not allowed ('{HOSTILE}' "
        "was unexpected)",
        "answer: the accepted elicitation content does not match the requested "
        "schema: field 'name' breaks pattern: \"^(\\\\w+\\\\s?)*$\"",
        f"model: name: '{HOSTILE}' does not match '^(\\\\w+\\\\s?)*$'",
    ]


PATTERNS = st.sampled_from(["^[a-c]+$", "b", "^a", "c$", "^(a|bc)*$", "[0-9]{2}", ""])
TEXTS = st.text("abc019 ", max_size=8)


# jsonschema joins patternProperties' patterns into one for
# additionalProperties, and takes an empty join for no pattern: "" then
# matches no key there (against the spec, under which "" matches every key).
KEY_PATTERNS = PATTERNS.filter(bool)


@given(
    PATTERNS,
    st.lists(KEY_PATTERNS, max_size=2, unique=True),
    st.booleans(),
    st.dictionaries(TEXTS, TEXTS | st.integers(), max_size=4),
)
def test_what_it_finds_is_what_jsonschema_finds_with_re(
    pattern: str,
    key_patterns: list[str],
    closed: bool,
    value: dict[str, Any],
) -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "additionalProperties": (
            False if closed else {"type": "string", "pattern": pattern}
        ),
        "patternProperties": {p: {"type": "integer"} for p in key_patterns},
    }
    ours = offline_validator(schema).iter_errors(value)
    theirs = jsonschema.Draft202012Validator(schema).iter_errors(value)
    shown = [(list(e.absolute_path), e.message) for e in ours]  # same words
    assert sorted(shown) == sorted((list(e.absolute_path), e.message) for e in theirs)


@given(
    st.lists(KEY_PATTERNS, max_size=2, unique=True),
    st.sampled_from(["direct", "allOf", "ref", "if", "dependent"]),
    st.booleans(),
    st.dictionaries(TEXTS, TEXTS | st.integers(), max_size=4),
)
def test_unevaluated_properties_find_what_jsonschema_finds_with_re(
    key_patterns: list[str], where: str, closed: bool, value: dict[str, Any]
) -> None:
    evaluating: dict[str, Any] = {
        "properties": {"a": {"type": "string"}},
        "patternProperties": {p: {"type": "integer"} for p in key_patterns},
    }
    placed: dict[str, Any] = {
        "direct": evaluating,
        "allOf": {"allOf": [evaluating]},
        "ref": {"$defs": {"e": evaluating}, "$ref": "#/$defs/e"},
        "if": {"if": {"required": ["a"]}, "then": evaluating, "else": evaluating},
        "dependent": {"dependentSchemas": {"a": evaluating}},
    }[where]
    schema = {
        **placed,
        "type": "object",
        "unevaluatedProperties": False if closed else {"type": "string"},
    }
    ours = offline_validator(schema).iter_errors(value)
    theirs = jsonschema.Draft202012Validator(schema).iter_errors(value)
    shown = [(list(e.absolute_path), e.message) for e in ours]  # same words
    assert sorted(shown) == sorted((list(e.absolute_path), e.message) for e in theirs)

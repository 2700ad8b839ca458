"""``bridge.jsonrpc.messages``: text Unicode cannot hold, and JSON nested
past the parser's depth, read and written.

JavaScript's ``JSON.stringify`` writes a broken string's lone surrogate as an
escape (``"\\udce9"``); Python's ``json.dumps`` does too. The JSON grammar
allows it, pydantic's parser refuses it, and a refused response used to leave
the request it answered waiting until its timeout. JSON nested past 200
levels is valid too, and was "not valid JSON", its request waiting for ever.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bridge.jsonrpc.messages import (
    NESTED_TOO_DEEP,
    PARSE_ERROR,
    ErrorData,
    Ignored,
    Invalid,
    Notification,
    Request,
    Response,
    dumps,
    parse,
)
from runtime.errors import LocalProtocolError
from runtime.lowlevel import MAX_MESSAGE_DEPTH

# Surrogates drawn often (any character draws them rarely), beside the rest.
EVERY_CODE_POINT = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF) | (
    st.characters(codec=None, categories=None)
)


def _answer(text: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 7, "result": {"text": text}}).encode()


def _as_unicode_reads_it(text: str) -> str:
    # Pairs of surrogates are one character, a surrogate alone is U+FFFD.
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


@given(text=st.text(alphabet=EVERY_CODE_POINT))
def test_any_escaped_text_is_read_lone_surrogates_as_replacement(text: str) -> None:
    parsed = parse(_answer(text))
    assert isinstance(parsed, Response)
    assert parsed.result == {"text": _as_unicode_reads_it(text)}


def test_an_escaped_backslash_before_u_is_no_escape() -> None:
    raw = rb'{"jsonrpc":"2.0","id":1,"result":{"t":"\\udce9 \udce9 \ud83d\ude00"}}'
    parsed = parse(raw)
    assert isinstance(parsed, Response)
    assert parsed.result == {"t": "\\udce9 \ufffd \U0001f600"}


def test_a_request_with_a_lone_surrogate_is_read_too() -> None:
    parsed = parse(
        rb'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"a":"\ud800"}}'
    )
    assert isinstance(parsed, Request)
    assert parsed.params == {"a": "\ufffd"}


def test_json_that_is_broken_otherwise_is_still_a_parse_error() -> None:
    parsed = parse(rb'{"jsonrpc":"2.0","id":1,"result":{"t":"\udce9"')
    assert isinstance(parsed, Invalid)
    assert parsed.error.code == -32700


def test_a_reply_json_cannot_carry_is_written_as_an_internal_error() -> None:
    for result in ({"text": "caf\udce9"}, {"value": object()}):
        written = json.loads(dumps(Response(3, result)))
        assert written == {
            "jsonrpc": "2.0",
            "id": 3,
            "error": {
                "code": -32603,
                "message": "Internal error: the reply could not be written",
            },
        }


def test_another_message_json_cannot_carry_is_refused() -> None:
    with pytest.raises(LocalProtocolError, match="could not be written"):
        dumps(Notification("notifications/message", {"data": object()}))


def nested(levels: int) -> str:
    """JSON ``levels`` arrays deep."""
    return "[" * levels + "1" + "]" * levels


def line(head: str, inside: str) -> str:
    """A message: ``head`` (its members before the nested one), then
    ``"a": inside`` in an object (``params`` or ``result``)."""
    return "{" + head + ',"x":{"a":' + inside + "}}"


def test_the_parser_reads_200_levels_and_no_more() -> None:
    # MAX_MESSAGE_DEPTH is pydantic_core's own limit: the message's object
    # is a level, "x" another, then the arrays.
    head = '"jsonrpc":"2.0","id":1,"method":"m"'
    assert isinstance(parse(line(head, nested(198))), Request)
    assert parse(line(head, nested(199))) == Invalid(
        1, ErrorData(PARSE_ERROR, NESTED_TOO_DEEP)
    )
    assert MAX_MESSAGE_DEPTH == 200


def test_json_nested_too_deep_is_refused_saying_so_not_as_invalid() -> None:
    refused = parse(nested(300))
    assert refused == Invalid(None, ErrorData(PARSE_ERROR, NESTED_TOO_DEEP))
    assert NESTED_TOO_DEEP == (
        "Parse error: JSON nested deeper than 200 levels, the most a message may"
    )


def test_a_request_nested_too_deep_is_answered_with_its_id() -> None:
    read = parse(line('"jsonrpc":"2.0","id":7,"method":"m"', nested(300)))
    assert read == Invalid(7, ErrorData(PARSE_ERROR, NESTED_TOO_DEEP))


def test_a_response_nested_too_deep_names_the_request_it_answers() -> None:
    read = parse('{"jsonrpc":"2.0","id":"7","result":' + nested(300) + "}")
    assert read == Ignored(
        "a response nested deeper than 200 levels, the most a message may",
        answers=7,  # as we minted it
    )


def test_a_notification_nested_too_deep_is_not_answered() -> None:
    read = parse(line('"jsonrpc":"2.0","method":"m"', nested(300)))
    assert isinstance(read, Ignored)
    assert read.answers is None


def test_a_message_too_deep_for_python_json_too_is_lost() -> None:
    read = parse('{"jsonrpc":"2.0","id":7,"result":' + nested(100_000) + "}")
    assert read == Invalid(None, ErrorData(PARSE_ERROR, NESTED_TOO_DEEP), lost=True)

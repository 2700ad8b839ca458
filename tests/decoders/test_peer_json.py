"""``decoders.peer_json.loads``: a provider's JSON as an MCP message carries it."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from decoders.peer_json import MAX_DEPTH, loads

# What a provider sends: JSON of finite numbers, any text (surrogate pairs
# written as escapes, as json.dumps writes them), shallow enough.
TEXT = st.text(st.characters(exclude_categories=["Cs"]))
VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4)
    ),
    max_leaves=30,
)


@given(VALUES, st.booleans())
def test_json_an_mcp_message_carries_reads_as_it_was(value: Any, ascii: bool) -> None:
    assert loads(json.dumps(value, ensure_ascii=ascii)) == value


@given(TEXT, TEXT)
def test_a_lone_surrogate_escape_is_the_replacement_character(
    before: str, after: str
) -> None:
    text = json.dumps(before)[:-1] + "\\udc80" + json.dumps(after)[1:]
    assert loads(f'{{"k{json.dumps(before)[1:-1]}\\ud800": {text}}}') == {
        f"k{before}\ufffd": f"{before}\ufffd{after}"
    }


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("[" * MAX_DEPTH + "]" * MAX_DEPTH, None),
        ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "nested deeper than 100"),
        ('{"a":' * 5000 + "1" + "}" * 5000, "nested deeper than 100"),  # past Python
        ("[NaN]", "NaN is not a JSON number"),
        ('{"x": -Infinity}', "-Infinity is not a JSON number"),
        ("[1e400]", "past a float's range"),
    ],
)
def test_what_no_mcp_message_carries_is_one_short_error(
    text: str, said: str | None
) -> None:
    if said is None:
        assert loads(text) is not None
        return
    with pytest.raises(ValueError, match=re.escape(said)) as raised:
        loads(text)
    assert len(str(raised.value)) < 80

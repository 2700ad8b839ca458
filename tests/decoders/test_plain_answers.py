"""The answers a server reads without building either era's models.

``plain_elicit_result`` and ``plain_sampling_result`` recognise the answers
most clients send, so a server's first answer does not pay for building an
era's ~150 ``mcp-types`` models. What they accept must pass both eras' models
and both official ``schema.json`` files; what they are unsure of is checked
by the models as before.
"""

from __future__ import annotations

from typing import Any

import mcp_types._v2025_11_25 as v2025
import mcp_types._v2026_07_28 as v2026
from hypothesis import event, given
from hypothesis import strategies as st

from decoders._mcp_answers import plain_elicit_result, plain_sampling_result
from runtime.lowlevel import check_json
from tests.mcp_schema import ERAS, validate

_ANY: st.SearchStrategy[Any] = st.one_of(
    st.text(max_size=4),
    st.integers(),
    st.booleans(),
    st.none(),
    st.floats(),
    st.lists(st.text(max_size=3), max_size=3),
    st.lists(st.one_of(st.integers(), st.none()), max_size=2),
    st.dictionaries(st.text(max_size=3), st.text(max_size=3), max_size=2),
)
_VALUE = st.one_of(
    st.text(max_size=4),
    st.integers(),
    st.booleans(),
    st.none(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.lists(st.text(max_size=3), max_size=3),
)
_META = st.dictionaries(st.text(max_size=5), _ANY, max_size=2)


def _spoiled(draw: st.DrawFn, answer: dict[str, Any]) -> dict[str, Any]:
    """``answer`` as a client sends it, or with one thing wrong."""
    wrong = draw(st.sampled_from(["none", "none", "value", "key"]))
    if wrong == "value" and answer:
        answer[draw(st.sampled_from(sorted(answer)))] = draw(_ANY)
    elif wrong == "key":
        answer[draw(st.sampled_from(["x", "_meta", "content", "isError"]))] = draw(_ANY)
    return answer


@st.composite
def _elicit_results(draw: st.DrawFn) -> dict[str, Any]:
    answer = draw(
        st.fixed_dictionaries(
            {"action": st.sampled_from(["accept", "decline", "cancel"])},
            optional={
                "content": st.none()
                | st.dictionaries(st.text(max_size=5), _VALUE, max_size=3),
                "_meta": _META,
            },
        )
    )
    return _spoiled(draw, answer)


@st.composite
def _sampling_results(draw: st.DrawFn) -> dict[str, Any]:
    text = st.fixed_dictionaries({"type": st.just("text"), "text": st.text()})
    answer = draw(
        st.fixed_dictionaries(
            {
                "role": st.sampled_from(["assistant", "user"]),
                "model": st.text(max_size=5),
                "content": text,
            },
            optional={"stopReason": st.sampled_from(["endTurn", "maxTokens"]),
                      "_meta": _META},
        )
    )  # fmt: skip
    if draw(st.booleans()):
        answer["content"] = _spoiled(draw, answer["content"])
    return _spoiled(draw, answer)


def _valid_everywhere(type_name: str, answer: dict[str, Any]) -> None:
    for models in (v2025, v2026):  # the decoders' own rule: what they accept
        check_json(getattr(models, type_name), answer)
    content = answer.get("content") or {}
    if any(type(v) is float and not v.is_integer() for v in content.values()):
        return  # schema.json types form answers as integers (PROTOCOL.md §3.2)
    for era in ERAS:
        validate(era, type_name, answer)


@given(_elicit_results())
def test_an_elicit_result_read_without_the_models_is_valid_mcp(
    answer: dict[str, Any],
) -> None:
    plain = plain_elicit_result(answer)
    event(f"plain: {plain}")
    if plain:
        _valid_everywhere("ElicitResult", answer)


@given(_sampling_results())
def test_a_sampling_result_read_without_the_models_is_valid_mcp(
    answer: dict[str, Any],
) -> None:
    plain = plain_sampling_result(answer)
    event(f"plain: {plain}")
    if plain:
        _valid_everywhere("CreateMessageResult", answer)


def test_what_our_client_sends_is_read_without_the_models() -> None:
    assert plain_elicit_result({"action": "decline"})
    assert plain_elicit_result(
        {"action": "accept", "content": {"seat": "aisle", "nights": 3, "tags": ["a"]}}
    )
    assert plain_sampling_result({
        "role": "assistant",
        "model": "offline",
        "content": {"type": "text", "text": "hi"},
        "stopReason": "endTurn",
        "_meta": {"io.yieldmcp/usage": {"inputTokens": 3, "outputTokens": 1}},
    })  # fmt: skip

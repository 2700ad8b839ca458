"""The payloads read without building either era's models: the answers a
server reads, the questions and tool results a client reads.

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
from decoders._mcp_requests import plain_form_request, plain_sampling_request
from decoders._mcp_tools import plain_tool_result
from runtime.lowlevel import check_form_properties, check_json
from tests.mcp_schema import ERAS, validate
from tests.runtime.wire.test_plain_forms import form_fields

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


@st.composite
def _form_requests(draw: st.DrawFn) -> dict[str, Any]:
    schema: dict[str, Any] = draw(
        st.fixed_dictionaries(
            {
                "type": st.just("object"),
                "properties": st.dictionaries(
                    st.text(max_size=5), form_fields(), max_size=2
                ),
            },
            optional={"required": st.lists(st.text(max_size=5), max_size=2)},
        )
    )
    request = draw(
        st.fixed_dictionaries(
            {
                "mode": st.just("form"),
                "message": st.text(max_size=5),
                "requestedSchema": st.just(_spoiled(draw, schema)),
            },
            optional={"_meta": _META},
        )
    )
    return _spoiled(draw, request)


@given(_form_requests())
def test_a_form_request_read_without_the_models_is_one_they_accept(
    request: dict[str, Any],
) -> None:
    # A client's first form used to build both eras' models to read it.
    plain = plain_form_request(request)
    event(f"plain: {plain}")
    if not plain:
        return
    # The decoders' rule is "some era's model accepts"; these pass both.
    for models in (v2025, v2026):
        check_json(models.ElicitRequestFormParams, request)
        check_form_properties(models, request["requestedSchema"]["properties"])
    if "_meta" not in request:
        for era in ERAS:
            validate(era, "ElicitRequestFormParams", request)


_TEXT_BLOCK = st.fixed_dictionaries(
    {"type": st.just("text"), "text": st.text(max_size=5)}
)


@st.composite
def _sampling_requests(draw: st.DrawFn) -> dict[str, Any]:
    def message() -> st.SearchStrategy[dict[str, Any]]:
        content = _TEXT_BLOCK | st.lists(_TEXT_BLOCK, max_size=2)
        role = st.sampled_from(["user", "assistant"])
        return st.fixed_dictionaries({"role": role, "content": content})

    messages = draw(st.lists(message().map(lambda m: _spoiled(draw, m)), max_size=3))
    request = draw(
        st.fixed_dictionaries(
            {"messages": st.just(messages), "maxTokens": st.integers(1, 10**6)},
            optional={
                "systemPrompt": st.text(max_size=5),
                "temperature": st.floats(0, 2),
                "_meta": _META,
            },
        )
    )
    return _spoiled(draw, request)


@given(_sampling_requests())
def test_a_sampling_request_read_without_the_models_is_one_they_accept(
    request: dict[str, Any],
) -> None:
    plain = plain_sampling_request(request)
    event(f"plain: {plain}")
    if plain:
        _valid_everywhere("CreateMessageRequestParams", request)


@st.composite
def _tool_results(draw: st.DrawFn) -> dict[str, Any]:
    result = draw(
        st.fixed_dictionaries(
            {"content": st.lists(_TEXT_BLOCK, max_size=2)},
            optional={
                "structuredContent": st.dictionaries(st.text(max_size=3), _ANY),
                "isError": st.booleans(),
                "_meta": _META,
                "resultType": st.just("complete"),
            },
        )
    )
    return _spoiled(draw, result)


@given(_tool_results())
def test_a_tool_result_read_without_the_models_is_one_they_accept(
    result: dict[str, Any],
) -> None:
    plain = plain_tool_result(result)
    event(f"plain: {plain}")
    if plain:
        # Valid as 2025-11-25 always, and as 2026-07-28 once it says its
        # resultType (required there): the era the decoder tries first.
        eras = [("2025-11-25", v2025)]
        if "resultType" in result:
            eras.append(("2026-07-28", v2026))
        for era, models in eras:
            check_json(models.CallToolResult, result)
            validate(era, "CallToolResult", result)

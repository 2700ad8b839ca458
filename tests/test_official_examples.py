"""The vendored official MCP schemas and examples, and our codecs against them.

* The vendored files are exactly the pinned ones (sha256 in ``PINNED.json``).
* All 129 official 2026-07-28 examples validate against the 2026-07-28 schema
  and decode through the matching ``mcp-types`` model.
* Examples of payloads our decoders read decode through them, and re-encode to
  JSON that validates (and, where nothing is normalised, to the same JSON).
* The schema kit (``tests/mcp_schema.py``) classifies whole messages correctly.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import mcp_types._v2026_07_28 as v2026
import pytest
from pydantic import TypeAdapter

from decoders import mcp as dec
from encoders import mcp as enc
from runtime import Text, tool
from runtime.context import Context
from tests.mcp_schema import (
    DATA,
    ERAS,
    EXAMPLE_FILES,
    EXAMPLES,
    SchemaViolation,
    example_id,
    is_valid,
    load_example,
    result_type,
    validate,
    validate_message,
)

PINNED = json.loads((DATA / "PINNED.json").read_text(encoding="utf-8"))
MODERN = "2026-07-28"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- pinning --------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(PINNED["files"]))
def test_vendored_schema_matches_its_pinned_sha256(name: str) -> None:
    assert _sha256(DATA / name) == PINNED["files"][name]["sha256"]


def test_vendored_examples_match_their_pinned_count_and_digest() -> None:
    pin = PINNED["examples"]["2026-07-28/examples"]
    files = sorted(p.relative_to(EXAMPLES).as_posix() for p in EXAMPLES.rglob("*"))
    files = [f for f in files if (EXAMPLES / f).is_file()]
    listing = "".join(f"{_sha256(EXAMPLES / f)}  {f}\n" for f in files)
    assert len(files) == pin["count"] == 129
    assert hashlib.sha256(listing.encode()).hexdigest() == pin["sha256"]


def test_pins_name_the_upstream_commit() -> None:
    assert PINNED["commit"] == "b0f60ba5409db7a6582440a7b473cc0398890f15"
    assert PINNED["repository"].endswith("modelcontextprotocol/modelcontextprotocol")


# --- every example: schema and mcp-types ----------------------------------------------

# mcp-types 2.3.0 has no model for this one envelope type; it is the JSON-RPC
# result envelope around a SubscriptionsListenResult, so it is decoded as both.
_MISSING_MODELS = {"SubscriptionsListenResultResponse"}


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=example_id)
def test_official_example_validates_against_the_2026_schema(path: Path) -> None:
    validate(MODERN, path.parent.name, load_example(path))


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=example_id)
def test_official_example_decodes_through_its_mcp_types_model(path: Path) -> None:
    type_name, data = path.parent.name, load_example(path)
    if type_name in _MISSING_MODELS:
        v2026.JSONRPCResultResponse.model_validate(data, strict=True, by_alias=True)
        v2026.SubscriptionsListenResult.model_validate(
            data["result"], strict=True, by_alias=True, by_name=False
        )
        return
    adapter: TypeAdapter[Any] = TypeAdapter(getattr(v2026, type_name))
    adapter.validate_python(data, strict=True, by_alias=True, by_name=False)


def test_every_example_type_has_a_model_except_the_known_gap() -> None:
    missing = {p.parent.name for p in EXAMPLE_FILES} - set(dir(v2026))
    assert missing == _MISSING_MODELS


# --- examples our decoders read -------------------------------------------------------


def _both_eras(type_name: str, instance: Any) -> None:
    for era in ERAS:
        validate(era, type_name, instance)


@pytest.mark.parametrize(
    "name",
    ["basic-request", "request-with-tools", "follow-up-with-tool-results"],
)
def test_sampling_params_example_round_trips_exactly(name: str) -> None:
    params = load_example(f"CreateMessageRequestParams/{name}.json")
    request = dec.sampling_request(params)
    for era in ERAS:
        out = enc.sampling_params(request, era=era)
        assert out == params
        validate(era, "CreateMessageRequestParams", out)


def test_sampling_request_example_params_round_trip_exactly() -> None:
    wrapped = load_example("CreateMessageRequest/sampling-request.json")
    request = dec.sampling_request(wrapped["params"])
    assert enc.sampling_params(request, era=MODERN) == wrapped["params"]


@pytest.mark.parametrize(
    "name", ["text-response", "final-response", "tool-use-response"]
)
def test_sampling_result_example_round_trips_exactly(name: str) -> None:
    result = load_example(f"CreateMessageResult/{name}.json")
    reply = dec.sample_reply(result)
    for era in ERAS:
        out = enc.sample_result(reply, era=era)
        assert out == result
        validate(era, "CreateMessageResult", out)


# Each official ElicitResult example answers one of the official requests.
_ELICIT_PAIRS = [
    ("ElicitRequestFormParams/elicit-single-field.json", "input-single-field"),
    ("ElicitRequestFormParams/elicit-multiple-fields.json", "input-multiple-fields"),
    ("ElicitRequestURLParams/elicit-sensitive-data.json", "accept-url-mode-no-content"),
]


@pytest.mark.parametrize(("request_path", "answer"), _ELICIT_PAIRS)
def test_elicitation_examples_round_trip_exactly(
    request_path: str, answer: str
) -> None:
    params = load_example(request_path)
    request = dec.elicitation_request(params)
    assert enc.elicitation_params(request, era=MODERN) == params
    validate(MODERN, "ElicitRequestParams", params)

    result = load_example(f"ElicitResult/{answer}.json")
    reply = dec.elicit_reply(result, request)
    out = enc.elicit_result(reply)
    assert out == result
    _both_eras("ElicitResult", out)


def test_elicit_request_example_params_round_trip_exactly() -> None:
    wrapped = load_example("ElicitRequest/elicitation-request.json")
    request = dec.elicitation_request(wrapped["params"])
    assert enc.elicitation_params(request, era=MODERN) == wrapped["params"]


def test_input_requests_and_responses_examples_decode_pairwise() -> None:
    requests = load_example(
        "InputRequests/elicitation-and-sampling-input-requests.json"
    )
    responses = load_example(
        "InputResponses/elicitation-and-sampling-input-responses.json"
    )
    elicit = dec.elicitation_request(requests["github_login"]["params"])
    reply = dec.elicit_reply(responses["github_login"], elicit)
    assert reply.content == {"name": "octocat"}
    sample = dec.sampling_request(requests["capital_of_france"]["params"])
    answer = dec.sample_reply(responses["capital_of_france"])
    rebuilt_requests = {
        "github_login": {
            "method": "elicitation/create",
            "params": enc.elicitation_params(elicit, era=MODERN),
        },
        "capital_of_france": {
            "method": "sampling/createMessage",
            "params": enc.sampling_params(sample, era=MODERN),
        },
    }
    rebuilt_responses = {
        "github_login": enc.elicit_result(reply),
        "capital_of_france": enc.sample_result(answer, era=MODERN),
    }
    assert rebuilt_requests == requests
    assert rebuilt_responses == responses
    validate(MODERN, "InputRequests", rebuilt_requests)
    validate(MODERN, "InputResponses", rebuilt_responses)


def test_input_required_result_example_requests_decode() -> None:
    result = load_example(
        "InputRequiredResult/"
        "input-required-result-with-elicitation-and-sampling-and-request-state.json"
    )
    requests = result["inputRequests"]
    elicit = dec.elicitation_request(requests["github_login"]["params"])
    assert elicit.mode == "form"  # mode is absent in this example: form by default
    sample = dec.sampling_request(requests["capital_of_france"]["params"])
    assert sample.max_tokens == 100
    validate(
        MODERN, "ElicitRequestFormParams", enc.elicitation_params(elicit, era=MODERN)
    )


@tool
def _echo(ctx: Context):  # no return annotation: what it returns is data
    return ""


@pytest.mark.parametrize(
    "name",
    [
        "invalid-tool-input-error",
        "result-with-array-structured-content",
        "result-with-structured-content",
        "result-with-unstructured-text",
    ],
)
def test_call_tool_result_example_decodes_and_re_encodes_validly(name: str) -> None:
    result = load_example(f"CallToolResult/{name}.json")
    decoded = dec.call_tool_result(result)
    assert all(isinstance(b, Text) for b in decoded.content)
    assert decoded.is_error == result.get("isError", False)
    assert decoded.structured_content == result.get("structuredContent")
    if decoded.is_error:
        out = enc.tool_error(decoded.text, era=MODERN)
    else:
        out = enc.tool_result(list(decoded.content), _echo, era=MODERN)
        if decoded.structured_content is not None:
            data = enc.tool_result(decoded.structured_content, _echo, era=MODERN)
            assert data["structuredContent"] == result["structuredContent"]
            validate(MODERN, "CallToolResult", data)
    assert out["content"] == result["content"]
    validate(MODERN, "CallToolResult", out)


def test_call_tool_result_response_example_result_decodes() -> None:
    response = load_example("CallToolResultResponse/call-tool-result-response.json")
    decoded = dec.call_tool_result(response["result"])
    assert decoded.text.startswith("Current weather in New York")
    assert (
        validate_message(MODERN, response, answering="tools/call") == "CallToolResult"
    )


@pytest.mark.parametrize("name", ["multiple-content-blocks", "single-content-block"])
def test_sampling_message_example_decodes_inside_a_request(name: str) -> None:
    message = load_example(f"SamplingMessage/{name}.json")
    history = [message]
    if name == "multiple-content-blocks":
        uses = [
            {"type": "tool_use", "id": b["toolUseId"], "name": "t", "input": {}}
            for b in message["content"]
        ]
        history = [{"role": "assistant", "content": uses}, message]
    params = {"messages": history, "maxTokens": 10}
    out = enc.sampling_params(dec.sampling_request(params), era=MODERN)
    assert out["messages"][-1] == message


@pytest.mark.parametrize(
    "path", sorted((EXAMPLES / "Tool").glob("*.json")), ids=example_id
)
def test_tool_example_decodes_as_a_sampling_tool(path: Path) -> None:
    tool_json = load_example(path)
    params = {
        "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
        "maxTokens": 10,
        "tools": [tool_json],
    }
    request = dec.sampling_request(params)
    (spec,) = request.tools
    assert (spec.name, spec.description) == (
        tool_json["name"],
        tool_json["description"],
    )
    assert spec.input_schema == tool_json["inputSchema"]
    validate(
        MODERN, "CreateMessageRequestParams", enc.sampling_params(request, era=MODERN)
    )


def test_model_preferences_example_round_trips_inside_a_request() -> None:
    prefs = load_example("ModelPreferences/with-hints-and-priorities.json")
    params = {
        "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
        "maxTokens": 10,
        "modelPreferences": prefs,
    }
    request = dec.sampling_request(params)
    assert enc.sampling_params(request, era=MODERN) == params


# --- the schema kit -------------------------------------------------------------------


def test_validate_reports_every_violation_with_its_path() -> None:
    with pytest.raises(SchemaViolation) as info:
        validate("2025-11-25", "CreateMessageResult", {"role": "robot", "content": []})
    text = str(info.value)
    assert "$.role" in text
    assert "'model' is a required property" in text


def test_validate_rejects_an_unknown_type_name() -> None:
    with pytest.raises(KeyError):
        validate(MODERN, "NoSuchType", {})


def test_validate_message_checks_a_request_by_its_method() -> None:
    frame = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "sampling/createMessage",
        "params": {"messages": [], "maxTokens": 10},
    }
    assert validate_message("2025-11-25", frame) == "CreateMessageRequest"
    frame["params"] = {"messages": []}
    with pytest.raises(SchemaViolation, match="maxTokens"):
        validate_message("2025-11-25", frame)


def test_validate_message_refuses_server_requests_in_2026() -> None:
    frame = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "sampling/createMessage",
        "params": {"messages": [], "maxTokens": 10},
    }
    with pytest.raises(SchemaViolation, match="inputRequests"):
        validate_message(MODERN, frame)


def test_validate_message_checks_notifications_and_errors() -> None:
    progress = {
        "jsonrpc": "2.0",
        "method": "notifications/progress",
        "params": {"progressToken": "t", "progress": 1},
    }
    error = {"jsonrpc": "2.0", "id": 3, "error": {"code": -32602, "message": "bad"}}
    for era in ERAS:
        assert validate_message(era, progress) == "ProgressNotification"
        assert validate_message(era, error) == "JSONRPCErrorResponse"
    with pytest.raises(SchemaViolation):
        validate_message(MODERN, {**progress, "params": {"progress": 1}})


def test_validate_message_checks_a_result_by_the_method_it_answers() -> None:
    ok = {"jsonrpc": "2.0", "id": 1, "result": {"content": []}}
    assert (
        validate_message("2025-11-25", ok, answering="tools/call") == "CallToolResult"
    )
    with pytest.raises(SchemaViolation, match="resultType"):
        validate_message(MODERN, ok, answering="tools/call")
    with pytest.raises(TypeError, match="answering"):
        validate_message(MODERN, ok)
    pong = {"jsonrpc": "2.0", "id": 2, "result": {}}
    assert validate_message("2025-11-25", pong, answering="ping") == "EmptyResult"


def test_result_type_knows_input_required_results_in_2026() -> None:
    interim = {"resultType": "input_required", "requestState": "s"}
    assert result_type(MODERN, "tools/call", interim) == "InputRequiredResult"
    assert result_type(MODERN, "tools/call", {"resultType": "complete"}) == (
        "CallToolResult"
    )
    assert is_valid(MODERN, "InputRequiredResult", interim)


def test_validate_message_refuses_an_unknown_method() -> None:
    with pytest.raises(SchemaViolation, match="not a method"):
        validate_message(MODERN, {"jsonrpc": "2.0", "id": 1, "method": "ping"})

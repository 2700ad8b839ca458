"""The fixtures of the official MCP conformance suite, written as yieldmcp tools.

Serve it and point the suite at it::

    yieldmcp serve examples/conformance_server.py --http 127.0.0.1:3199
    .ci/run-conformance-server 3199 -- yieldmcp serve examples/conformance_server.py \\
        --http 127.0.0.1:3199

Every name, text and schema below is what a scenario checks (the spec is
notes/conformance-fixtures.md §4). Two fixtures need more than a pydantic model:

* ``json_schema_2020_12_tool`` advertises a hand-written JSON Schema verbatim
  (``tool(input_schema=...)``);
* the SEP-1330 enum forms (titled single/multi select, legacy ``enumNames``)
  are written with ``json_schema_extra`` on ``str``/``list[str]`` fields.

``test_reconnection`` uses ``ctx.release_stream()``: over 2025-11-25 HTTP the
call's SSE stream is closed mid-call and the client resumes it with
``Last-Event-ID`` (SSE polling). The 2026-07-28 fixtures are ordinary tools too:
the server turns their questions into InputRequiredResults.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any, Literal

import mcp_types
import trio
from pydantic import BaseModel, ConfigDict, Field, JsonValue

from bridge.server import (
    Prompt,
    Resource,
    ResourceTemplate,
    Server,
    prompt,
    resource,
    resource_template,
)
from runtime import Audio, Context, ElicitKey, Image, Op, Text, Tool, ToolError, tool
from runtime.errors import RequestError
from runtime.lowlevel import CapabilityError

SERVER_NAME = "mcp-conformance-test-server"

TEST_IMAGE_BASE64 = (  # a 1x1 PNG
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0g"
    "AAAABJRU5ErkJggg=="
)
TEST_AUDIO_BASE64 = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="


# --- plain content ----------------------------------------------------------------


@tool
def test_simple_text(ctx: Context) -> str:
    """Returns a simple text response."""
    return "This is a simple text response for testing."


@tool
def test_image_content(ctx: Context) -> Any:
    """Returns an image."""
    return Image(TEST_IMAGE_BASE64, "image/png")


@tool
def test_audio_content(ctx: Context) -> Any:
    """Returns audio."""
    return Audio(TEST_AUDIO_BASE64, "audio/wav")


@tool
def test_embedded_resource(ctx: Context) -> Any:
    """Returns an embedded resource."""
    return _embedded(
        "test://embedded-resource",
        "text/plain",
        "This is an embedded resource content.",
    )


@tool
def test_multiple_content_types(ctx: Context) -> Any:
    """Returns text, an image and a resource."""
    data = json.dumps({"test": "data", "value": 123})
    return [
        Text("Multiple content types test:"),
        Image(TEST_IMAGE_BASE64, "image/png"),
        _embedded("test://mixed-content-resource", "application/json", data),
    ]


@tool
def test_error_handling(ctx: Context) -> str:
    """Always fails, as a tool error (isError), not a protocol error."""
    raise ToolError("This tool intentionally returns an error for testing")


# --- notices ----------------------------------------------------------------------


@tool
def test_tool_with_logging(ctx: Context) -> Op[str]:
    """Logs three messages while it runs."""
    yield ctx.log("info", "Tool execution started")
    yield ctx.log("info", "Tool processing data")
    yield ctx.log("info", "Tool execution completed")
    return "Tool with logging executed successfully"


@tool
def test_tool_with_progress(ctx: Context) -> Op[str]:
    """Reports progress 0, 50 and 100 of 100 (when the caller sent a token)."""
    for step in (0, 50, 100):
        yield ctx.progress(step, 100, f"Completed step {step} of 100")
    return "Progress tool completed"


@tool
def test_reconnection(ctx: Context) -> Op[str]:
    """Lets the server close its SSE stream mid-call; the client resumes it."""
    yield ctx.log("info", "Before disconnect")
    yield ctx.release_stream()
    yield ctx.log("info", "After reconnect")
    return "Reconnection test completed"


@tool
def test_logging_tool(ctx: Context) -> Op[str]:
    """Logs once through the request-scoped channel."""
    yield ctx.log("info", "test_logging_tool ran")
    return "logged through the request-scoped, logLevel-gated channel"


# --- sampling and elicitation -----------------------------------------------------


class SamplingArgs(BaseModel):
    prompt: str = Field(description="The prompt to send to the client's model")


@tool
def test_sampling(params: SamplingArgs, ctx: Context) -> Op[str]:
    """Asks the client's model to answer the prompt."""
    reply = yield from ctx.sample(params.prompt, max_tokens=100)
    return f"LLM response: {reply.text}"


class ElicitationArgs(BaseModel):
    message: str = Field(description="What to ask the user")


class UserInfo(BaseModel):
    username: str = Field(description="User's response")
    email: str = Field(description="User's email address")


USER_INFO = ElicitKey("user_info", UserInfo)


def _outcome(action: str, content: BaseModel | None) -> str:
    data = None if content is None else content.model_dump(mode="json")
    return f"action={action}, content={json.dumps(data)}"


@tool(elicits=[USER_INFO])
def test_elicitation(params: ElicitationArgs, ctx: Context) -> Op[str]:
    """Asks the user for a username and an email address."""
    answer = yield from ctx.elicit(USER_INFO, params.message)
    return f"User response: {_outcome(answer.action, answer.content)}"


class Defaults(BaseModel):
    """SEP-1034: every primitive type with a default."""

    name: str = Field("John Doe", description="User name")
    age: int = Field(30, description="User age")
    score: float = Field(95.5, description="User score")
    status: Literal["active", "inactive", "pending"] = Field(
        "active", description="User status"
    )
    verified: bool = Field(True, description="Verification status")


DEFAULTS = ElicitKey("defaults", Defaults)


@tool(elicits=[DEFAULTS])
def test_elicitation_sep1034_defaults(ctx: Context) -> Op[str]:
    """Asks for a form whose every field has a default (SEP-1034)."""
    answer = yield from ctx.elicit(DEFAULTS, "Please provide user information")
    return f"Elicitation result: {_outcome(answer.action, answer.content)}"


def _titled(pairs: Mapping[str, str]) -> list[JsonValue]:
    return [{"const": value, "title": title} for value, title in pairs.items()]


class Enums(BaseModel):
    """SEP-1330: the five enum forms. Fields are plain ``str``/``list[str]`` so
    that any answer is accepted; the schema shapes come from the extras."""

    model_config = ConfigDict(title="Enums")

    untitledSingle: str = Field(
        json_schema_extra={"enum": ["active", "inactive", "pending"]}
    )
    titledSingle: str = Field(
        json_schema_extra={
            "oneOf": _titled(
                {
                    "low": "Low Priority",
                    "medium": "Medium Priority",
                    "high": "High Priority",
                }
            )
        }
    )
    legacyEnum: str = Field(
        json_schema_extra={
            "enum": ["small", "medium", "large"],
            "enumNames": ["Small Size", "Medium Size", "Large Size"],
        }
    )
    untitledMulti: list[str] = Field(
        json_schema_extra={
            "items": {"type": "string", "enum": ["read", "write", "execute"]}
        }
    )
    titledMulti: list[str] = Field(
        json_schema_extra={
            "items": {
                "anyOf": _titled(
                    {
                        "feature": "New Feature",
                        "bug": "Bug Fix",
                        "docs": "Documentation",
                    }
                )
            }
        }
    )


ENUMS = ElicitKey("enums", Enums)


@tool(elicits=[ENUMS])
def test_elicitation_sep1330_enums(ctx: Context) -> Op[str]:
    """Asks for a form with every enum form (SEP-1330)."""
    answer = yield from ctx.elicit(
        ENUMS, "Please select values using different enum schema types"
    )
    return f"Elicitation completed: {_outcome(answer.action, answer.content)}"


class Response(BaseModel):
    response: str


RESPONSE = ElicitKey("response", Response)


@tool(elicits=[RESPONSE])
def test_streaming_elicitation(ctx: Context) -> Op[str]:
    """Asks the user for a word (2026: as an InputRequiredResult)."""
    answer = yield from ctx.elicit(
        RESPONSE, "The stateless streaming probe asks for a word"
    )
    return f"elicitation {answer.action}"


@tool
def test_missing_capability(ctx: Context) -> Op[str]:
    """Needs the client's sampling capability (-32021 without it)."""
    yield from ctx.sample("Say hello", max_tokens=50)
    return "Client declared sampling capability; proceeding."


# --- JSON Schema 2020-12 ----------------------------------------------------------

SCHEMA_2020_12: Mapping[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {
        "properties": {"contactMethod": {"const": "phone"}},
        "required": ["contactMethod"],
    },
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


@tool(input_schema=SCHEMA_2020_12)
def json_schema_2020_12_tool(ctx: Context) -> str:
    """Has a JSON Schema 2020-12 inputSchema that must reach clients verbatim."""
    return "json_schema_2020_12_tool"


class Region(BaseModel):
    region: str = Field(
        "<none>",
        description="Mirrored into the Mcp-Param-Region header",
        json_schema_extra={"x-mcp-header": "Region"},
    )


@tool
def test_x_mcp_header(params: Region, ctx: Context) -> str:
    """Echoes the region argument, which clients mirror into a header."""
    return f"region={params.region}"


# --- list changes -----------------------------------------------------------------


@tool
def test_dynamic_tool(ctx: Context) -> str:
    """Exists only for a moment."""
    return "dynamic"


@prompt(name="test_dynamic_prompt", description="Exists only for a moment.")
def dynamic_prompt(ctx: Context) -> str:
    return "dynamic"


@tool
def test_trigger_tool_change(ctx: Context) -> str:
    """Adds and removes a tool, so list-change listeners hear of it."""
    server.add(test_dynamic_tool)
    server.remove(test_dynamic_tool)
    return "tool list changed"


@tool
def test_trigger_prompt_change(ctx: Context) -> str:
    """Adds and removes a prompt, so list-change listeners hear of it."""
    server.add(dynamic_prompt)
    server.remove(dynamic_prompt)
    return "prompt list changed"


# --- 2026-07-28 multi-round calls ---------------------------------------------------


class Name(BaseModel):
    name: str


class Color(BaseModel):
    color: str


class Ok(BaseModel):
    ok: bool


USER_NAME = ElicitKey("user_name", Name)
CONFIRM = ElicitKey("confirm", Ok)
STEP1 = ElicitKey("step1", Name)
STEP2 = ElicitKey("step2", Color)


@tool(elicits=[USER_NAME])
def test_input_required_result_elicitation(ctx: Context) -> Op[str]:
    """Asks the user's name."""
    answer = yield from ctx.elicit(USER_NAME, "What is your name?")
    return f"Hello, {answer.content.name}!" if answer.content else answer.action


@tool
def test_input_required_result_sampling(ctx: Context) -> Op[str]:
    """Asks the client's model a question."""
    reply = yield from ctx.sample("What is the capital of France?", max_tokens=100)
    return f"Model said: {reply.text}"


@tool
def test_input_required_result_list_roots(ctx: Context) -> Op[str]:
    """Asks the client for its roots."""
    roots = yield from ctx.list_roots()
    return f"Client exposed {len(roots)} root(s)."


@tool(elicits=[CONFIRM])
def test_input_required_result_request_state(ctx: Context) -> Op[str]:
    """Asks for a confirmation, carrying state across the rounds."""
    yield from ctx.elicit(CONFIRM, "Please confirm")
    return "state-ok: confirmation received"


@tool(elicits=[USER_NAME])
def test_input_required_result_multiple_inputs(ctx: Context) -> Op[str]:
    """Asks for a name, a greeting and the roots at once."""

    def name(c: Context) -> Op[object]:
        return (yield from c.elicit(USER_NAME, "What is your name?"))

    def greeting(c: Context) -> Op[object]:
        return (yield from c.sample("Generate a greeting", max_tokens=50))

    def roots(c: Context) -> Op[object]:
        return (yield from c.list_roots())

    yield from ctx.branch(name, greeting, roots)
    return "All inputs received."


@tool(elicits=[STEP1, STEP2])
def test_input_required_result_multi_round(ctx: Context) -> Op[str]:
    """Asks two questions, one round each."""
    first = yield from ctx.elicit(STEP1, "Step 1: What is your name?")
    second = yield from ctx.elicit(STEP2, "Step 2: What is your favorite color?")
    name = first.content.name if first.content else "someone"
    color = second.content.color if second.content else "nothing"
    return f"{name} likes {color}."


@tool(elicits=[CONFIRM])
def test_input_required_result_tampered_state(ctx: Context) -> Op[str]:
    """Asks for a confirmation; a tampered state must be refused."""
    yield from ctx.elicit(CONFIRM, "Please confirm")
    return "confirmed"


@tool(elicits=[CONFIRM])
def test_input_required_result_capabilities(ctx: Context) -> Op[str]:
    """Asks the user if it may, else the client's model."""
    try:
        yield from ctx.elicit(CONFIRM, "Please confirm")
    except CapabilityError:
        reply = yield from ctx.sample("Say hello", max_tokens=50)
        return f"sampled: {reply.text}"
    return "elicited"


class Context_(BaseModel):
    context: str


USER_CONTEXT = ElicitKey("user_context", Context_)


@prompt(
    name="test_input_required_result_prompt",
    description="Asks the user for context before rendering.",
    elicits=[USER_CONTEXT],
)
def input_required_prompt(ctx: Context) -> Op[str]:
    answer = yield from ctx.elicit(USER_CONTEXT, "What context should the prompt use?")
    context = answer.content.context if answer.content else ""
    return f"Use the following context: {context}"


# --- resources ----------------------------------------------------------------------


@resource(
    "test://static-text",
    name="static_text_resource",
    description="A static text resource",
    mime_type="text/plain",
)
def static_text() -> str:
    return "This is the content of the static text resource."


@resource(
    "test://static-binary",
    name="static_binary_resource",
    description="A static binary resource (a 1x1 PNG)",
    mime_type="image/png",
)
def static_binary() -> bytes:
    return base64.b64decode(TEST_IMAGE_BASE64)


@resource(
    "test://watched-resource",
    name="watched_resource",
    description="A resource to subscribe to",
    mime_type="text/plain",
)
def watched() -> str:
    return "Watched resource content"


@resource_template(
    "test://template/{id}/data",
    name="template_resource",
    description="A resource template with parameter substitution",
    mime_type="application/json",
)
def template(variables: Mapping[str, str]) -> str:
    item = variables["id"]
    return json.dumps(
        {"id": item, "templateTest": True, "data": f"Data for ID: {item}"}
    )


# --- prompts ------------------------------------------------------------------------


@prompt(name="test_simple_prompt", description="A simple prompt without arguments")
def simple_prompt(ctx: Context) -> str:
    return "This is a simple prompt for testing."


class TwoArgs(BaseModel):
    arg1: str = Field(description="First argument")
    arg2: str = Field(description="Second argument")


@prompt(
    name="test_prompt_with_arguments",
    description="A prompt with two required arguments",
    complete={"arg1": lambda value: [], "arg2": lambda value: []},
)
def prompt_with_arguments(params: TwoArgs, ctx: Context) -> str:
    return f"Prompt with arguments: arg1='{params.arg1}', arg2='{params.arg2}'"


class ResourceArg(BaseModel):
    resourceUri: str = Field(description="The URI of the resource to embed")


@prompt(
    name="test_prompt_with_embedded_resource",
    description="A prompt that embeds a resource",
)
def prompt_with_embedded_resource(params: ResourceArg, ctx: Context) -> Any:
    text = "Embedded resource content for testing."
    return [
        ("user", _embedded(params.resourceUri, "text/plain", text)),
        ("user", Text("Please process the embedded resource above.")),
    ]


@prompt(name="test_prompt_with_image", description="A prompt that shows an image")
def prompt_with_image(ctx: Context) -> Any:
    return [
        ("user", Image(TEST_IMAGE_BASE64, "image/png")),
        ("user", Text("Please analyze the image above.")),
    ]


def _embedded(uri: str, mime_type: str, text: str) -> mcp_types.EmbeddedResource:
    contents = mcp_types.TextResourceContents(uri=uri, mime_type=mime_type, text=text)
    return mcp_types.EmbeddedResource(type="resource", resource=contents)


# --- the tasks extension (2026-07-28, SEP-2663) ----------------------------------


@tool
def greet(name: str) -> str:
    """Greets someone (never a task)."""
    return f"Hello, {name}!"


@tool(task="optional")
async def slow_compute(seconds: float = 1.0, label: str = "") -> str:
    """Sleeps ``seconds``, then answers: a task when the client supports them."""
    await trio.sleep(seconds)
    return f"computed {label or 'result'} after {seconds:g}s"


async def _pause(seconds: float) -> None:
    await trio.sleep(seconds)


@tool(task="required")
def failing_job(ctx: Context) -> Op[str]:
    """Fails as a tool (an isError result) after a second."""
    yield from ctx.step(_pause, 1.0)
    raise ToolError("failing_job failed, as it always does")


@tool(task="optional")
def protocol_error_job(ctx: Context) -> str:
    """Fails with a protocol error (the task ends ``failed``)."""
    raise RequestError(-32603, "protocol_error_job broke, as it always does")


class Confirm(BaseModel):
    confirm: bool = True


class NameConfirm(BaseModel):
    name: str = ""
    confirm: bool = True


CONFIRM_DELETE = ElicitKey("confirm_delete", Confirm)
FIRST = ElicitKey("first", NameConfirm)
SECOND = ElicitKey("second", NameConfirm)


@tool(task="optional", elicits=[CONFIRM_DELETE])
def confirm_delete(filename: str, ctx: Context) -> Op[str]:
    """Asks before deleting ``filename`` (nothing is deleted)."""
    answer = yield from ctx.elicit(CONFIRM_DELETE, f"Delete {filename}?")
    confirmed = answer.action == "accept" and answer.content is not None
    return f"Deleted {filename}." if confirmed else f"Kept {filename}."


@tool(task="optional", elicits=[FIRST, SECOND])
def multi_input(ctx: Context) -> Op[str]:
    """Asks two questions at once."""

    def ask(key: ElicitKey[NameConfirm], label: str) -> Any:
        def one(c: Context) -> Op[object]:
            return (yield from c.elicit(key, f"Your {label} answer?"))

        return one

    yield from ctx.branch(ask(FIRST, "first"), ask(SECOND, "second"))
    return "Both inputs received."


@tool(task="required", task_from="step", elicits=[USER_NAME])
def test_tool_with_task(ctx: Context) -> Op[str]:
    """Asks the user's name in the request, then greets them in a task."""
    answer = yield from ctx.elicit(USER_NAME, "What is your name?")
    name = answer.content.name if answer.content else "stranger"
    greeting = yield from ctx.step(_greeting, name)
    return greeting


def _greeting(name: str) -> str:
    return f"Hello, {name}! (from a task)"


server = Server(
    [
        value
        for value in list(globals().values())
        if isinstance(value, Tool | Resource | ResourceTemplate | Prompt)
        and value not in (test_dynamic_tool, dynamic_prompt)
    ],
    name=SERVER_NAME,
    version="0.1.0",
)

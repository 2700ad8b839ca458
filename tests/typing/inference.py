# Checked by tests/typing/test_inference.py with pyright: not collected by pytest.
#
# Each reveal_type line ends in an expect-type comment naming the type pyright
# must reveal; each line that must be a type error ends in an expect-error
# comment, and no other line may be one.
from collections.abc import Mapping
from typing import Any, reveal_type

from pydantic import BaseModel

from bridge.elicit import KeyedHandlers
from runtime import Context, ElicitKey, Op, ToolSpec, tool
from runtime.lowlevel import ElicitationRequest, ElicitReply


class Move(BaseModel):
    cell: int


class Other(BaseModel):
    name: str


MOVE = ElicitKey("move", Move)
LOOKUP = ToolSpec(name="lookup")


def body(ctx: Context) -> Op[None]:
    plain = yield from ctx.sample("hi")
    reveal_type(plain)  # expect-type: SampleResult[None]
    structured = yield from ctx.sample("hi", schema=Move)
    reveal_type(structured.parsed)  # expect-type: Move | None
    guaranteed = yield from ctx.sample_schema("hi", schema=Move)
    reveal_type(guaranteed)  # expect-type: SchemaResult[Move]
    reveal_type(guaranteed.parsed)  # expect-type: Move
    calls = yield from ctx.sample_tools("hi", tools=[LOOKUP])
    reveal_type(calls)  # expect-type: ToolsResult
    reveal_type(calls.tool_calls)  # expect-type: tuple[ToolCall, ...]
    elicited = yield from ctx.elicit(MOVE, "your move")
    reveal_type(elicited.content)  # expect-type: Move | None
    a, b = yield from ctx.branch(lambda c: child(c), lambda c: other(c))
    reveal_type(a)  # expect-type: int
    reveal_type(b)  # expect-type: str
    now = yield from ctx.now()
    reveal_type(now)  # expect-type: float


def child(ctx: Context) -> Op[int]:
    reply = yield from ctx.sample("x")
    return len(reply.text)


def other(ctx: Context) -> Op[str]:
    reply = yield from ctx.sample("y")
    return reply.text


# --- keyed elicitation handlers: one per key, typed by the tool's declared model ---


@tool(elicits=[MOVE])
def play(ctx: Context) -> Op[int]:
    reply = yield from ctx.elicit(MOVE, "your move")
    return reply.content.cell if reply.content else -1


def pick(request: ElicitationRequest, context: Mapping[str, Any]) -> Move:
    return Move(cell=0)


async def pick_later(
    request: ElicitationRequest, context: Mapping[str, Any]
) -> Move | ElicitReply:
    return ElicitReply(action="decline")


def wrong_model(request: ElicitationRequest, context: Mapping[str, Any]) -> Other:
    return Other(name="x")


handlers = KeyedHandlers()
reveal_type(MOVE)  # expect-type: ElicitKey[Move]
reveal_type(handlers.on(MOVE, pick))  # expect-type: KeyedHandlers
handlers.on(MOVE, pick_later)
handlers.on(MOVE, lambda request, context: ElicitReply(action="cancel"))
handlers.on(
    MOVE,
    lambda request, context: Move(
        cell=len(reveal_type(context))  # expect-type: Mapping[str, Any]
    ),
)
handlers.on(
    MOVE,
    lambda request, context: Move(
        cell=len(reveal_type(request).message)  # expect-type: ElicitationRequest
    ),
)
handlers.on(MOVE, wrong_model)  # expect-error
handlers.on(MOVE, lambda request, context: {"cell": 1})  # expect-error
handlers.on(MOVE, lambda request, context: Move)  # expect-error
# A plain string key has no declared model: any model, or a mapping, will do.
handlers.on("move", wrong_model)
handlers.on("move", lambda request, context: {"cell": 1})
handlers.on("move", lambda request, context: 1)  # expect-error


# Steps: the result type comes from the function, sync or async.
def fetch_move(cell: int) -> Move:
    return Move(cell=cell)


async def fetch_name(name: str, *, upper: bool = False) -> Other:
    return Other(name=name.upper() if upper else name)


def stepping(ctx: Context) -> Op[None]:
    move = yield from ctx.step(fetch_move, 3)
    reveal_type(move)  # expect-type: Move
    other = yield from ctx.step(fetch_name, "x", upper=True)
    reveal_type(other)  # expect-type: Other
    named = yield from ctx.step_as("fetch", retries=2)(fetch_name, "y")
    reveal_type(named)  # expect-type: Other
    yield from ctx.step(fetch_move, "3")  # expect-error
    yield from ctx.step(fetch_name, 1)  # expect-error


# --- plain typed parameters: the result type is still inferred ---------------------


@tool
def add(a: int, b: int = 1) -> int:
    return a + b


@tool
def add_later(a: int, ctx: Context) -> Op[str]:
    yield ctx.log("info", "adding")
    return str(a)


reveal_type(add)  # expect-type: Tool[BaseModel, int]
reveal_type(add_later)  # expect-type: Tool[BaseModel, str]

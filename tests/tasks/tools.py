"""Tools the tasks tests run: quick, slow, failing, asking, and a step counter."""

from __future__ import annotations

import os
from pathlib import Path

import trio
from pydantic import BaseModel

from runtime import Context, ElicitKey, Op, ToolError, tool
from runtime.errors import RequestError


class Ok(BaseModel):
    ok: bool = True


class Name(BaseModel):
    name: str


OK = ElicitKey("ok", Ok)
NAME = ElicitKey("name", Name)
LEFT = ElicitKey("left", Name)
RIGHT = ElicitKey("right", Name)


@tool
def hello(name: str) -> str:
    """Never a task."""
    return f"Hello, {name}!"


@tool(task="optional")
async def sleepy(seconds: float = 0.0) -> str:
    """A task when the client supports them."""
    await trio.sleep(seconds)
    return f"slept {seconds:g}"


@tool(task="required")
def broken_tool(ctx: Context) -> str:
    """Fails as a tool: the task completes with isError."""
    raise ToolError("broken on purpose")


@tool(task="optional")
def broken_protocol(ctx: Context) -> str:
    """Fails with a protocol error: the task fails."""
    raise RequestError(-32603, "protocol broken on purpose")


@tool(task="optional", elicits=[OK])
def ask_ok(ctx: Context) -> Op[str]:
    """Asks one question."""
    answer = yield from ctx.elicit(OK, "Go ahead?")
    return f"answer: {answer.action}"


@tool(task="optional", elicits=[LEFT, RIGHT])
def ask_two(ctx: Context) -> Op[str]:
    """Asks two questions at once."""

    def left(c: Context) -> Op[object]:
        answer = yield from c.elicit(LEFT, "Left?")
        return answer.content.name if answer.content else "-"

    def right(c: Context) -> Op[object]:
        answer = yield from c.elicit(RIGHT, "Right?")
        return answer.content.name if answer.content else "-"

    names = yield from ctx.branch(left, right)
    return " and ".join(str(n) for n in names)


@tool(task="required", task_from="step", elicits=[NAME])
def greet_later(ctx: Context) -> Op[str]:
    """Asks a name in the request, then greets in a task."""
    answer = yield from ctx.elicit(NAME, "Name?")
    name = answer.content.name if answer.content else "nobody"
    return (yield from ctx.step(_greeting, name))


def _greeting(name: str) -> str:
    return f"Hi {name}, from a task"


def _count(path: str, number: int) -> int:
    """A step with a side effect: one line per run, in the file at ``path``."""
    with Path(path).open("a") as out:
        out.write(f"{number}\n")
    return number


async def _nap(seconds: float) -> None:
    await trio.sleep(seconds)


@tool(task="optional")
def counted_steps(
    path: str, ctx: Context, steps: int = 5, pause: float = 0.0
) -> Op[str]:
    """Runs ``steps`` steps, each writing a line to ``path``; pauses between."""
    total = 0
    for number in range(1, steps + 1):
        total += yield from ctx.step(_count, path, number)
        if pause:
            yield from ctx.step(_nap, pause)
    return f"ran {steps} steps, total {total} (pid {os.getpid()})"


@tool(task="optional")
def reporting(ctx: Context) -> Op[str]:
    """Reports progress with a message, then waits a while."""
    yield ctx.progress(1, 2, "half way")
    yield from ctx.step(_nap, 0.5)
    return "reported"


ALL = [
    hello,
    sleepy,
    broken_tool,
    broken_protocol,
    ask_ok,
    ask_two,
    greet_later,
    counted_steps,
    reporting,
]

"""Tools the durable-session tests serve (in process, or as ``yieldmcp serve``).

Every step appends a line to the file ``$SESSION_TOOLS_COUNTER`` (when set), so
a test can see which steps ran, in every process, and how often; every run of
``interview`` (a replay too) appends its process's pid to
``$SESSION_TOOLS_PIDS``.
"""

from __future__ import annotations

import os
import time

from pydantic import BaseModel

from runtime import Context, Op, tool


class Name(BaseModel):
    name: str


class Colour(BaseModel):
    colour: str


def _count(what: str) -> None:
    path = os.environ.get("SESSION_TOOLS_COUNTER")
    if path:
        with open(path, "a", encoding="utf-8") as file:
            file.write(what + "\n")


def _where() -> None:
    path = os.environ.get("SESSION_TOOLS_PIDS")
    if path:  # every run of a call, replays included: which process ran it
        with open(path, "a", encoding="utf-8") as file:
            file.write(f"{os.getpid()}\n")


def greet(name: str) -> str:
    """A step with a side effect: it must run once per call."""
    _count(f"greet {name}")
    return f"hello {name}"


def slow(number: int) -> int:
    """A step that takes a while, so a test can kill the server during one."""
    _count(f"start {number}")
    time.sleep(float(os.environ.get("SESSION_TOOLS_SLOW", "0.3")))
    _count(f"end {number}")
    return number * 10


@tool(elicits={"name": Name, "colour": Colour})
def interview(ctx: Context) -> Op[str]:
    """Asks a name, runs a step, logs, asks a colour."""
    _where()
    first = yield from ctx.elicit("name", "Your name?")
    name = first.content.name if first.content else "nobody"
    greeting = yield from ctx.step(greet, name)
    yield ctx.log("info", f"greeted {name}")
    second = yield from ctx.elicit("colour", "Favourite colour?")
    colour = second.content.colour if second.content else "none"
    return f"{greeting}, who likes {colour}"


@tool
def sequence(ctx: Context) -> Op[str]:
    """Four slow steps in a row (and nothing sent before the response)."""
    total = 0
    for number in range(4):
        total += yield from ctx.step(slow, number)
    return f"total {total}"


@tool
def summarise(ctx: Context) -> Op[str]:
    """Asks the client's model once."""
    reply = yield from ctx.sample("Summarise: durable sessions")
    return f"summary: {reply.text}"

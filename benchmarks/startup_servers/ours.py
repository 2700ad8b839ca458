"""Two tools on yieldmcp, for ``benchmarks/startup.py``: ``yieldmcp serve`` this."""

from __future__ import annotations

from pydantic import BaseModel

from runtime import Context, ElicitKey, tool


@tool
def echo(text: str, ctx: Context) -> str:
    """Return the text."""
    return text


class Seat(BaseModel):
    seat: str = "aisle"


SEAT = ElicitKey("seat", Seat)


@tool(elicits=[SEAT])
def ask(ctx: Context) -> str:
    """Ask the user for a seat."""
    answer = yield ctx.elicit(SEAT, "Which seat?")
    return answer.action

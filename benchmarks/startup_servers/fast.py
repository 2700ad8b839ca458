"""Two tools on fastmcp, for ``benchmarks/startup.py``: ``fastmcp run`` this."""

from __future__ import annotations

from fastmcp import Context, FastMCP
from pydantic import BaseModel

mcp = FastMCP("startup-fastmcp")


@mcp.tool
def echo(text: str) -> str:
    """Return the text."""
    return text


class Seat(BaseModel):
    seat: str = "aisle"


@mcp.tool
async def ask(ctx: Context) -> str:
    """Ask the user for a seat."""
    answer = await ctx.elicit("Which seat?", response_type=Seat)
    return answer.action

"""Two tools on the official ``mcp`` SDK (``MCPServer``), for
``benchmarks/startup.py``: ``python`` this, over stdio."""

from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel

server = MCPServer("startup-sdk")


@server.tool()
async def echo(text: str) -> str:
    """Return the text."""
    return text


class Seat(BaseModel):
    seat: str = "aisle"


@server.tool()
async def ask(ctx: Context) -> str:
    """Ask the user for a seat."""
    answer = await ctx.elicit("Which seat?", schema=Seat)
    return answer.action


if __name__ == "__main__":
    server.run()

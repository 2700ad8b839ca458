"""One tool on the official ``mcp`` SDK (``MCPServer``), for
``benchmarks/startup.py``: ``python`` this, over stdio."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

server = MCPServer("startup-sdk")


@server.tool()
async def echo(text: str) -> str:
    """Return the text."""
    return text


if __name__ == "__main__":
    server.run()

"""One tool on fastmcp, for ``benchmarks/startup.py``: ``fastmcp run`` this."""

from __future__ import annotations

from fastmcp import FastMCP

mcp = FastMCP("startup-fastmcp")


@mcp.tool
def echo(text: str) -> str:
    """Return the text."""
    return text

"""One tool on yieldmcp, for ``benchmarks/startup.py``: ``yieldmcp serve`` this."""

from __future__ import annotations

from runtime import Context, tool


@tool
def echo(text: str, ctx: Context) -> str:
    """Return the text."""
    return text

"""Tests of ``bridge/server``: the MCP server's methods, both eras."""

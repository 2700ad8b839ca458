"""Tests of ``bridge/client``: our MCP client, its transports and tasks."""

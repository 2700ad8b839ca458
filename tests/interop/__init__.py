"""Interop: the whole stack against peers we did not write, each run for real
(no mocks): the official Python SDK (client and server, stdio and HTTP,
OAuth, tasks), the TypeScript SDK, server-everything and fastmcp."""

"""Interop with peers outside Python's official SDK: the TypeScript SDK,
server-everything and fastmcp, each run for real (no mocks)."""

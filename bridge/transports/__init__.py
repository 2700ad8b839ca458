"""Transports: how JSON-RPC messages move (memory, stdio, Streamable HTTP)."""

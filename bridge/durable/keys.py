"""The request-state key a store keeps for the servers that share it.

A server with a store and no configured key (no ``state_keys``, no
``YIELDMCP_STATE_KEY``) seals its 2026-07-28 states with this key instead of
one of its own, so that a restart, or another process on the same store,
opens them. The first server to need it writes it (compare-and-swap: of two
at once, both end with the one that won); it never expires. Whoever can read
the store can read the key, as they can read every journal in it: set
``YIELDMCP_STATE_KEY`` to keep the key out of the store.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Final

from bridge.stores import JournalStore, StoreConflict, StoreError, StoreUnreadable

__all__ = ["store_state_key"]

NAMESPACE: Final = "meta"
ID: Final = "request-state-key"


def store_state_key(store: JournalStore, new_key: Callable[[], str]) -> str:
    """The store's key (as text), written first if it has none (made by
    ``new_key``).

    Raises:
        StoreError: the store holds something else under the key's name (one
            line: it was a KeyError traceback, or a message about
            ``YIELDMCP_STATE_KEY``, which the user never set).
    """
    not_a_key = StoreError(
        f"the store's {NAMESPACE}/{ID} document is not a request-state "
        "key: remove it (a new one is made), or set YIELDMCP_STATE_KEY"
    )
    try:
        found = store.get(NAMESPACE, ID)
        if found is None:
            # Another process may write it first: then use theirs.
            with contextlib.suppress(StoreConflict):
                store.put(NAMESPACE, ID, {"key": new_key()}, expect=0)
            found = store.get(NAMESPACE, ID)
    except StoreUnreadable:  # not JSON, not an object: not a key either
        raise not_a_key from None
    if found is None:  # pragma: no cover - written just above
        raise RuntimeError("the store lost the request-state key it was given")
    key = found.value.get("key")
    if not isinstance(key, str):
        raise not_a_key
    return key

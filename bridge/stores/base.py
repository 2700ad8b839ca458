"""The interface every store implements, and its errors.

A store holds two kinds of thing, in *namespaces* (``"call"``, ``"task"``,
``"session"``: the server picks them) so one store serves every use:

- **Documents**: a JSON object under ``(namespace, id)`` with a *version*
  that goes up by one on every write. :meth:`JournalStore.put` takes the
  version the writer last read (``expect``; 0 means "must not exist") and
  refuses a stale write with :class:`StoreConflict`: compare-and-swap, which
  is what makes a state one-time and a task claimable by one worker.
- **Streams**: an append-only list of JSON records under ``(namespace, id)``.
  A journal is a stream: every answer, step result and notice key is
  appended *before* the call moves past it (write-ahead), and read back
  in order to replay the call. :meth:`JournalStore.wait` blocks until a
  stream grows, which lets one process hear what another appended (an
  answer POSTed to another worker).

Both carry an optional expiry (``expires_at``, seconds since the epoch); a
record past it reads as missing, and :meth:`JournalStore.sweep` deletes it.

Methods are **blocking** and thread-safe: a backend may be called from any
thread. The trio side calls them through
:class:`~bridge.stores.running.AsyncStore`, which runs a blocking backend off
the event loop.

Every record is plain JSON (``dict``/``list``/``str``/numbers/``bool``/``None``);
a backend serialises it compactly and gives back an equal value.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol, final

import attrs

from runtime.errors import YieldMCPError

__all__ = [
    "Document",
    "JournalStore",
    "StoreConflict",
    "StoreError",
    "StoreUnavailable",
    "StoreUnreadable",
]


class StoreError(YieldMCPError):
    """A store failed or was used wrongly. Subclasses say which."""


class StoreConflict(StoreError):
    """A compare-and-swap write met another version than it expected.

    Someone else wrote the document first (or it exists when the write
    required it not to, or is gone when the write expected it).
    """

    def __init__(self, namespace: str, id: str, expected: int, found: int) -> None:
        super().__init__(
            f"{namespace} {id!r}: expected version {expected}, found {found}"
        )
        self.namespace = namespace
        self.id = id
        self.expected = expected
        self.found = found


class StoreUnavailable(StoreError):
    """The store cannot be reached or opened (bad URL, server down, no file)."""


class StoreUnreadable(StoreError):
    """A document or a record in the store cannot be read: not UTF-8, not
    JSON, not a JSON object, nested past the parser, a number Python cannot
    read. No writer of ours stores such text; a stranger, another program
    or a damaged disk did.

    One error every reader of a store already handles (a :class:`StoreError`),
    rather than whatever the decoder raised (a ``JSONDecodeError``, a
    ``RecursionError``, a ``TypeError`` further on). Its message names the
    document or record and says why in a few words; it never quotes the
    text, which may be huge or hold terminal controls.
    """

    def __init__(self, shown: str, namespace: str, id: str, part: str, why: str):
        super().__init__(
            f"{shown}: the {namespace} {id!r}: its {part} cannot be read ({why})"
        )
        self.namespace = namespace
        self.id = id
        self.part = part  # "document", or "record N" (from 1)
        self.why = why


@final
@attrs.frozen
class Document:
    """A document as read: its JSON value, its version (≥ 1) and expiry."""

    value: Mapping[str, Any]
    version: int
    expires_at: float | None = None


class JournalStore(Protocol):
    """What the server needs from a durable store. See the module docstring."""

    #: True when calls block on I/O (SQLite, Redis, Postgres): the trio side
    #: then runs them in a thread. False for the in-memory store.
    blocking: bool

    def get(self, namespace: str, id: str) -> Document | None:
        """The document, or None when it is missing or expired."""
        ...

    def put(
        self,
        namespace: str,
        id: str,
        value: Mapping[str, Any],
        *,
        expect: int | None = None,
        expires_at: float | None = None,
    ) -> int:
        """Write the document and return its new version.

        ``expect=None`` writes unconditionally; ``expect=0`` requires that no
        (unexpired) document exists; ``expect=n`` requires version ``n``.

        Raises:
            StoreConflict: the version found is not ``expect``.
        """
        ...

    def delete(self, namespace: str, id: str) -> None:
        """Remove the document and the stream under this name, if any."""
        ...

    def scan(self, namespace: str) -> Iterator[tuple[str, Document]]:
        """Every unexpired document in the namespace (for recovery sweeps).

        The order is unspecified; documents written during the scan may or
        may not appear.
        """
        ...

    def append(
        self,
        namespace: str,
        id: str,
        records: Sequence[Mapping[str, Any]],
        *,
        expires_at: float | None = None,
    ) -> int:
        """Append records to the stream, durably, and return its new length.

        ``expires_at`` (when given) sets the whole stream's expiry.
        """
        ...

    def read(self, namespace: str, id: str, start: int = 0) -> list[Mapping[str, Any]]:
        """The stream's records from index ``start`` on (``[]`` if none)."""
        ...

    def wait(
        self, namespace: str, id: str, start: int, timeout: float
    ) -> list[Mapping[str, Any]]:
        """Like :meth:`read`, but block up to ``timeout`` seconds for a record at
        index ``start`` or later to exist. ``[]`` on timeout."""
        ...

    def get_and_read(
        self, namespace: str, id: str
    ) -> tuple[Document | None, list[Mapping[str, Any]]]:
        """:meth:`get` and then :meth:`read` of the same name, in one trip to
        the store (a durable round opens with both).

        The document is read first: a writer that appends before it moves the
        document on (or with :meth:`put_and_append`) is then never seen moved
        on without its records.
        """
        ...

    def put_and_append(
        self,
        namespace: str,
        id: str,
        value: Mapping[str, Any],
        records: Sequence[Mapping[str, Any]],
        *,
        expect: int | None = None,
        expires_at: float | None = None,
    ) -> int:
        """:meth:`put` and :meth:`append` under the same name in one atomic
        write: both happen or neither (a :class:`StoreConflict` appends
        nothing). ``expires_at`` is the document's and the stream's, as if
        given to both; the new version of the document comes back.

        Raises:
            StoreConflict: the version found is not ``expect``.
        """
        ...

    def sweep(self, now: float) -> int:
        """Delete every document and stream expired at ``now``; how many."""
        ...

    def close(self) -> None:
        """Release connections and files. The store is unusable after."""
        ...

"""The in-memory store: one process, nothing survives it.

It is the reference for the other backends (the contract tests run every
backend against the same expectations) and what the server uses for tasks
when no store is configured.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, final

from .base import Document, StoreConflict

__all__ = ["MemoryStore"]


@final
class MemoryStore:
    """A :class:`~bridge.stores.base.JournalStore` in a dict, behind a lock."""

    blocking = False

    def __init__(self) -> None:
        self._docs: dict[tuple[str, str], Document] = {}
        self._streams: dict[
            tuple[str, str], tuple[list[Mapping[str, Any]], float | None]
        ] = {}
        self._changed = threading.Condition()

    def get(self, namespace: str, id: str) -> Document | None:
        with self._changed:
            return self._live_doc((namespace, id), time.time())

    def put(
        self,
        namespace: str,
        id: str,
        value: Mapping[str, Any],
        *,
        expect: int | None = None,
        expires_at: float | None = None,
    ) -> int:
        with self._changed:
            found = self._live_doc((namespace, id), time.time())
            version = 0 if found is None else found.version
            if expect is not None and expect != version:
                raise StoreConflict(namespace, id, expect, version)
            self._docs[namespace, id] = Document(dict(value), version + 1, expires_at)
            return version + 1

    def delete(self, namespace: str, id: str) -> None:
        with self._changed:
            self._docs.pop((namespace, id), None)
            self._streams.pop((namespace, id), None)

    def scan(self, namespace: str) -> Iterator[tuple[str, Document]]:
        now = time.time()
        with self._changed:
            found = [
                (id, doc)
                for (space, id), doc in self._docs.items()
                if space == namespace and not _expired(doc.expires_at, now)
            ]
        return iter(found)

    def append(
        self,
        namespace: str,
        id: str,
        records: Sequence[Mapping[str, Any]],
        *,
        expires_at: float | None = None,
    ) -> int:
        with self._changed:
            name = (namespace, id)
            stream, old_expiry = self._live_stream(name, time.time())
            stream.extend(dict(record) for record in records)
            expiry = old_expiry if expires_at is None else expires_at
            self._streams[name] = (stream, expiry)
            self._changed.notify_all()
            return len(stream)

    def get_and_read(
        self, namespace: str, id: str
    ) -> tuple[Document | None, list[Mapping[str, Any]]]:
        with self._changed:
            return self.get(namespace, id), self.read(namespace, id)

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
        # The lock is re-entrant: a conflicting put raises before any append.
        with self._changed:
            version = self.put(
                namespace, id, value, expect=expect, expires_at=expires_at
            )
            self.append(namespace, id, records, expires_at=expires_at)
            return version

    def read(self, namespace: str, id: str, start: int = 0) -> list[Mapping[str, Any]]:
        with self._changed:
            stream, _ = self._live_stream((namespace, id), time.time())
            return list(stream[start:])

    def wait(
        self, namespace: str, id: str, start: int, timeout: float
    ) -> list[Mapping[str, Any]]:
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                stream, _ = self._live_stream((namespace, id), time.time())
                left = deadline - time.monotonic()
                if len(stream) > start or left <= 0:
                    return list(stream[start:])
                self._changed.wait(left)

    def sweep(self, now: float) -> int:
        with self._changed:
            gone = [k for k, d in self._docs.items() if _expired(d.expires_at, now)]
            for key in gone:
                del self._docs[key]
            ended = [k for k, (_, e) in self._streams.items() if _expired(e, now)]
            for key in ended:
                del self._streams[key]
            return len(gone) + len(ended)

    def close(self) -> None:
        with self._changed:
            self._docs.clear()
            self._streams.clear()

    def _live_doc(self, name: tuple[str, str], now: float) -> Document | None:
        # An expired record reads as missing but stays until sweep(), as in
        # the durable backends (a read never writes), so sweep counts agree.
        doc = self._docs.get(name)
        if doc is not None and _expired(doc.expires_at, now):
            return None
        return doc

    def _live_stream(
        self, name: tuple[str, str], now: float
    ) -> tuple[list[Mapping[str, Any]], float | None]:
        stream = self._streams.get(name)
        if stream is None:
            return [], None
        if _expired(stream[1], now):
            return [], None
        return stream


def _expired(expires_at: float | None, now: float) -> bool:
    return expires_at is not None and expires_at <= now

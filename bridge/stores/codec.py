"""What the durable backends share: records as compact JSON text (written by
:func:`dumps`, a document read back by :func:`document_of`), and store URLs
made safe to print (no password in an error message), and scans that pass
over a document nobody can read (:class:`Unreadable`)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final, TypeVar, final
from urllib.parse import urlsplit, urlunsplit

from .base import Document

__all__ = ["Unreadable", "document_of", "dumps", "redact"]

log = logging.getLogger("yieldmcp.stores")
_T = TypeVar("_T")
_MOST_SAID: Final = 1024  # documents one store names as unreadable, at most


def dumps(value: Any) -> str:
    """Compact JSON; non-ASCII kept as is (smaller, and every backend stores
    UTF-8 text)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def document_of(row: Sequence[Any]) -> Document:
    """The document a SQL row ``(value text, version, expires_at)`` holds."""
    return Document(json.loads(row[0]), row[1], row[2])


def redact(url: str) -> str:
    """The URL with its password replaced by ``***``."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = f"{parts.username or ''}:***@{parts.hostname or ''}"
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit(parts._replace(netloc=netloc))


@final
class Unreadable:
    """A store's scans, passing over what cannot be read.

    A scan reads every document of a kind for recovery: one record that is
    not JSON, or not of its kind's shape (written by hand, by another
    program, truncated), failed the whole scan, and the server with it, on
    every process sharing the store and at every restart. It is passed
    over instead, and named in one warning (once a document).
    """

    def __init__(self, shown: str) -> None:
        self.shown = shown  # the store, as errors name it
        self._said: set[tuple[str, str]] = set()

    def scan(
        self,
        namespace: str,
        rows: Iterable[tuple[str, _T]],
        read: Callable[[_T], Document | None],
    ) -> list[tuple[str, Document]]:
        """``(id, read(row))`` for each row that reads (and is not None)."""
        found: list[tuple[str, Document]] = []
        for id, row in rows:
            try:
                document = read(row)
            except (ValueError, TypeError) as exc:
                self.say(namespace, id, exc)
                continue
            if document is not None:
                found.append((id, document))
        return found

    def say(self, namespace: str, id: str, why: BaseException) -> None:
        if (namespace, id) in self._said or len(self._said) >= _MOST_SAID:
            return
        self._said.add((namespace, id))
        log.warning(
            "%s: the %s document %r cannot be read (%s); passed over",
            self.shown,
            namespace,
            id,
            why,
        )

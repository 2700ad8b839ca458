"""What the durable backends share: records as compact JSON text (written by
:func:`dumps`, read back by :func:`document_of` and :func:`records_of`, which
raise :class:`~.base.StoreUnreadable` for text no writer of ours stored),
and store URLs made safe to print (no password in an error message), and
scans that pass over a document nobody can read (:class:`Unreadable`)."""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final, TypeVar, cast, final
from urllib.parse import urlsplit, urlunsplit

from .base import Document, StoreUnreadable

__all__ = [
    "LAST_VERSION",
    "Unreadable",
    "document_of",
    "dumps",
    "records_of",
    "redact",
    "version_of",
]

# The largest version a store holds: every writer of ours counts from 1 by
# one, so none gets near it; a row past it is a stranger's. One below 2**53,
# so the next version is exact in Redis's Lua (whose numbers are doubles)
# and far inside SQLite's and PostgreSQL's 64-bit integers (a put on a
# version of 2**63 - 1 overflowed them: a plain error, or an OverflowError).
LAST_VERSION: Final = 2**53 - 2

log = logging.getLogger("yieldmcp.stores")
_T = TypeVar("_T")
_MOST_SAID: Final = 1024  # documents one store names as unreadable, at most
# A surrogate escaped in JSON text: decoded alone it is no Unicode text (our
# writers could not have stored it: UTF-8 has no surrogates). Looked for in
# the text first, so the common record pays one search, not a second walk.
_ESCAPED_SURROGATE: Final = re.compile(r"\\u[dD][89a-fA-F]")
# A surrogate itself: what a backend that reads text with errors=
# "surrogateescape" (Redis's client) makes of bytes that are not UTF-8.
_RAW_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def dumps(value: Any) -> str:
    """Compact JSON; non-ASCII kept as is (smaller, and every backend stores
    UTF-8 text)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def document_of(row: Sequence[Any], shown: str, namespace: str, id: str) -> Document:
    """The document a SQL row ``(value text, version, expires_at)`` holds.

    Raises:
        StoreUnreadable: the value is not a JSON object (:func:`records_of`),
            or the version or expiry is not a number (SQLite keeps text in
            an INTEGER column; a stranger's Redis hash holds what it likes),
            or the version is below 1 (every writer of ours starts at 1: a
            compare-and-swap on version 0 could never succeed, and
            ``expect=0`` means "absent").
    """
    version, expires_at = version_of(row[1], shown, namespace, id), row[2]
    if expires_at is not None and not (
        isinstance(expires_at, int | float) and math.isfinite(expires_at)
    ):
        raise StoreUnreadable(
            shown, namespace, id, "document", "its expiry is not a number"
        )
    return Document(
        _object_of(row[0], shown, namespace, id, "document"), version, expires_at
    )


def version_of(version: Any, shown: str, namespace: str, id: str) -> int:
    """A stored document's version, which every writer of ours starts at 1
    (reads and compare-and-swaps check it alike).

    Raises:
        StoreUnreadable: it is not a number (SQLite keeps text in an INTEGER
            column), or it is below 1: a compare-and-swap on it could never
            succeed (``expect=0`` means "absent"), so callers that retry on
            a conflict would retry for ever; or it is past
            :data:`LAST_VERSION`, where the next version would overflow or
            round.
    """
    if isinstance(version, bool) or not isinstance(version, int):
        raise StoreUnreadable(
            shown, namespace, id, "document", "its version is not a number"
        )
    if version < 1:
        raise StoreUnreadable(
            shown, namespace, id, "document", "its version is below 1"
        )
    if version > LAST_VERSION:
        raise StoreUnreadable(
            shown, namespace, id, "document", "its version is too large to count on"
        )
    return version


def records_of(
    texts: Iterable[str | bytes], shown: str, namespace: str, id: str, start: int = 0
) -> list[Mapping[str, Any]]:
    """The records of a stream from its JSON texts (index ``start`` on).

    Raises:
        StoreUnreadable: one is not UTF-8, not JSON, not an object, nested
            past the parser, or holds a number Python cannot read or a lone
            surrogate: what a stranger's or a damaged row holds, named by its
            place (``record N``, from 1) in the stream.
    """
    return [
        _object_of(text, shown, namespace, id, f"record {start + n + 1}")
        for n, text in enumerate(texts)
    ]


def _object_of(
    raw: str | bytes, shown: str, namespace: str, id: str, part: str
) -> dict[str, Any]:
    why = _unreadable(raw)
    if isinstance(why, str):
        raise StoreUnreadable(shown, namespace, id, part, why)
    return why


def _unreadable(raw: str | bytes) -> dict[str, Any] | str:
    """The JSON object ``raw`` holds, or why it holds none (a few words:
    never the text, which may be huge or hold terminal controls)."""
    try:
        text = raw.decode() if isinstance(raw, bytes) else raw
    except UnicodeDecodeError:
        return "not UTF-8 text"
    if _RAW_SURROGATE.search(text):  # bytes decoded with surrogateescape
        return "not UTF-8 text"
    try:
        value: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        return f"not JSON: {exc.msg} at character {exc.pos:,}"
    except RecursionError:
        return "JSON nested too deep to read"
    except ValueError:  # the only other: an integer past int's digit limit
        return "a number of more digits than can be read"
    if not isinstance(value, dict):
        return f"JSON {type(value).__name__}, not an object"
    if _ESCAPED_SURROGATE.search(text):
        try:
            dumps(value).encode()
        except UnicodeEncodeError:
            return "a lone surrogate, which is not Unicode text"
        except RecursionError:
            return "JSON nested too deep to read"
    return cast("dict[str, Any]", value)


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
        read: Callable[[str, _T], Document | None],
    ) -> list[tuple[str, Document]]:
        """``(id, read(id, row))`` for each row that reads (and is not None)."""
        found: list[tuple[str, Document]] = []
        for id, row in rows:
            try:
                document = read(id, row)
            except StoreUnreadable as exc:
                self.say(namespace, id, exc.why)
                continue
            except (ValueError, TypeError) as exc:
                self.say(namespace, id, exc)
                continue
            if document is not None:
                found.append((id, document))
        return found

    def say(self, namespace: str, id: str, why: BaseException | str) -> None:
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

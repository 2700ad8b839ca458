"""What the durable backends share: records as compact JSON text (written by
:func:`dumps`, a document read back by :func:`document_of`), and store URLs
made safe to print (no password in an error message)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from .base import Document

__all__ = ["document_of", "dumps", "redact"]


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

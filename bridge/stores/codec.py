"""What the durable backends share: records as compact JSON text, and store
URLs made safe to print (no password in an error message)."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit, urlunsplit

__all__ = ["dumps", "redact"]


def dumps(value: Any) -> str:
    """Compact JSON; non-ASCII kept as is (smaller, and every backend stores
    UTF-8 text)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def redact(url: str) -> str:
    """The URL with its password replaced by ``***``."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = f"{parts.username or ''}:***@{parts.hostname or ''}"
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit(parts._replace(netloc=netloc))

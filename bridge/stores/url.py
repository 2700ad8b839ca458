"""Opening a store from the ``--store`` URL.

``memory:`` is the in-memory store. The durable backends are
``sqlite:PATH`` (relative or absolute; ``sqlite:///abs/path`` too),
``redis://HOST:PORT/DB`` (``rediss://`` for TLS) and ``postgresql://...``
(``postgres://`` too). A backend's client package is imported only when its
URL is used, so the optional extras stay optional.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from .base import JournalStore, StoreUnavailable
from .memory import MemoryStore
from .running import DEFAULT_TIMEOUT

__all__ = ["open_store", "sqlite_options", "sqlite_path"]

_SQLITE_OPTIONS = {"busy_timeout": float, "poll_interval": float, "synchronous": str}

_MOST_SECONDS = 86400.0
"""The most seconds a ``sqlite:`` URL's ``busy_timeout`` or ``poll_interval``
may say (a day): more is a mistake, and ``inf`` or ``1e300`` would overflow
when the store turns it into milliseconds or a lock's timeout."""

_MOST_NETWORK = 32767.0
"""The most seconds a network store's own timeouts are given (Linux's
largest ``TCP_KEEPIDLE``; see :func:`open_store`)."""


def open_store(
    url: str, *, timeout: float = DEFAULT_TIMEOUT, read_only: bool = False
) -> JournalStore:
    """The store a URL names.

    ``read_only`` opens it to read (``yieldmcp journal``): nothing is
    created or changed in it, not even the store's tables, so it must be a
    store already; a SQLite file on a read-only filesystem and a PostgreSQL
    role that may only ``SELECT`` are read. (Redis is never written on
    open.)

    ``timeout`` bounds what a network store lets one call hang on: Redis's
    socket timeout, PostgreSQL's statement and lock timeouts and TCP checks
    (the URL's own settings win). SQLite's equivalent is its
    ``busy_timeout`` option. Those settings take at most 32767 s (9 hours,
    the most TCP keepalive idle time Linux takes, which PostgreSQL's
    ``keepalives_idle`` follows): a longer ``timeout`` (``inf``, ``1e300``)
    is practically none, and would not fit a socket's timeout or
    PostgreSQL's settings. (The deadline :class:`~.running.AsyncStore`
    gives each operation is ``timeout`` itself.)

    Raises:
        StoreUnavailable: the URL names no known backend, or it cannot be opened
            (one line saying why: a missing file, a missing extra, a server down).
    """
    if url in ("memory", "memory:"):
        return MemoryStore()
    timeout = min(timeout, _MOST_NETWORK)
    if url.startswith("sqlite:"):
        from .sqlite import SQLiteStore

        path, options = sqlite_options(url)
        return SQLiteStore(path, read_only=read_only, **options)
    if url.startswith(("redis://", "rediss://", "unix://")):
        try:
            from .redis import RedisStore
        except ImportError:
            raise _missing("redis", "redis") from None
        return RedisStore(url, timeout=timeout)
    if url.startswith(("postgresql://", "postgres://")):
        try:
            from .postgres import PostgresStore
        except ImportError:
            raise _missing("postgres", "psycopg") from None
        return PostgresStore(url, timeout=timeout, read_only=read_only)
    raise StoreUnavailable(
        f"unknown store {url!r}: expected memory:, sqlite:PATH, "
        "redis://HOST:PORT/DB or postgresql://..."
    )


def sqlite_path(url: str) -> Path:
    """The file a ``sqlite:`` URL names.

    ``sqlite:PATH`` is PATH as written (relative to the working directory, or
    absolute; ``~`` expands); ``sqlite:///abs`` (an empty host, as in
    ``file:///``) is ``/abs``.

    Raises:
        StoreUnavailable: no path, or a host in the URL.
    """
    rest = url.removeprefix("sqlite:")
    if rest.startswith("//"):
        host, _, path = rest[2:].partition("/")
        if host:
            raise StoreUnavailable(
                f"{url!r}: a sqlite store is a local file; write sqlite:PATH "
                "or sqlite:///absolute/path"
            )
        rest = "/" + path
    if rest in ("", "/"):
        raise StoreUnavailable(f"{url!r}: no file; write sqlite:PATH")
    return Path(rest).expanduser()


def sqlite_options(url: str) -> tuple[Path, dict[str, Any]]:
    """The file and the :class:`~.sqlite.SQLiteStore` options of a ``sqlite:``
    URL: ``sqlite:PATH?busy_timeout=10&synchronous=FULL&poll_interval=0.02``.

    Raises:
        StoreUnavailable: a bad path, an unknown option or a bad value.
    """
    path, _, query = url.partition("?")
    options: dict[str, Any] = {}
    for name, text in parse_qsl(query, keep_blank_values=True):
        kind = _SQLITE_OPTIONS.get(name)
        if kind is None:
            known = ", ".join(_SQLITE_OPTIONS)
            raise StoreUnavailable(f"{url!r}: unknown option {name!r} (known: {known})")
        try:
            options[name] = kind(text)
        except ValueError:
            raise StoreUnavailable(
                f"{url!r}: {name}={text!r} is not a number"
            ) from None
    synchronous = str(options.get("synchronous", "NORMAL")).upper()
    if synchronous not in ("NORMAL", "FULL", "EXTRA"):
        raise StoreUnavailable(f"{url!r}: synchronous must be NORMAL, FULL or EXTRA")
    for name in ("busy_timeout", "poll_interval"):
        if name not in options:
            continue
        if not options[name] > 0:
            raise StoreUnavailable(f"{url!r}: {name} must be positive")
        if not math.isfinite(options[name]) or options[name] > _MOST_SECONDS:
            raise StoreUnavailable(
                f"{url!r}: {name} must be at most {_MOST_SECONDS:g} seconds (a day)"
            )
    return sqlite_path(path), options


def _missing(extra: str, package: str) -> StoreUnavailable:
    return StoreUnavailable(
        f"the {extra} store needs the {package} package: "
        f"pip install 'yieldmcp[{extra}]'"
    )

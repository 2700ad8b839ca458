"""``yieldmcp serve``'s flags for a durable store: ``--store URL``, ``--durable``.

``--store`` names a backend (``memory:``, ``sqlite:PATH``,
``redis://HOST:PORT/DB``, ``postgresql://...``: :func:`bridge.stores.open_store`);
``--durable`` is ``--store sqlite:`` at :func:`default_store_path`. Without
either, the served code's own ``Server(store=...)`` stands.

:func:`open_within` is how the CLI opens a store, ``serve`` here and
``journal`` (:mod:`.journal_export`): within a deadline, as a whole.
"""

from __future__ import annotations

import argparse
import math
import os
import threading
from pathlib import Path

from bridge.server.server import Server
from bridge.stores import JournalStore, StoreError, open_store
from bridge.stores.codec import redact

__all__ = [
    "OpenTimedOut",
    "add_store_flags",
    "apply_store_options",
    "default_store_path",
    "open_within",
]


def default_store_path() -> Path:
    """Where ``--durable`` keeps its SQLite file: the user's state directory."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "yieldmcp" / "store.sqlite3"


def add_store_flags(command: argparse.ArgumentParser) -> None:
    """Add ``--store`` and ``--durable`` to ``serve``."""
    group = command.add_argument_group(
        "durability",
        "keep calls, tasks and sessions in a store that outlives the process",
    )
    choice = group.add_mutually_exclusive_group()
    choice.add_argument(
        "--store",
        metavar="URL",
        help=(
            "memory:, sqlite:PATH, redis://HOST:PORT/DB or postgresql://...; "
            "processes sharing a store (and YIELDMCP_STATE_KEY) share calls and tasks"
        ),
    )
    choice.add_argument(
        "--durable",
        action="store_true",
        help=f"the same as --store sqlite:{default_store_path()}",
    )


def apply_store_options(server: Server, args: argparse.Namespace) -> None:
    """Open the store the flags name and give it to ``server``.

    Raises:
        ValueError: the store cannot be opened (one line saying why).
    """
    url: str | None = getattr(args, "store", None)
    if getattr(args, "durable", False):
        path = default_store_path()
        try:
            # Its file holds every journal and the request-state key.
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:  # a file in the way, no permission: the user's to fix
            raise ValueError(
                f"--durable: cannot make {path.parent}: {exc.strerror}"
                " (set XDG_STATE_HOME, or use --store sqlite:PATH)"
            ) from None
        url = f"sqlite:{path}"
    if url is None:
        return
    try:
        store = open_within(url, server.limits.store_timeout, grace=OPEN_GRACE)
        server.set_store(store)
    except OpenTimedOut as exc:
        raise ValueError(
            f"--store: {redact(url)}: the store did not open within "
            f"{exc.seconds:g} s (10 s and --store-timeout)"
        ) from None
    except StoreError as exc:
        raise ValueError(f"--store: {exc}") from None


OPEN_GRACE = 10.0
"""Seconds opening a store at ``serve``'s start may take beyond
``--store-timeout`` (reaching a network store takes up to 10 s by default)."""


class OpenTimedOut(Exception):
    """The store did not open within :attr:`seconds` (the caller says so, in
    its own words)."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"the store did not open within {seconds:g} s")
        self.seconds = seconds


def open_within(
    url: str, timeout: float, *, grace: float = 0.0, read_only: bool = False
) -> JournalStore:
    """``open_store(url, timeout=timeout, read_only=read_only)``, as a whole
    within ``grace`` + ``timeout`` seconds (no bound if that is infinite).

    Each of opening's steps has its own bound, but a store that answers a
    byte a second, or stalls after the connection, meets none of them: the
    command waited for ever. The open runs in a thread left behind when the
    time is up (the command then exits; nothing else runs yet).

    Raises:
        OpenTimedOut: the store did not open in time.
        StoreError: it cannot be opened (one line saying why).
    """
    limit = grace + timeout
    if not math.isfinite(limit):
        return open_store(url, timeout=timeout, read_only=read_only)
    opened: list[JournalStore] = []
    failed: list[BaseException] = []

    def work() -> None:
        try:
            opened.append(open_store(url, timeout=timeout, read_only=read_only))
        except BaseException as exc:  # handed to the waiting thread below
            failed.append(exc)

    opening = threading.Thread(target=work, name="yieldmcp-store-open", daemon=True)
    opening.start()
    opening.join(min(limit, threading.TIMEOUT_MAX))
    if failed:
        raise failed[0]
    if not opened:
        raise OpenTimedOut(limit)
    return opened[0]

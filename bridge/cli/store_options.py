"""``yieldmcp serve``'s flags for a durable store: ``--store URL``, ``--durable``.

``--store`` names a backend (``memory:``, ``sqlite:PATH``,
``redis://HOST:PORT/DB``, ``postgresql://...``: :func:`bridge.stores.open_store`);
``--durable`` is ``--store sqlite:`` at :func:`default_store_path`. Without
either, the served code's own ``Server(store=...)`` stands.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from bridge.server.server import Server
from bridge.stores import StoreError, open_store

__all__ = ["add_store_flags", "apply_store_options", "default_store_path"]


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
        server.set_store(open_store(url, timeout=server.limits.store_timeout))
    except StoreError as exc:
        raise ValueError(f"--store: {exc}") from None

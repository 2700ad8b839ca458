"""Whether a file could hold what another user wrote: the one rule for the
files yieldmcp acts on as the user's own.

A file it reads as the user's own choices (``serve``'s configuration,
:mod:`bridge.cli.config_file`) or keeps its state in (a SQLite store with the
request-state key, :mod:`bridge.stores.sqlite`) must be one no one else could
have written: it belongs to this user (or to root, who could write it
anyway), and not every user may write it. A shared folder (``/tmp``, a
parent of many projects) is where another user would plant one.

Each caller says in its own words what such a file would let them do; this
module knows no caller, and imports nothing of ``bridge``. (The OAuth token
file keeps a stricter rule of its own, :mod:`bridge.client.oauth.store`: a
secret, which no one else may even read.)
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import NamedTuple

__all__ = ["Untrusted", "untrusted"]


class Untrusted(NamedTuple):
    """Why a file is not the user's alone: ``why`` follows its path in a
    sentence (``PATH belongs to another user (uid 1001)``), ``fix`` is what
    the user can do."""

    why: str
    fix: str


def untrusted(path: str | os.PathLike[str], found: os.stat_result) -> Untrusted | None:
    """Why the file at ``path``, with status ``found`` (``os.fstat`` of the
    file opened, or ``os.lstat``), could hold another user's words; None if
    it could not."""
    if found.st_uid not in (os.getuid(), 0):
        return Untrusted(
            f"belongs to another user (uid {found.st_uid})",
            "chown it, or run yieldmcp as its owner",
        )
    if found.st_mode & stat.S_IWOTH:
        return Untrusted("can be written by every user", f"chmod o-w {Path(path)}")
    return None

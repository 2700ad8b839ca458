"""Writing a file the user named, whole and without following what is there.

Used where the CLI writes a file at a path it was given: ``install``'s host
configuration and ``call --trace FILE.html``. In a folder others can write to
(``/tmp``, a shared checkout) someone may plant a symbolic link or a FIFO at
that path before the write; opening it would write through the link into
whatever it names, or block on the FIFO for ever. So the text goes to a new
file beside it (created exclusively: nothing there is followed), which is
then renamed over the path: a link there is replaced, never followed, and a
reader never sees half of the file. The file it replaces keeps its mode, and
its owner where this process may give it one (root rewriting a user's file).
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
from pathlib import Path

__all__ = ["unusual", "write_whole"]


def unusual(path: Path) -> str | None:
    """What makes ``path`` no place to write a file, if anything: something
    there that is not a regular file (a symbolic link, a FIFO, a folder)."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return None
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISLNK(mode):
        return "it is a symbolic link"
    if stat.S_ISDIR(mode):
        return "it is a folder"
    return "it is not a regular file"


def write_whole(path: Path, text: str, *, like: os.stat_result | None = None) -> None:
    """``text`` into ``path`` all at once, through a temporary file beside
    it. A file already there keeps its mode and, where this process may give
    it (as root), its owner and group; a new one is ``0600``. ``like`` is
    that file's status when the caller already holds it open (and locked);
    otherwise it is looked up at ``path``.

    Raises:
        OSError: the folder cannot be written to.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    there = like
    if there is None:
        with contextlib.suppress(FileNotFoundError):
            there = path.lstat()
    if there is not None and not stat.S_ISREG(there.st_mode):
        there = None  # a link, FIFO or folder there is replaced, not copied
    mode = 0o600 if there is None else stat.S_IMODE(there.st_mode)
    handle, temporary = tempfile.mkstemp(
        prefix=f".{path.name}.", suffix=".tmp", dir=path.parent
    )
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            if there is not None:
                _keep_owner(out.fileno(), there)
            os.fsync(out.fileno())
        os.chmod(temporary, mode)  # after chown, which may clear bits
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _keep_owner(handle: int, there: os.stat_result) -> None:
    """Give the new file the owner and group of the one it replaces: a file
    root rewrites for a user stays that user's (the host runs as the user
    and must still read it). Only root may give a file away; anyone may give
    it a group they are in. What this process may not do is left as it is:
    the file is then its writer's, as any file it creates."""
    if sys.platform == "win32":
        return  # no owners to give
    made = os.fstat(handle)
    uid = there.st_uid if there.st_uid != made.st_uid else -1
    gid = there.st_gid if there.st_gid != made.st_gid else -1
    if uid == -1 and gid == -1:
        return
    try:
        os.fchown(handle, uid, gid)
    except PermissionError:
        if gid != -1:
            with contextlib.suppress(PermissionError):
                os.fchown(handle, -1, gid)  # the group, at least, if ours

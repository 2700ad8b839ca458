"""Writing a file the user named, whole and without following what is there.

Used where the CLI writes a file at a path it was given: ``install``'s host
configuration and ``call --trace FILE.html``. In a folder others can write to
(``/tmp``, a shared checkout) someone may plant a symbolic link or a FIFO at
that path before the write; opening it would write through the link into
whatever it names, or block on the FIFO for ever. So the text goes to a new
file beside it (created exclusively: nothing there is followed), which is
then renamed over the path: a link there is replaced, never followed, and a
reader never sees half of the file.
"""

from __future__ import annotations

import os
import stat
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


def write_whole(path: Path, text: str) -> None:
    """``text`` into ``path`` all at once, through a temporary file beside
    it. A file already there keeps its mode; a new one is ``0600``.

    Raises:
        OSError: the folder cannot be written to.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        there = path.lstat()
    except FileNotFoundError:
        mode = 0o600
    else:
        mode = stat.S_IMODE(there.st_mode) if stat.S_ISREG(there.st_mode) else 0o600
    handle, temporary = tempfile.mkstemp(
        prefix=f".{path.name}.", suffix=".tmp", dir=path.parent
    )
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise

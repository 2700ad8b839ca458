"""Making and locking the files yieldmcp writes for the user: a host's
configuration (``yieldmcp install``, :mod:`bridge.cli.install_host`) and the
OAuth token file (:mod:`bridge.client.oauth.store`).

Both make the folders a new file needs (:func:`make_folders`), and both hold
an exclusive ``flock`` from their read to their rename, so that processes
writing at once each keep their change (:func:`lock_within`). Each caller
says in its own words what a failure means; this module knows no caller, and
imports nothing of ``bridge``.
"""

from __future__ import annotations

import contextlib
import errno
import sys
import time
from pathlib import Path

if sys.platform != "win32":
    import fcntl

__all__ = ["make_folders", "lock_within"]

_NO_LOCKS = (errno.EBADF, errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS)


def make_folders(folder: Path, mode: int = 0o777) -> list[Path]:
    """Make ``folder`` and the folders above it that are missing, each with
    ``mode`` (less the umask; ``mkdir(parents=True)`` gives ``mode`` to the
    last only); the ones made here, outermost first.

    Raises:
        OSError: one cannot be made.
    """
    missing = [p for p in [*reversed(folder.parents), folder] if not p.exists()]
    for made in missing:
        with contextlib.suppress(FileExistsError):  # made meanwhile
            made.mkdir(mode=mode)
    return missing


def lock_within(handle: int, seconds: float) -> bool:
    """Take the exclusive ``flock`` on the open ``handle`` (a file or a
    folder), waiting ``seconds`` at most for another process to let it go:
    False if it did not. Where the file system has no such locks (``flock``
    on some network file systems; Windows), go on without: True, as a write
    whose rename is atomic did before locking.

    Raises:
        OSError: the lock failed otherwise.
    """
    if sys.platform == "win32":
        return True
    deadline = time.monotonic() + seconds
    pause = 0.01
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pass  # held: wait a little and try again
        except OSError as exc:
            if exc.errno in _NO_LOCKS:
                return True
            raise
        else:
            return True
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(pause, left))
        pause = min(pause * 2, 0.1)

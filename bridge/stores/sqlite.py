"""The SQLite store: one file, shared by every thread and process that opens it.

Durability: WAL journal with ``synchronous=NORMAL``. A committed transaction
is in the WAL file before ``commit`` returns, so a process crash (kill -9)
loses nothing committed; a power loss or OS crash may lose the last few
transactions (the WAL is fsynced at checkpoints, not at every commit), never
corrupt the file. ``synchronous="FULL"`` closes that window at the cost of
one fsync per write.

Concurrency: every write is one ``BEGIN IMMEDIATE`` transaction, which takes
the file's write lock before reading, so a compare-and-swap holds across
processes. A writer that finds the lock taken waits up to ``busy_timeout``.
Readers never block writers (WAL).

Waiting: SQLite cannot tell one process that another wrote. An append
through this store wakes its waiters at once (a condition variable); an
append by another connection or process is seen by one watcher thread per
store, which reads ``PRAGMA data_version`` every ``poll_interval`` (20 ms)
while anyone waits: a cheap check, however many waiters.

Reading only (``read_only=True``, what ``yieldmcp journal`` opens): every
connection is opened ``mode=ro`` and ``query_only``, nothing is created,
made WAL or migrated, and a file that is not a store already is refused; a
store on a read-only filesystem (a mounted backup) is read too, as SQLite's
``immutable`` file when it must be (:func:`_reader`).
"""

from __future__ import annotations

import logging
import os
import sqlite3
import stat
import threading
import time
import urllib.parse
from collections.abc import Generator, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, final

from bridge.trusted_file import untrusted

from .base import (
    Document,
    StoreConflict,
    StoreError,
    StoreUnavailable,
)
from .codec import Unreadable, document_of, dumps, records_of, version_of
from .sqlite_schema import SCHEMA_VERSION, append_one, check_ours, create_schema

__all__ = ["SCHEMA_VERSION", "SQLiteStore"]

log = logging.getLogger("yieldmcp.stores")

_LIVE = "(expires_at IS NULL OR expires_at > ?)"
# JSON text is read as its bytes (CAST AS BLOB) and decoded by the codec:
# SQLite keeps any bytes as text, and sqlite3's own decoding of bytes that
# are not UTF-8 is an OperationalError (a store that is down, to us) quoting
# them, where the codec says StoreUnreadable, naming the row.
_GET = (
    "SELECT CAST(value AS BLOB), version, expires_at FROM docs"
    f" WHERE namespace = ? AND id = ? AND {_LIVE}"
)
_READ = (
    "SELECT CAST(r.record AS BLOB) FROM records r JOIN streams s"
    " ON s.namespace = r.namespace AND s.id = r.id"
    " WHERE r.namespace = ? AND r.id = ? AND r.seq >= ?"
    " AND (s.expires_at IS NULL OR s.expires_at > ?) ORDER BY r.seq"
)


@final
class SQLiteStore:
    """A :class:`~bridge.stores.base.JournalStore` in one SQLite file."""

    blocking = True

    def __init__(
        self,
        path: str | Path,
        *,
        synchronous: str = "NORMAL",
        busy_timeout: float = 5.0,
        poll_interval: float = 0.02,
        read_only: bool = False,
    ) -> None:
        if synchronous.upper() not in ("NORMAL", "FULL", "EXTRA"):
            raise ValueError(f"synchronous must be NORMAL or FULL, not {synchronous!r}")
        self.path = Path(path)
        self.synchronous = synchronous.upper()
        self.busy_timeout = busy_timeout
        self.poll_interval = poll_interval
        self.read_only = read_only
        self._busy_ms = int(busy_timeout * 1000)
        # A pool of connections, one per thread at a time: sqlite3 connections
        # must not be used by two threads at once, and a pool (unlike one per
        # thread) does not leak when worker threads come and go.
        self._idle: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        # Writers in this process queue here rather than in SQLite's busy
        # handler, which sleeps (1 ms, 2 ms, 5 ms...) between retries.
        self._writing = threading.Lock()
        self._closed = False
        self._shown = f"sqlite:{self.path}"
        self._unreadable = Unreadable(self._shown)
        self._appended = threading.Condition()
        self._appends = 0  # appends heard (here, or by the watcher)
        self._waiters = 0
        self._watcher: threading.Thread | None = None
        _private_file(self.path, create=not read_only)
        self._check_ours()  # before anything is written, or made WAL
        if read_only:
            return  # a store already (_check_ours): nothing to make
        with self._connection() as conn:
            create_schema(conn, self.path)
        _warn_if_shared(self.path)  # once it is known to be a store

    # -- documents ---------------------------------------------------------

    def get(self, namespace: str, id: str) -> Document | None:
        with self._connection() as conn:
            row = conn.execute(_GET, (namespace, id, time.time())).fetchone()
        return None if row is None else document_of(row, self._shown, namespace, id)

    def put(
        self,
        namespace: str,
        id: str,
        value: Mapping[str, Any],
        *,
        expect: int | None = None,
        expires_at: float | None = None,
    ) -> int:
        text = dumps(value)
        with self._write() as conn:
            now = time.time()
            return _put_in(
                conn, self._shown, namespace, id, text, expect, expires_at, now
            )

    def delete(self, namespace: str, id: str) -> None:
        with self._write() as conn:
            for table in ("docs", "streams", "records"):
                conn.execute(
                    f"DELETE FROM {table} WHERE namespace = ? AND id = ?",
                    (namespace, id),
                )

    def scan(self, namespace: str) -> Iterator[tuple[str, Document]]:
        with self._connection() as conn:
            rows = conn.execute(
                f"SELECT id, CAST(value AS BLOB), version, expires_at FROM docs"
                f" WHERE namespace = ? AND {_LIVE}",
                (namespace, time.time()),
            ).fetchall()
        return iter(
            self._unreadable.scan(
                namespace,
                ((r[0], r[1:]) for r in rows),
                lambda id, row: document_of(row, self._shown, namespace, id),
            )
        )

    # -- streams -----------------------------------------------------------

    def append(
        self,
        namespace: str,
        id: str,
        records: Sequence[Mapping[str, Any]],
        *,
        expires_at: float | None = None,
    ) -> int:
        return self.append_many([(namespace, id, records, expires_at)])[0]

    def append_many(
        self,
        batch: Sequence[tuple[str, str, Sequence[Mapping[str, Any]], float | None]],
    ) -> list[int]:
        """Several appends in one transaction (group commit); their lengths.

        The off-loop runner batches concurrent appends through this, so N
        calls recording at once pay for one commit, not N.
        """
        texts = [[dumps(r) for r in records] for _, _, records, _ in batch]
        lengths: list[int] = []
        with self._write() as conn:
            now = time.time()
            for (namespace, id, _, expires_at), lines in zip(batch, texts, strict=True):
                lengths.append(append_one(conn, namespace, id, lines, expires_at, now))
        with self._appended:
            self._appends += 1
            self._appended.notify_all()
        return lengths

    def get_and_read(
        self, namespace: str, id: str
    ) -> tuple[Document | None, list[Mapping[str, Any]]]:
        with self._connection() as conn:
            # One read transaction: the document and the stream as of the
            # same moment.
            conn.execute("BEGIN")
            try:
                now = time.time()
                row = conn.execute(_GET, (namespace, id, now)).fetchone()
                lines = conn.execute(_READ, (namespace, id, 0, now)).fetchall()
            finally:
                conn.commit()
        found = None if row is None else document_of(row, self._shown, namespace, id)
        return found, records_of(
            (line[0] for line in lines), self._shown, namespace, id
        )

    def put_and_append(
        self,
        namespace: str,
        id: str,
        value: Mapping[str, Any],
        records: Sequence[Mapping[str, Any]],
        *,
        expect: int | None = None,
        expires_at: float | None = None,
    ) -> int:
        text, lines = dumps(value), [dumps(r) for r in records]
        with self._write() as conn:
            now = time.time()
            version = _put_in(
                conn, self._shown, namespace, id, text, expect, expires_at, now
            )
            append_one(conn, namespace, id, lines, expires_at, now)
        with self._appended:
            self._appends += 1
            self._appended.notify_all()
        return version

    def read(self, namespace: str, id: str, start: int = 0) -> list[Mapping[str, Any]]:
        with self._connection() as conn:
            rows = conn.execute(
                _READ, (namespace, id, max(0, start), time.time())
            ).fetchall()
        return records_of(
            (row[0] for row in rows), self._shown, namespace, id, max(0, start)
        )

    def wait(
        self, namespace: str, id: str, start: int, timeout: float
    ) -> list[Mapping[str, Any]]:
        deadline = time.monotonic() + timeout
        self._watch()
        with self._appended:
            self._waiters += 1
            self._appended.notify_all()  # the watcher sleeps while no one waits
        try:
            while True:
                with self._appended:
                    seen = self._appends
                found = self.read(namespace, id, start)
                left = deadline - time.monotonic()
                if found or left <= 0 or self._closed:
                    return found
                # Woken by an append through this store at once, or by the
                # watcher when another connection or process committed.
                with self._appended:
                    if self._appends == seen:
                        self._appended.wait(left)
        finally:
            with self._appended:
                self._waiters -= 1

    def _watch(self) -> None:
        with self._lock:
            if self._watcher is not None or self._closed:
                return
            self._watcher = threading.Thread(
                target=self._watching, name="yieldmcp-sqlite-watch", daemon=True
            )
        self._watcher.start()

    def _watching(self) -> None:
        # One thread per store, not one poll per waiter: while anyone waits,
        # read PRAGMA data_version (it changes when another connection, in
        # this process or another, commits) every poll_interval and wake the
        # waiters to read again.
        try:
            conn = self._connect()
        except StoreUnavailable:
            return
        try:
            version = conn.execute("PRAGMA data_version").fetchone()[0]
            # A commit between a first waiter's read and this baseline would
            # go unseen: wake the waiters once to read again.
            with self._appended:
                self._appends += 1
                self._appended.notify_all()
            while True:
                with self._appended:
                    self._appended.wait_for(lambda: self._waiters > 0 or self._closed)
                    if self._closed:
                        return
                time.sleep(self.poll_interval)
                now = conn.execute("PRAGMA data_version").fetchone()[0]
                if now != version:
                    version = now
                    with self._appended:
                        self._appends += 1
                        self._appended.notify_all()
        except sqlite3.Error:
            return  # the store was closed under us; waiters time out
        finally:
            conn.close()

    # -- upkeep ------------------------------------------------------------

    def sweep(self, now: float) -> int:
        with self._write() as conn:
            gone = conn.execute(
                "DELETE FROM docs WHERE expires_at <= ?", (now,)
            ).rowcount
            ended = conn.execute(
                "DELETE FROM streams WHERE expires_at <= ? RETURNING namespace, id",
                (now,),
            ).fetchall()
            conn.executemany(
                "DELETE FROM records WHERE namespace = ? AND id = ?", ended
            )
            return gone + len(ended)

    def close(self) -> None:
        # Only the idle connections: one in use by another thread is closed
        # by that thread when it is done (_connection). Closing it under a
        # running statement freed what the statement was using, and a
        # process crashed (a segmentation fault in the full suite).
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
        with self._appended:
            self._appended.notify_all()

    # -- connections -------------------------------------------------------

    @contextmanager
    def _connection(self) -> Generator[sqlite3.Connection]:
        conn = self._acquire()
        try:
            yield conn
        except sqlite3.Error as exc:
            raise _store_error(self.path, exc) from exc
        finally:
            with self._lock:
                if self._closed:
                    conn.close()
                else:
                    self._idle.append(conn)

    @contextmanager
    def _write(self) -> Generator[sqlite3.Connection]:
        # BEGIN IMMEDIATE takes the write lock before the first read, so the
        # read-check-write of a compare-and-swap is atomic across processes.
        # Our writers queue for at most the busy timeout too (not forever).
        if not self._writing.acquire(timeout=self.busy_timeout):
            raise StoreUnavailable(
                f"sqlite:{self.path}: another writer held the database for "
                f"{self.busy_timeout:g} s (busy_timeout)"
            )
        try:
            with self._connection() as conn:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    yield conn
                except BaseException:
                    conn.rollback()
                    raise
                conn.commit()
        finally:
            self._writing.release()

    def _acquire(self) -> sqlite3.Connection:
        with self._lock:
            if self._closed:
                raise StoreUnavailable(f"sqlite:{self.path}: the store is closed")
            if self._idle:
                return self._idle.pop()
        return self._connect()

    def _check_ours(self) -> None:
        """Refuse another application's database before changing anything in
        it (:func:`~.sqlite_schema.check_ours`): on a connection of its own
        that creates no file and sets no pragma (``journal_mode=WAL``, which
        every other connection sets, lasts in the file).

        Raises:
            StoreUnavailable: not a new file nor a store, or unreadable.
        """
        if str(self.path) in ("", ":memory:"):
            return
        try:
            if self.read_only:
                conn = _reader(self.path, self._busy_ms / 1000)
            else:
                conn = sqlite3.connect(
                    _uri(self.path),
                    uri=True,
                    isolation_level=None,
                    timeout=self._busy_ms / 1000,
                )
        except sqlite3.Error as exc:
            raise StoreUnavailable(
                f"cannot open sqlite:{self.path}: {self._why(exc)}"
            ) from None
        try:
            check_ours(conn, self.path, new=not self.read_only)
        except sqlite3.Error as exc:  # not a database, locked: said in one line
            raise StoreUnavailable(
                f"cannot open sqlite:{self.path}: {self._why(exc)}"
            ) from None
        finally:
            conn.close()

    def _connect(self) -> sqlite3.Connection:
        try:
            if self.read_only:
                conn = _reader(self.path, self._busy_ms / 1000)
                conn.execute(f"PRAGMA busy_timeout = {self._busy_ms}")
                return conn
            conn = sqlite3.connect(
                self.path,
                isolation_level=None,  # we issue BEGIN IMMEDIATE ourselves
                check_same_thread=False,  # the pool hands it to one thread at a time
                timeout=self._busy_ms / 1000,
            )
            conn.execute(f"PRAGMA busy_timeout = {self._busy_ms}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute(f"PRAGMA synchronous = {self.synchronous}")
        except sqlite3.Error as exc:
            raise StoreUnavailable(
                f"cannot open sqlite:{self.path}: {self._why(exc)}"
            ) from None
        return conn

    def _why(self, exc: sqlite3.Error) -> str:
        # A reader needs no directory it can write.
        return str(exc) if self.read_only else _why(self.path, exc)


def _reader(path: Path, timeout: float) -> sqlite3.Connection:
    """A connection that reads ``path`` and cannot write it (``mode=ro``,
    ``query_only``), from any thread (the pool hands it to one at a time).

    A store in WAL mode is read with its ``-wal`` and ``-shm`` files, which
    SQLite creates beside it when they are missing: on a read-only
    filesystem it cannot, and ``mode=ro`` cannot open the file. Such a file
    with no ``-wal`` beside it holds every committed write, and no one can
    write it: it is opened ``immutable`` (no locks, no WAL). Only then: a
    file others may write, read ``immutable``, could be read torn.
    """
    options: dict[str, Any] = {
        "uri": True,
        "isolation_level": None,
        "check_same_thread": False,
        "timeout": timeout,
    }
    conn = sqlite3.connect(_uri(path, "ro"), **options)
    try:
        conn.execute("PRAGMA query_only = ON")
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.OperationalError:
        conn.close()
        if not _frozen(path):
            raise
        conn = sqlite3.connect(_uri(path, "ro") + "&immutable=1", **options)
        conn.execute("PRAGMA query_only = ON")
    return conn


def _frozen(path: Path) -> bool:
    """Whether ``path`` is on a read-only filesystem with no ``-wal`` beside
    it: what it holds is all there is, and no one can change it."""
    try:
        read_only = os.statvfs(path).f_flag & os.ST_RDONLY
        wal = os.path.lexists(f"{path}-wal")
    except OSError:
        return False
    return bool(read_only) and not wal


def _private_file(path: Path, *, create: bool = True) -> None:
    """Make a new database file readable by its owner only, whatever the
    umask (SQLite gives its ``-wal`` and ``-shm`` files the database's
    mode): it holds every journal, and the request-state key
    (:mod:`bridge.durable.keys`).

    An existing path must not be a link, and must be a file no one else
    could have written (:func:`bridge.trusted_file.untrusted`: the user's
    own, or root's, and not writable by every user): in a shared folder
    another user could plant either, and a link would have the store (and
    its key) made where they chose, readable by them.

    Without ``create`` (a reader), nothing is made; the checks are the same.

    Raises:
        StoreUnavailable: the path is a symbolic link, or a file another
            user could have written.
    """
    if str(path) in ("", ":memory:"):
        return
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        if create:
            os.close(os.open(path, flags, 0o600))  # an empty file: an empty database
    except OSError:
        pass  # there already, no such folder, no permission: looked at below
    else:
        if create:
            return
    try:
        found = os.lstat(path)
    except OSError:
        return  # sqlite3.connect says why
    if stat.S_ISLNK(found.st_mode):
        raise StoreUnavailable(
            f"sqlite:{path} is a symbolic link: not followed (give the "
            "store's real path)"
        )
    bad = untrusted(path, found) if stat.S_ISREG(found.st_mode) else None
    if bad is not None:
        raise StoreUnavailable(
            f"sqlite:{path} {bad.why}, who could change every journal and the "
            f"request-state key: not used ({bad.fix})"
        )


def _uri(path: Path, mode: str = "rw") -> str:
    """``path`` as a SQLite URI that opens it read-write (``mode="ro"``:
    read-only) without creating it (any byte of the name escaped, ``?`` and
    ``#`` included)."""
    whole = urllib.parse.quote(os.fsencode(os.path.abspath(path)), safe="/")
    return f"file://{whole}?mode={mode}"


def _warn_if_shared(path: Path) -> None:
    """A store file others can read is warned of, and left as it is: its
    mode is the user's to choose."""
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return
    if mode & 0o077:
        log.warning(
            "sqlite:%s can be read by other users (mode %o): it holds every "
            "journal and the request-state key; chmod 600 %s",
            path,
            mode,
            path,
        )


def _why(path: Path, exc: sqlite3.Error) -> str:
    # sqlite says "unable to open database file" for a missing directory
    # and an unwritable one alike: name the case the user can fix.
    folder = Path(path).parent
    if not folder.is_dir():
        return f"no directory {folder} (create it first)"
    if not os.access(folder, os.W_OK):
        return f"directory {folder} is not writable"
    return str(exc)


def _put_in(
    conn: sqlite3.Connection,
    shown: str,
    namespace: str,
    id: str,
    text: str,
    expect: int | None,
    expires_at: float | None,
    now: float,
) -> int:
    # The compare-and-swap, inside the caller's write transaction.
    row = conn.execute(
        f"SELECT version FROM docs WHERE namespace = ? AND id = ? AND {_LIVE}",
        (namespace, id, now),
    ).fetchone()
    version = 0 if row is None else version_of(row[0], shown, namespace, id)
    if expect is not None and expect != version:
        raise StoreConflict(namespace, id, expect, version)
    conn.execute(
        "INSERT OR REPLACE INTO docs VALUES (?, ?, ?, ?, ?)",
        (namespace, id, text, version + 1, expires_at),
    )
    return version + 1


def _store_error(path: Path, exc: sqlite3.Error) -> StoreError:
    if isinstance(exc, sqlite3.OperationalError):
        return StoreUnavailable(f"sqlite:{path}: {exc}")
    return StoreError(f"sqlite:{path}: {exc}")

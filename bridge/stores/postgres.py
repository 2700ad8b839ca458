"""The PostgreSQL store: psycopg 3's blocking client, a small connection pool.

Tables (created on open, under an advisory lock so processes starting
together do not race; ``yieldmcp_meta`` versions the layout; a reader,
``read_only=True``, creates nothing, checks they are there, and reads in
read-only transactions):
``yieldmcp_docs``, ``yieldmcp_streams`` (length and expiry of each stream)
and ``yieldmcp_records``. Values are stored as JSON *text*, not ``jsonb``:
the store never queries inside them, and text gives back exactly what was
written (``jsonb`` reorders keys and rewrites numbers). To keep several
deployments in one database, give each a schema:
``postgresql://.../db?options=-csearch_path%3Dmine``.

Compare-and-swap is one statement: ``UPDATE ... WHERE version = expect`` or
``INSERT ... ON CONFLICT`` that only overwrites an expired row. An append is
one call of the ``yieldmcp_append`` function (locks the stream row, inserts
the records, ``pg_notify``), so it costs one round trip.

Waiting uses LISTEN/NOTIFY: one listening connection per store, on a thread
started by the first ``wait``, wakes the waiters of the stream a commit
appended to, in any process. (Polling would cost a query per waiter per
interval and add its interval to every answer's latency.)

Timeouts: :mod:`.postgres_connect` (every session's statements and lock
waits are bounded, and TCP notices a partitioned server).

An idle connection the server has ended meanwhile (``idle_session_timeout``,
a restart, ``pg_terminate_backend``, a proxy's idle cut that resets it) has
the server's last message or its end waiting to be read: such a connection
is closed when it is next taken from the pool, and another is used, so the
operation does not fail for it.

Durability is the server's: with the default ``synchronous_commit = on`` a
commit is on disk before it returns, so neither a crash of our process nor
of PostgreSQL nor a power loss loses it; ``synchronous_commit = off`` may
lose the last few hundred milliseconds of commits to a PostgreSQL crash.
"""

from __future__ import annotations

import json
import select
import threading
import time
from collections.abc import Generator, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Final, final

import psycopg

from .base import (
    Document,
    StoreConflict,
    StoreError,
    StoreUnavailable,
    StoreUnreadable,
)
from .codec import (
    LAST_VERSION,
    Unreadable,
    document_of,
    dumps,
    records_of,
    redact,
    version_of,
)
from .postgres_connect import Connector, first_line
from .postgres_schema import check_schema, create_schema

__all__ = ["PostgresStore"]

_LIVE: Final = "(expires_at IS NULL OR expires_at > %s)"
_CHANNEL: Final = "yieldmcp_append"
_GET: Final = (
    "SELECT value, version, expires_at FROM yieldmcp_docs"
    f" WHERE namespace = %s AND id = %s AND {_LIVE}"
)
_READ: Final = (
    "SELECT r.record FROM yieldmcp_records r JOIN yieldmcp_streams s"
    " USING (namespace, id)"
    " WHERE r.namespace = %s AND r.id = %s AND r.seq >= %s"
    " AND (s.expires_at IS NULL OR s.expires_at > %s) ORDER BY r.seq"
)


@final
class PostgresStore:
    """A :class:`~bridge.stores.base.JournalStore` on a PostgreSQL database."""

    blocking = True

    def __init__(
        self,
        url: str,
        *,
        connect_timeout: float = 10.0,
        timeout: float = 5.0,
        read_only: bool = False,
    ) -> None:
        self.url = url
        self.read_only = read_only
        self._shown = redact(url)
        self._unreadable = Unreadable(self._shown)
        self._timeout = connect_timeout
        self._connector = Connector(
            url, self._shown, connect_timeout=connect_timeout, timeout=timeout
        )
        self._lock = threading.Lock()
        self._idle: list[psycopg.Connection[Any]] = []
        self._closed = False
        # LISTEN/NOTIFY: for each stream someone waits on, how many waiters
        # and how many appends were heard (only those: no unbounded growth).
        self._woken = threading.Condition()
        self._waiters: dict[tuple[str, str], int] = {}
        self._appends: dict[tuple[str, str], int] = {}
        self._listener: threading.Thread | None = None
        self._listening = threading.Event()
        try:
            with self._connection() as conn:
                if read_only:  # nothing created: a store already, or refused
                    check_schema(conn, self._shown)
                else:
                    create_schema(conn, self._shown)
        except BaseException:
            self.close()  # a store refused leaves no connection open
            raise

    # -- documents -----------------------------------------------------------

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
        text, now = dumps(value), time.time()
        with self._connection() as conn:
            return _put_in(
                conn, self._shown, namespace, id, text, expect, expires_at, now
            )

    def get_and_read(
        self, namespace: str, id: str
    ) -> tuple[Document | None, list[Mapping[str, Any]]]:
        now = time.time()
        # Pipelined in one transaction: one round trip, one snapshot.
        with self._connection() as conn, conn.transaction(), conn.pipeline():
            doc = conn.execute(_GET, (namespace, id, now))
            lines = conn.execute(_READ, (namespace, id, 0, now))
        row = doc.fetchone()
        found = None if row is None else document_of(row, self._shown, namespace, id)
        texts = (line[0] for line in lines.fetchall())
        return found, records_of(texts, self._shown, namespace, id)

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
        text, now = dumps(value), time.time()
        lines = [dumps(record) for record in records]
        with self._connection() as conn, conn.transaction():
            version = _put_in(
                conn, self._shown, namespace, id, text, expect, expires_at, now
            )
            self._append_in(conn, namespace, id, lines, expires_at, now)
        return version

    def delete(self, namespace: str, id: str) -> None:
        with self._connection() as conn, conn.transaction():
            name = (namespace, id)
            where = " WHERE namespace = %s AND id = %s"
            conn.execute("DELETE FROM yieldmcp_docs" + where, name)
            conn.execute("DELETE FROM yieldmcp_streams" + where, name)
            conn.execute("DELETE FROM yieldmcp_records" + where, name)

    def scan(self, namespace: str) -> Iterator[tuple[str, Document]]:
        with self._connection() as conn:
            rows = conn.execute(
                "SELECT id, value, version, expires_at FROM yieldmcp_docs"
                f" WHERE namespace = %s AND {_LIVE}",
                (namespace, time.time()),
            ).fetchall()
        return iter(
            self._unreadable.scan(
                namespace,
                ((r[0], r[1:]) for r in rows),
                lambda id, row: document_of(row, self._shown, namespace, id),
            )
        )

    # -- streams -------------------------------------------------------------

    def append(
        self,
        namespace: str,
        id: str,
        records: Sequence[Mapping[str, Any]],
        *,
        expires_at: float | None = None,
    ) -> int:
        lines = [dumps(record) for record in records]
        with self._connection() as conn:
            return self._append_in(conn, namespace, id, lines, expires_at, time.time())

    def _append_in(
        self,
        conn: psycopg.Connection[Any],
        namespace: str,
        id: str,
        lines: list[str],
        expires_at: float | None,
        now: float,
    ) -> int:
        """One append in the caller's connection (and transaction).

        Raises:
            StoreUnreadable: the stream's row says fewer records than it
                holds (its length lowered, or the row deleted while its
                records remain): every append would meet a record already
                there, for ever, so this is a damaged stream, not an outage.
        """
        try:
            row = conn.execute(
                "SELECT yieldmcp_append(%s, %s, %s::text[], %s, %s)",
                (namespace, id, lines, expires_at, now),
            ).fetchone()
        except psycopg.errors.UniqueViolation:
            raise StoreUnreadable(
                self._shown, namespace, id, "stream",
                "its length is below the records it holds",
            ) from None  # fmt: skip
        assert row is not None
        return int(row[0])

    def append_many(
        self,
        batch: Sequence[tuple[str, str, Sequence[Mapping[str, Any]], float | None]],
    ) -> list[int]:
        """Several appends in one transaction (one commit, pipelined); their
        lengths. The off-loop runner batches concurrent appends through this."""
        now = time.time()
        with self._connection() as conn, conn.transaction(), conn.pipeline():
            cursors = [
                conn.execute(
                    "SELECT yieldmcp_append(%s, %s, %s::text[], %s, %s)",
                    (namespace, id, [dumps(r) for r in records], expires_at, now),
                )
                for namespace, id, records, expires_at in batch
            ]
        lengths: list[int] = []
        for cursor in cursors:
            row = cursor.fetchone()
            assert row is not None
            lengths.append(int(row[0]))
        return lengths

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
        self._listen()
        name = (namespace, id)
        with self._woken:
            self._waiters[name] = self._waiters.get(name, 0) + 1
            self._appends.setdefault(name, 0)
        try:
            while True:
                with self._woken:
                    seen = self._appends[name]
                found = self.read(namespace, id, start)
                left = deadline - time.monotonic()
                if found or left <= 0 or self._closed:
                    return found
                with self._woken:
                    # The 1 s cap is a safety net should a notification be
                    # lost (the listening connection dropped and came back).
                    self._woken.wait_for(
                        lambda seen=seen: self._appends[name] != seen or self._closed,
                        min(left, 1.0),
                    )
        finally:
            with self._woken:
                self._waiters[name] -= 1
                if not self._waiters[name]:
                    del self._waiters[name], self._appends[name]

    # -- upkeep --------------------------------------------------------------

    def sweep(self, now: float) -> int:
        with self._connection() as conn, conn.transaction():
            docs = conn.execute(
                "DELETE FROM yieldmcp_docs WHERE expires_at <= %s", (now,)
            ).rowcount
            row = conn.execute(
                "WITH gone AS (DELETE FROM yieldmcp_streams WHERE expires_at <= %s"
                " RETURNING namespace, id), records AS (DELETE FROM yieldmcp_records r"
                " USING gone g WHERE r.namespace = g.namespace AND r.id = g.id)"
                " SELECT count(*) FROM gone",
                (now,),
            ).fetchone()
        return docs + (0 if row is None else int(row[0]))

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
        with self._woken:
            self._woken.notify_all()
        if self._listener is not None:
            self._listener.join(timeout=5)

    # -- connections ---------------------------------------------------------

    def _connect(self) -> psycopg.Connection[Any]:
        conn = self._connector.connect()
        if self.read_only:  # a reader's every transaction: PostgreSQL refuses writes
            try:
                conn.execute("SET default_transaction_read_only = on")
            except psycopg.Error as exc:
                conn.close()
                raise StoreUnavailable(f"{self._shown}: {first_line(exc)}") from None
        return conn

    def _pooled(self) -> psycopg.Connection[Any] | None:
        """An idle connection from the pool that the server has not ended
        meanwhile (those are closed here), or None."""
        while True:
            with self._lock:
                if self._closed:
                    raise StoreUnavailable(f"{self._shown}: the store is closed")
                conn = self._idle.pop() if self._idle else None
            if conn is None or _untouched(conn):
                return conn
            conn.close()

    @contextmanager
    def _connection(self) -> Generator[psycopg.Connection[Any]]:
        conn = self._pooled() or self._connect()
        broken = False
        try:
            yield conn
        except psycopg.OperationalError as exc:
            broken = True
            raise StoreUnavailable(f"{self._shown}: {first_line(exc)}") from exc
        except psycopg.Error as exc:
            raise StoreError(f"{self._shown}: {first_line(exc)}") from exc
        finally:
            with self._lock:
                keep = not (broken or self._closed or conn.closed)
                if keep:
                    self._idle.append(conn)
            if not keep:
                conn.close()

    def _listen(self) -> None:
        with self._lock:
            if self._listener is None:
                self._listener = threading.Thread(
                    target=self._hear, name="yieldmcp-pg-listen", daemon=True
                )
                self._listener.start()
        # A waiter reads only once LISTEN is in place: an append committed
        # after that read is then always heard.
        self._listening.wait(timeout=self._timeout)

    def _hear(self) -> None:
        while not self._closed:
            try:
                conn = self._connect()
            except StoreUnavailable:
                time.sleep(1.0)
                continue
            try:
                with conn:
                    conn.execute(f"LISTEN {_CHANNEL}")
                    self._listening.set()
                    self._wake_all()  # anything missed while reconnecting
                    while not self._closed:
                        for note in conn.notifies(timeout=0.5):
                            self._wake(note.payload)
            except psycopg.Error:
                time.sleep(0.2)

    def _wake(self, payload: str) -> None:
        namespace, id = json.loads(payload)
        name = (str(namespace), str(id))
        with self._woken:
            if name in self._appends:
                self._appends[name] += 1
                self._woken.notify_all()

    def _wake_all(self) -> None:
        with self._woken:
            for name in self._appends:
                self._appends[name] += 1
            self._woken.notify_all()


def _put_in(
    conn: psycopg.Connection[Any],
    shown: str,
    namespace: str,
    id: str,
    text: str,
    expect: int | None,
    expires_at: float | None,
    now: float,
) -> int:
    # The compare-and-swap, in the caller's connection (and transaction). A
    # live row whose version is below 1 or past LAST_VERSION (no writer of
    # ours makes one; past it, version + 1 could overflow BIGINT) is never
    # written over: it is unreadable, as reads say, not a conflict (callers
    # retry a conflict, and expect=0 never matches it: for ever).
    if expect is None or expect == 0:
        # Insert, or overwrite: any readable row (expect None) or only an
        # expired one (expect 0), whose version then starts again.
        row = conn.execute(
            "INSERT INTO yieldmcp_docs AS d VALUES (%s, %s, %s, 1, %s)"
            " ON CONFLICT (namespace, id) DO UPDATE SET"
            " value = excluded.value, expires_at = excluded.expires_at,"
            " version = CASE WHEN d.expires_at <= %s THEN 1"
            " ELSE d.version + 1 END"
            " WHERE d.expires_at <= %s"
            " OR (%s AND d.version BETWEEN 1 AND %s)"
            " RETURNING version",
            (namespace, id, text, expires_at, now, now, expect is None, LAST_VERSION),
        ).fetchone()
    else:
        row = conn.execute(
            "UPDATE yieldmcp_docs SET value = %s, expires_at = %s,"
            " version = version + 1"
            " WHERE namespace = %s AND id = %s AND version = %s"
            f" AND version BETWEEN 1 AND %s AND {_LIVE} RETURNING version",
            (text, expires_at, namespace, id, expect, LAST_VERSION, now),
        ).fetchone()
    if row is None:
        found = conn.execute(
            "SELECT version FROM yieldmcp_docs"
            f" WHERE namespace = %s AND id = %s AND {_LIVE}",
            (namespace, id, now),
        ).fetchone()
        if found is not None:
            version_of(found[0], shown, namespace, id)  # out of range: unreadable
        raise StoreConflict(
            namespace, id, expect or 0, 0 if found is None else found[0]
        )
    return int(row[0])


def _untouched(conn: psycopg.Connection[Any]) -> bool:
    """Whether an idle pooled connection may be used: the server has sent
    nothing on it since it was last used. A pooled connection listens to no
    channel, so anything there is the server ending the session (its FATAL
    message, then the end of the stream)."""
    if conn.closed:
        return False
    try:
        poller = select.poll()  # not select.select: a busy server's fd passes 1024
        poller.register(conn.fileno(), select.POLLIN)
        return not poller.poll(0)
    except (OSError, ValueError, psycopg.Error):
        return False

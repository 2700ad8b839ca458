"""The Redis store: the ``redis`` package's blocking client over a pool.

Layout, under a key prefix (``yieldmcp:`` by default, so one Redis can host
other data):

- a document is a hash ``{v: JSON, ver: version, exp: expiry}``;
- a stream is a Redis Stream whose entry IDs are ``0-1``, ``0-2``, ...: the
  explicit IDs make "records from index ``start``" one ``XRANGE``, and
  ``XREAD BLOCK`` wakes a waiter in any process the moment another appends,
  with nothing to poll (a list would need a second key to block on);
- ``n:NAMESPACE`` is the set of a namespace's document ids, for ``scan``;
- ``expiry`` is a sorted set of every expiring key by expiry time, for
  ``sweep``. Expiring keys also get ``PEXPIREAT``, so Redis drops them on
  its own even if nobody sweeps.

Every write that reads first (compare-and-swap, append) is one Lua script,
so it is atomic against every other client.

Durability is the server's: with ``appendonly yes`` and the default
``appendfsync everysec`` a Redis crash or power loss may lose the last
second of writes; ``appendfsync always`` loses nothing acknowledged, at one
fsync per write. Without the AOF (RDB snapshots only) everything since the
last snapshot can be lost. A crash of *our* process (kill -9) loses nothing
Redis acknowledged.

Timeouts: reaching Redis takes at most ``connect_timeout`` seconds, and any
one reply at most ``timeout`` (the socket's timeout; a ``wait`` blocks in
pieces of half of it), after which the call fails with
:class:`~.base.StoreUnavailable`. The URL's own ``socket_timeout`` wins.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, final

import redis
import redis.exceptions

from .base import (
    Document,
    StoreConflict,
    StoreError,
    StoreUnavailable,
    StoreUnreadable,
)
from .codec import Unreadable, document_of, dumps, records_of, redact
from .redis_scripts import APPEND, PUT, PUT_APPEND, READ, SWEEP_ONE

__all__ = ["RedisStore"]


@final
class RedisStore:
    """A :class:`~bridge.stores.base.JournalStore` on a Redis server."""

    blocking = True

    def __init__(
        self,
        url: str,
        *,
        prefix: str = "yieldmcp:",
        connect_timeout: float = 10.0,
        timeout: float = 5.0,
    ) -> None:
        self.url = url
        self._shown = redact(url)
        self._unreadable = Unreadable(self._shown)
        self._prefix = prefix
        self._expiry = f"{prefix}expiry"
        self._closed = False
        self._closing = threading.Lock()
        _check_database(url, self._shown)
        try:
            # Any: redis-py's return types are unions over its modes; this
            # store runs in one (decode_responses) and converts each result.
            client: Any = redis.Redis
            # The URL's own socket_timeout (and the rest) wins over these.
            # A value that is not UTF-8 (no writer of ours stores one) reads
            # as text holding surrogates, which the codec names unreadable:
            # decoding strictly raised inside redis-py, and one such value
            # failed a whole scan (recovery's, the journal's listing).
            self._client: Any = client.from_url(
                url, decode_responses=True, encoding_errors="surrogateescape",
                socket_connect_timeout=connect_timeout, socket_timeout=timeout,
                socket_keepalive=True,
            )  # fmt: skip
            self._client.ping()
        except (redis.exceptions.RedisError, ValueError) as exc:
            raise StoreUnavailable(f"cannot reach {self._shown}: {exc}") from None
        self._put: Any = self._client.register_script(PUT)
        self._append: Any = self._client.register_script(APPEND)
        self._read: Any = self._client.register_script(READ)
        self._put_append: Any = self._client.register_script(PUT_APPEND)
        self._sweep_one: Any = self._client.register_script(SWEEP_ONE)

    # -- keys ----------------------------------------------------------------

    def _doc_key(self, namespace: str, id: str) -> str:
        # JSON of the pair: unambiguous whatever the names contain.
        return f"{self._prefix}d:{json.dumps([namespace, id])}"

    def _stream_key(self, namespace: str, id: str) -> str:
        return f"{self._prefix}s:{json.dumps([namespace, id])}"

    def _index_key(self, namespace: str) -> str:
        return f"{self._prefix}n:{namespace}"

    # -- documents -----------------------------------------------------------

    def get(self, namespace: str, id: str) -> Document | None:
        with self._errors(self._kinds(namespace, id, "document")):
            found = self._client.hmget(self._doc_key(namespace, id), "v", "ver", "exp")
        return self._document(found, time.time(), namespace, id)

    def put(
        self,
        namespace: str,
        id: str,
        value: Mapping[str, Any],
        *,
        expect: int | None = None,
        expires_at: float | None = None,
    ) -> int:
        args = _put_args(id, value, expect, expires_at)
        keys = [self._doc_key(namespace, id), self._index_key(namespace), self._expiry]
        with self._errors(self._kinds(namespace, id, "document")):
            reply = self._put(keys=keys, args=args)
        done, version = self._checked(reply, namespace, id)
        if not done:
            raise StoreConflict(namespace, id, expect or 0, int(version))
        return int(version)

    def get_and_read(
        self, namespace: str, id: str
    ) -> tuple[Document | None, list[Mapping[str, Any]]]:
        keys = [self._stream_key(namespace, id), self._expiry]
        now = time.time()
        # One round trip, in order (MULTI): the document, then the stream.
        kinds = self._kinds(namespace, id, "document", "stream")
        with self._errors(kinds), self._client.pipeline(transaction=True) as pipe:
            pipe.hmget(self._doc_key(namespace, id), "v", "ver", "exp")
            self._read(keys=keys, args=[repr(now), "0-1"], client=pipe)
            row, found = pipe.execute()
        document = self._document(row, now, namespace, id)
        return document, records_of(found, self._shown, namespace, id)

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
        keys = [
            self._doc_key(namespace, id),
            self._index_key(namespace),
            self._expiry,
            self._stream_key(namespace, id),
        ]
        args = [
            *_put_args(id, value, expect, expires_at),
            *_append_args(records, expires_at),
        ]
        with self._errors(self._kinds(namespace, id, "document", "stream")):
            done, version = self._checked(
                self._put_append(keys=keys, args=args), namespace, id
            )
        if not done:
            raise StoreConflict(namespace, id, expect or 0, int(version))
        return int(version)

    def delete(self, namespace: str, id: str) -> None:
        doc, stream = self._doc_key(namespace, id), self._stream_key(namespace, id)
        with self._errors(), self._client.pipeline(transaction=True) as pipe:
            pipe.delete(doc, stream)
            pipe.zrem(self._expiry, doc, stream)
            pipe.srem(self._index_key(namespace), id)
            pipe.execute()

    def scan(self, namespace: str) -> Iterator[tuple[str, Document]]:
        with self._errors():
            ids = sorted(self._client.smembers(self._index_key(namespace)))
            with self._client.pipeline(transaction=False) as pipe:
                for id in ids:
                    pipe.hmget(self._doc_key(namespace, id), "v", "ver", "exp")
                # Each key's error its own: one key of another type (a list
                # where a hash belongs) failed the whole scan, and recovery
                # and the journal's listing with it, for every document.
                rows = pipe.execute(raise_on_error=False)
            for row in rows:
                if isinstance(row, Exception) and not _wrong_type(row):
                    raise row
        now = time.time()
        return iter(
            self._unreadable.scan(
                namespace,
                zip(ids, rows, strict=True),
                lambda id, row: self._scanned(row, now, namespace, id),
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
        args = _append_args(records, expires_at)
        keys = [self._stream_key(namespace, id), self._expiry]
        with self._errors(self._kinds(namespace, id, "stream")):
            return int(self._append(keys=keys, args=args))

    def append_many(
        self,
        batch: Sequence[tuple[str, str, Sequence[Mapping[str, Any]], float | None]],
    ) -> list[int]:
        """Several appends in one round trip (a pipeline); their lengths.

        Each append is its own atomic script; the off-loop runner batches
        concurrent appends through this.
        """
        with self._errors(), self._client.pipeline(transaction=False) as pipe:
            for namespace, id, records, expires_at in batch:
                args = _append_args(records, expires_at)
                keys = [self._stream_key(namespace, id), self._expiry]
                self._append(keys=keys, args=args, client=pipe)
            return [int(length) for length in pipe.execute()]

    def read(self, namespace: str, id: str, start: int = 0) -> list[Mapping[str, Any]]:
        keys = [self._stream_key(namespace, id), self._expiry]
        args = [repr(time.time()), f"0-{max(0, start) + 1}"]
        with self._errors(self._kinds(namespace, id, "stream")):
            found = self._read(keys=keys, args=args)
        return records_of(found, self._shown, namespace, id, max(0, start))

    def wait(
        self, namespace: str, id: str, start: int, timeout: float
    ) -> list[Mapping[str, Any]]:
        deadline = time.monotonic() + timeout
        woke = lost = False
        while True:
            found = self.read(namespace, id, start)
            left = deadline - time.monotonic()
            if found or left <= 0:
                return found
            if woke:
                # XREAD saw entries our clock calls expired (Redis has not
                # dropped them yet): do not spin on them.
                time.sleep(min(0.05, left))
            # XREAD BLOCK returns as soon as an entry at index start or later
            # exists, appended by any client (block=0 is "forever": ≥ 1 ms);
            # each block ends well within the socket's timeout.
            block = min(left, self._block_limit())
            try:
                with self._errors():
                    woke = bool(
                        self._client.xread(
                            {self._stream_key(namespace, id): f"0-{max(0, start)}"},
                            count=1,
                            block=max(1, int(block * 1000)),
                        )
                    )
            except StoreUnavailable:
                # The blocked connection was ended (a restart, a failover,
                # CLIENT KILL): read again on another, which says whether
                # the server is there at all.
                if lost:
                    raise
                lost, woke = True, True

    # -- upkeep --------------------------------------------------------------

    def sweep(self, now: float) -> int:
        with self._errors():
            due = self._client.zrangebyscore(self._expiry, "-inf", now)
            swept = 0
            for key in due:
                try:
                    namespace, id = self._names(key)
                except (ValueError, TypeError) as exc:  # not a key we wrote
                    self._unreadable.say("expiry", key, exc)
                    continue
                keys = [self._expiry, key, self._index_key(namespace)]
                args = [repr(now), id if key.startswith(f"{self._prefix}d:") else ""]
                swept += int(self._sweep_one(keys=keys, args=args))
        return swept

    def close(self) -> None:
        with self._closing:
            if self._closed:
                return
            self._closed = True
        self._client.close()

    def _block_limit(self) -> float:
        """Seconds one ``XREAD BLOCK`` may last: half the socket's timeout."""
        kwargs: Any = self._client.connection_pool.connection_kwargs
        socket_timeout: Any = kwargs.get("socket_timeout")
        if not isinstance(socket_timeout, int | float) or socket_timeout <= 0:
            return 60.0
        return max(0.001, socket_timeout / 2)

    def _checked(self, reply: Any, namespace: str, id: str) -> tuple[Any, Any]:
        """A put script's ``{done, version}``, or ``{0, 0, why}`` for a live
        hash it would not write over (its ``ver`` or ``exp`` no number, or
        ``ver`` below 1: no writer of ours made it)."""
        if len(reply) == 3:
            raise StoreUnreadable(self._shown, namespace, id, "document", str(reply[2]))
        if len(reply) != 2:
            raise StoreUnreadable(
                self._shown, namespace, id, "document", "its version is not a number"
            )
        return reply[0], reply[1]

    def _document(
        self, row: list[str | None], now: float, namespace: str, id: str
    ) -> Document | None:
        """The document a hash ``{v, ver, exp}`` holds, or None if it is
        missing or expired.

        Raises:
            StoreUnreadable: ``v`` is not a JSON object, or ``ver`` or
                ``exp`` is not a number.
        """
        value, version, expiry = row
        if value is None or version is None:
            return None
        try:
            expires_at = float(expiry) if expiry else None
            number = int(version)
        except ValueError:  # a stranger's hash: its ver or exp is no number
            raise StoreUnreadable(
                self._shown, namespace, id, "document", "its version or expiry "
                "is not a number",
            ) from None  # fmt: skip
        if expires_at is not None and expires_at <= now:
            return None
        return document_of((value, number, expires_at), self._shown, namespace, id)

    def _scanned(
        self, row: list[str | None] | Exception, now: float, namespace: str, id: str
    ) -> Document | None:
        if isinstance(row, Exception):  # a key of another type (scan kept it)
            raise StoreUnreadable(
                self._shown,
                namespace,
                id,
                "document",
                "a Redis key of another type, not a hash",
            )
        return self._document(row, now, namespace, id)

    def _kinds(
        self, namespace: str, id: str, *parts: str
    ) -> Callable[[], StoreUnreadable | None]:
        """What says, after a ``WRONGTYPE`` error, whether the document's
        hash or the stream's key (``parts``) holds a key of another type: a
        damaged or a stranger's key, which no retry mends (it was taken for
        an outage, and the write retried for ever)."""
        keys = {
            "document": (self._doc_key(namespace, id), "hash"),
            "stream": (self._stream_key(namespace, id), "stream"),
        }

        def damaged() -> StoreUnreadable | None:
            try:
                with self._client.pipeline(transaction=False) as pipe:
                    for part in parts:
                        pipe.type(keys[part][0])
                    found = pipe.execute()
            except redis.exceptions.RedisError:
                return None  # the first error stands
            for part, kind in zip(parts, found, strict=True):
                want = keys[part][1]
                if kind not in (want, "none"):
                    why = f"a Redis {_kind(kind)}, not a {want}"
                    return StoreUnreadable(self._shown, namespace, id, part, why)
            return None

        return damaged

    def _names(self, key: str) -> tuple[str, str]:
        namespace, id = json.loads(key[len(self._prefix) + 2 :])
        return str(namespace), str(id)

    def _errors(
        self, damaged: Callable[[], StoreUnreadable | None] | None = None
    ) -> _Errors:
        if self._closed:
            raise StoreUnavailable(f"{self._shown}: the store is closed")
        return _Errors(self._shown, damaged)


class _Errors:
    """Turn the client's exceptions into the store's, each one line.

    ``damaged`` (after a ``WRONGTYPE`` error) names the key of another type
    where the operation's document or stream belongs: that is
    :class:`~.base.StoreUnreadable`, not a store failing.
    """

    def __init__(
        self, shown: str, damaged: Callable[[], StoreUnreadable | None] | None
    ) -> None:
        self._shown = shown
        self._damaged = damaged

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: Any, tb: Any) -> None:
        if exc is None:
            return
        if isinstance(
            exc, redis.exceptions.ConnectionError | redis.exceptions.TimeoutError
        ):
            raise StoreUnavailable(f"{self._shown}: {exc}") from exc
        if self._damaged is not None and _wrong_type(exc):
            unreadable = self._damaged()
            if unreadable is not None:
                raise unreadable from None
        if isinstance(exc, redis.exceptions.RedisError):
            raise StoreError(f"{self._shown}: {exc}") from exc


def _wrong_type(exc: BaseException) -> bool:
    """Whether Redis refused a command on a key of another type (the reply
    starts ``WRONGTYPE``; from a script, it follows the script's name)."""
    return isinstance(exc, redis.exceptions.ResponseError) and "WRONGTYPE" in str(exc)


def _kind(kind: Any) -> str:
    """A key's type as ``TYPE`` says it, safe to print (a module's type
    name is the module's to choose)."""
    text = str(kind)
    return text if text.isalnum() and len(text) <= 20 else "key of another type"


def _check_database(url: str, shown: str) -> None:
    """Refuse a ``redis://`` URL whose path is not a database number.

    redis-py reads ``/7x`` or ``/abc`` as no database at all and uses
    database 0, which other data may share (``/99``, past the server's
    databases, the server itself refuses).

    Raises:
        StoreUnavailable: the path is not empty, ``/``, nor ``/N``.
    """
    parts = urllib.parse.urlsplit(url)
    if parts.scheme == "unix" or "db" in urllib.parse.parse_qs(parts.query):
        return  # unix: the path is the socket's; ?db= redis-py checks itself
    path = urllib.parse.unquote(parts.path)
    number = path.removeprefix("/")
    if number and not (number.isascii() and number.isdigit()):
        raise StoreUnavailable(
            f"{shown}: the database {path[:40]!r} is not a number: write "
            "redis://HOST:PORT/N, N a database number (0 when left out)"
        )


def _put_args(
    id: str, value: Mapping[str, Any], expect: int | None, expires_at: float | None
) -> list[str]:
    return [
        dumps(value),
        "" if expect is None else str(expect),
        "" if expires_at is None else repr(float(expires_at)),
        repr(time.time()),
        id,
        "" if expires_at is None else str(_ms(expires_at)),
    ]


def _append_args(
    records: Sequence[Mapping[str, Any]], expires_at: float | None
) -> list[str]:
    return [
        repr(time.time()),
        "" if expires_at is None else repr(float(expires_at)),
        "" if expires_at is None else str(_ms(expires_at)),
        *(dumps(record) for record in records),
    ]


def _ms(expires_at: float) -> int:
    return int(expires_at * 1000)

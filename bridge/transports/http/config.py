"""The bounds and settings of the Streamable HTTP endpoint, in one value.

Every queue and store the transport keeps is bounded by a field here, so a
misbehaving client costs a known amount of memory. Nothing here does I/O.
"""

from __future__ import annotations

from typing import Literal, final

import attrs

from bridge.server.limits import duration, positive

__all__ = ["HttpLimits"]


@final
@attrs.frozen(kw_only=True)
class HttpLimits:
    """Bounds of the HTTP transport. The defaults suit one local user.

    Attributes:
        max_body: largest request body in bytes (larger: 413).
        bodies_bytes: bytes of request bodies being received at once, on all
            connections of the process together (a body counts the bytes
            that have come, not its declared ``Content-Length``, which a
            client need not send): a body that would pass it is answered 503 with
            ``Retry-After``. Bodies are read before their session is known,
            so ``session_bytes`` cannot count them. Default: 64 MiB, and at
            least 16 times ``max_body``; never less than ``max_body``.
        requests_memory: bytes of memory the requests being answered may
            take once read, on all connections together, as estimated from
            their JSON before it is read (a small value takes many times its
            bytes: 4 MiB of ``{},`` took 100 MiB), held from the read until
            the request is answered (a 2025-11-25 call: until its POST's
            response ends). A request whose estimate alone is over it: 413;
            one that does not fit beside the others: 503 with ``Retry-After``.
        body_timeout: seconds a request body may take to arrive (then 408),
            and a response write may stall (a peer that stopped reading: the
            connection closes).
        header_timeout: seconds a request head may take to arrive, from the
            connection's start or the first byte of a request (then 408 and
            the connection closes).
        keepalive_timeout: seconds a kept-alive connection may stay quiet
            between requests before it closes.
        max_header_bytes: largest request head in bytes (then 431).
        max_connections: connections served at once, kept below the
            descriptor limit (``ulimit -n`` minus 128); a connection beyond
            is answered 503, with one warning a minute in the log.
        backlog: the listen backlog: connections the kernel queues before
            the server accepts them (capped by ``net.core.somaxconn``).
        max_sessions: live 2025-11-25 sessions at once; a new one evicts an
            idle one (no call in flight), and only when every session has
            calls in flight is it refused (503).
        unused_session_timeout: seconds a session that has made no request
            since ``initialize`` (and has no open stream) lives on.
        orphan_timeout: seconds a session with calls in flight but no open
            stream and no request lives on: its client is gone, so its calls
            are cancelled (their ``finally`` runs).
        session_idle_timeout: seconds a session with no request and no open
            stream lives on; then it ends and its calls are cancelled.
        session_bytes: bytes one session may hold (request bodies in flight,
            stored events, what it stores); a request beyond: 429, -32000.
        event_capacity: SSE events kept per session for resumption; beyond,
            old progress and log notices are dropped first (with a log line),
            and a client that falls behind other events loses its stream
            (never silently).
        event_bytes: the same bound in bytes.
        heartbeat: seconds of quiet after which an SSE stream (a call's, the
            GET stream, ``subscriptions/listen``) gets a comment, so that a
            dead peer is noticed.
        max_stream_seconds: the longest a GET stream or a
            ``subscriptions/listen`` stream stays open; the client then
            resumes or listens again (a stalled peer cannot hold one forever).
        inbox_size: client messages per session waiting for the session's task
            (most notifications; requests and responses need not wait)
            before a POST waits.
        retry_ms: the ``retry:`` sent in priming events (how long a client
            waits before resuming a stream the server closed).
        session_lease: with a store, seconds a process counts as alive after
            it last renewed its lease (every third of it): how long a
            2025-11-25 call of a process that died waits before another
            process takes it on.
        inbox_ttl: with a store, seconds this process's inbox (answers other
            processes route to the calls it holds) outlives its last beat; it
            is renewed every beat, so it lasts while the process does.
        finished_call_ttl: with a store, seconds a finished 2025-11-25 call
            is kept: its response (a client resuming after the end gets it,
            on any process), with its params and journal (``yieldmcp
            journal`` takes it out); then all of it expires.
        stream_responses: how a 2025-11-25 request is answered:
            ``"when-needed"`` as plain JSON when the response is the first
            thing the server sends for it (a call that asks the client nothing
            and sends no notification; one write, and the connection is
            reused), else as an SSE stream with a priming event;
            ``"always"`` as an SSE stream, so that every response can be
            resumed after a dropped connection (what the reference SDK does).
        drain_seconds: on SIGTERM, the longest the server waits for the
            calls in flight to finish (new connections refused, new requests
            answered 503) before it cuts what is left and exits.
    """

    max_body: int = attrs.field(default=4 * 1024 * 1024, validator=positive)
    bodies_bytes: int | None = attrs.field(
        default=None, validator=attrs.validators.optional(positive)
    )

    requests_memory: int = attrs.field(default=256 * 1024 * 1024, validator=positive)

    @property
    def body_budget(self) -> int:
        """``bodies_bytes``, or its default: 64 MiB, and at least 16 of the
        largest body."""
        if self.bodies_bytes is not None:
            return self.bodies_bytes
        return max(64 * 1024 * 1024, 16 * self.max_body)

    body_timeout: float = attrs.field(default=30.0, validator=duration)
    header_timeout: float = attrs.field(default=10.0, validator=duration)
    keepalive_timeout: float = attrs.field(default=10.0, validator=duration)
    max_header_bytes: int = attrs.field(default=16 * 1024, validator=positive)
    max_connections: int = attrs.field(default=4096, validator=positive)
    backlog: int = attrs.field(default=4096, validator=positive)
    max_sessions: int = attrs.field(default=256, validator=positive)
    unused_session_timeout: float = attrs.field(default=30.0, validator=duration)
    orphan_timeout: float = attrs.field(default=15.0, validator=duration)
    session_idle_timeout: float = attrs.field(default=30 * 60.0, validator=duration)
    session_bytes: int = attrs.field(default=16 * 1024 * 1024, validator=positive)
    event_capacity: int = attrs.field(default=1024, validator=positive)
    event_bytes: int = attrs.field(default=8 * 1024 * 1024, validator=positive)
    heartbeat: float = attrs.field(default=15.0, validator=duration)
    max_stream_seconds: float = attrs.field(default=30 * 60.0, validator=duration)
    inbox_size: int = attrs.field(default=32, validator=positive)
    retry_ms: int = attrs.field(default=1000, validator=positive)
    session_lease: float = attrs.field(default=3.0, validator=duration)
    inbox_ttl: float = attrs.field(default=3600.0, validator=duration)
    finished_call_ttl: float = attrs.field(default=600.0, validator=duration)
    drain_seconds: float = attrs.field(default=30.0, validator=duration)
    stream_responses: Literal["always", "when-needed"] = attrs.field(
        default="when-needed",
        validator=attrs.validators.in_(("always", "when-needed")),
    )

    def __attrs_post_init__(self) -> None:
        if self.bodies_bytes is not None and self.bodies_bytes < self.max_body:
            # Else a body of max_body, which is allowed, could never be read.
            raise ValueError(
                f"bodies_bytes ({self.bodies_bytes}) is less than max_body "
                f"({self.max_body}): a body of max_body could never be read"
            )

"""The response to a 2025-11-25 request POSTed or resumed: JSON or SSE.

:class:`Answer` answers one POSTed request (plain JSON when the response is
the first thing ready, within ``HttpLimits.heartbeat``, and
``HttpLimits.stream_responses`` allows it, else an SSE stream with a priming
event, whose heartbeats keep a quiet call's connection open through
proxies); :func:`stream` writes a stream's events to an SSE response until it
ends (also for ``GET``). The session machinery is in :mod:`.legacy_session`;
the routes in :mod:`.legacy`.
"""

from __future__ import annotations

import logging
from typing import Final, final

import trio

from bridge.jsonrpc.messages import ErrorResponse, parse

from . import asgi as _asgi
from .asgi import Send, SseResponse
from .config import HttpLimits
from .events import EventsLost, StoredEvent, event_id
from .legacy_session import HttpSession
from .streams import Follower, StreamEnd, supports_priming

__all__ = ["SESSION_HEADER", "Answer", "plain", "stream"]

log = logging.getLogger("yieldmcp.http")

SESSION_HEADER: Final = "mcp-session-id"


async def plain(send: Send, status: int, text: str) -> None:
    await _asgi.respond(send, status, text.encode(), content_type="text/plain")


async def stream(
    http: HttpSession,
    follower: Follower,
    sse: SseResponse,
    lifetime: float = float("inf"),
) -> None:
    """Write a stream's events to ``sse`` until it ends, or for ``lifetime``
    seconds; end the response."""

    async def write(event: StoredEvent) -> None:
        # The response ends the stream: one write for both.
        await sse.event(event.data, id=event.id, last=event.final)

    why = StreamEnd.CLOSED
    try:
        with trio.move_on_after(lifetime):
            why = await http.follow(follower, write, sse.comment)
    except EventsLost:
        log.warning("an SSE client fell behind the event store; closing its stream")
    if why != StreamEnd.FINAL:
        log.debug("SSE stream %d of a session ended: %s", follower.stream, why)
    await sse.end()


@final
class Answer:
    """The response to one POSTed request: JSON if it comes first, else SSE."""

    def __init__(
        self,
        http: HttpSession,
        follower: Follower,
        version: str,
        limits: HttpLimits,
        send: Send,
    ) -> None:
        self.http = http
        self.follower = follower
        self.version = version
        self.limits = limits
        self.send = send
        self.headers = [(SESSION_HEADER, http.id)]
        self.succeeded = False  # the response is a result, on its way
        self.started = False  # the SSE response has begun

    async def run(self) -> None:
        """Answer with JSON or SSE (see the module docstring)."""
        try:
            with self.http.followed(self.follower):
                await self._run()
        except EventsLost:
            # The client's events were evicted before it read the first one.
            log.warning("an SSE client fell behind the event store; no response")
            if not self.started:
                await plain(self.send, 503, "Service Unavailable: events were lost")

    def _durable_wait(self) -> bool:
        http, follower = self.http, self.follower
        return (
            http.connection.home is not None
            and http.is_recorded(follower)
            and supports_priming(self.version)
            and not http.store.finished(follower.stream)
            and http.peek(follower) is None
        )

    async def _run(self) -> None:
        priming = event_id(self.follower.stream, self.follower.after)
        why: str | None = None
        if self.http.connection.home is not None:
            # With a store, the client learns where to resume a call only
            # once the call is written down: a resumption point shown before
            # would name a stream no process can take on if this one died.
            await self.http.wait_recorded(self.follower)
        if self._durable_wait():
            # With a store, a request that waits gets its stream's id at once:
            # if this process dies first, the client resumes it on another.
            sse = SseResponse(self.send, self.headers)
            self.started = self.succeeded = True
            sse.prime(priming, self.limits.retry_ms)
            await sse.flush()
            await stream(self.http, self.follower, sse)
            return
        with trio.move_on_after(self.limits.heartbeat):
            # Nothing by the heartbeat: a stream, which heartbeats keep open
            # through a proxy's idle timeout (a JSON answer held back lets
            # no byte through for as long as the call is quiet).
            why = await self.http.wait(self.follower)
        if why == StreamEnd.CLOSED:
            await plain(self.send, 404, "Not Found: the session ended")
            return
        first = self.http.peek(self.follower) if why is None else None
        limit = self.http.release_limit(self.follower)
        as_json = self.limits.stream_responses == "when-needed"
        if (
            as_json
            and first is not None
            and first.final
            and (limit is None or first.seq <= limit)
        ):
            self.succeeded = not isinstance(parse(first.data), ErrorResponse)
            # Sent without an event id, so never resumed: the store lets it go.
            self.http.store.discard(self.follower.stream)
            await _asgi.respond(
                self.send,
                200,
                first.data,
                content_type=_asgi.JSON,
                headers=self.headers,
            )
            return
        sse = SseResponse(self.send, self.headers)
        self.started = True
        if supports_priming(self.version):
            sse.prime(priming, self.limits.retry_ms)
            if first is None and (
                self.http.connection.home is None
                or self.http.is_recorded(self.follower)
            ):
                # Nothing is ready: the client gets its id before the wait
                # (with a store, only for a call written down).
                await sse.flush()
        if why is not None:  # released or superseded before the first event
            await sse.end()
            return
        self.succeeded = True
        await stream(self.http, self.follower, sse)

"""The 2025-11-25 (handshake era) side of the ``/mcp`` endpoint: POST, GET, DELETE.

What each method does (PROTOCOL.md §5.2, notes/conformance-fixtures.md §2):

* ``POST`` ``initialize`` without ``Mcp-Session-Id`` creates a session (an id
  from :mod:`secrets`); every other POST needs the header (400 without it, 404
  for a session that is unknown or gone). A notification or a response from
  the client is handed to the session and answered 202. A request is answered
  with an SSE stream: a priming event (id + ``retry:``, only for clients on
  2025-11-25 or later; in the same write as the first frame when that frame
  is ready at once), then ``event: message`` frames, ending after the
  response; with ``HttpLimits(stream_responses="when-needed")`` a response that
  is the first thing the server sends for it is plain ``application/json``.
* ``GET`` opens the standalone SSE stream (409 if one is open), or with
  ``Last-Event-ID`` resumes the stream that id belongs to.
* ``DELETE`` ends the session and cancels its calls.

Bounds (:class:`~.config.HttpLimits`): at most ``max_sessions`` sessions; an
``initialize`` beyond that evicts the session :func:`~.expiry.evictable`
names (one with no call in flight, unused or idle longest first), and only
when every session has calls in flight is it refused (503). A request that
would make its session hold more than ``session_bytes`` is refused (429,
JSON-RPC -32000). A GET stream ends after ``max_stream_seconds`` (the client
resumes or reopens it); every stream sends a comment after ``heartbeat``
quiet seconds. A client that fell behind the event store gets its stream
closed, never an HTTP 500.

On a server that checks access tokens, a session belongs to the principal
whose ``initialize`` opened it: a request naming it with another caller's
token is answered 404, as for an unknown session, and each request's calls
see its own token's principal (``ctx.principal``), so a stepped-up token's
scopes count from the request that carries it.

Header checks common to both eras, body reading, JSON parsing and the
``MCP-Protocol-Version`` check (against :meth:`LegacyEndpoint.negotiated`)
happen in :mod:`.app` before this module sees a request, which passes on the
version in effect; the session machinery is in :mod:`.legacy_session`.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final, final

import trio

from bridge.jsonrpc.messages import (
    INVALID_REQUEST,
    ErrorData,
    ErrorResponse,
    Message,
    Request,
    parse,
)
from bridge.server.limits import SERVER_BUSY

from . import asgi as _asgi
from .asgi import Receive, Send, SseResponse
from .config import HttpLimits
from .events import (
    STANDALONE,
    EventsLost,
    StoredEvent,
    UnknownEvent,
    event_id,
    parse_event_id,
)
from .expiry import evictable
from .guard import accepts
from .legacy_session import HttpSession
from .streams import Follower, StreamEnd, supports_priming

if TYPE_CHECKING:
    from bridge.server.server import Server
    from runtime.principal import Principal

__all__ = ["DEFAULT_VERSION", "LegacyEndpoint"]

log = logging.getLogger("yieldmcp.http")

DEFAULT_VERSION: Final = "2025-03-26"
"""Assumed when a request has no ``MCP-Protocol-Version`` and no session that
negotiated one (PROTOCOL.md §5.2)."""

SESSION_HEADER: Final = "mcp-session-id"


async def _plain(send: Send, status: int, text: str) -> None:
    await _asgi.respond(send, status, text.encode(), content_type="text/plain")


async def _json_error(
    send: Send, status: int, request_id: object, code: int, message: str
) -> None:
    rid = request_id if isinstance(request_id, int | str) else None
    body = _asgi.error_body(rid, ErrorData(code, message))
    await _asgi.respond(send, status, body, content_type=_asgi.JSON)


@final
class LegacyEndpoint:
    """Every live HTTP session of one server, and the methods that use them."""

    def __init__(
        self, server: Server, limits: HttpLimits, nursery: trio.Nursery
    ) -> None:
        self.server = server
        self.limits = limits
        self._nursery = nursery
        self._sessions: dict[str, HttpSession] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    # --- sessions --------------------------------------------------------------------

    async def _open(self, principal: Principal | None) -> HttpSession:
        http = HttpSession(secrets.token_hex(16), self.server, self.limits)
        http.owner = None if principal is None else principal.identity
        self._sessions[http.id] = http
        await self._nursery.start(self._run, http)
        return http

    async def _run(
        self, http: HttpSession, *, task_status: trio.TaskStatus[None]
    ) -> None:
        try:
            await http.run(task_status=task_status)
        finally:
            self._sessions.pop(http.id, None)

    async def _find(
        self, headers: Mapping[str, str], principal: Principal | None, send: Send
    ) -> HttpSession | None:
        """The session the request names, or None after answering 400/404
        (404 also for a session another principal opened)."""
        session_id = headers.get(SESSION_HEADER)
        if session_id is None:
            await _plain(send, 400, "Bad Request: Mcp-Session-Id header is required")
            return None
        http = self._sessions.get(session_id)
        who = None if principal is None else principal.identity
        if http is None or http.closed or http.owner != who:
            await _plain(send, 404, "Not Found: unknown or terminated session")
            return None
        http.connection.principal = principal
        return http

    def negotiated(self, headers: Mapping[str, str]) -> str | None:
        """The version the live session the request names negotiated, if any."""
        http = self._sessions.get(headers.get(SESSION_HEADER, ""))
        if http is None or http.closed:
            return None
        return http.connection.protocol_version

    # --- POST ------------------------------------------------------------------------

    async def post(
        self,
        headers: Mapping[str, str],
        message: Message,
        data: bytes,
        version: str,
        principal: Principal | None,
        receive: Receive,
        send: Send,
    ) -> None:
        """Answer a POST on behalf of a client speaking ``version``, made by
        ``principal`` (on a server that checks tokens)."""
        opening = (
            isinstance(message, Request)
            and message.method == "initialize"
            and SESSION_HEADER not in headers
        )
        if opening and not self._make_room():
            await _plain(send, 503, "Service Unavailable: too many busy sessions")
            return
        if opening:
            http = await self._open(principal)
            http.connection.principal = principal
        else:
            http = await self._find(headers, principal, send)
        if http is None:
            return
        if isinstance(message, Request) and not opening:
            http.used = True
        if not isinstance(message, Request):
            await http.deliver(data)
            await _asgi.respond(send, 202, headers=[(SESSION_HEADER, http.id)])
            return
        if http.busy(message.id):
            await _json_error(
                send, 400, message.id, INVALID_REQUEST, "request id already in use"
            )
            return
        if http.holds() + len(data) > self.limits.session_bytes:
            await _json_error(
                send, 429, message.id, SERVER_BUSY,
                f"Server busy: this session holds too much "
                f"(limit {self.limits.session_bytes} bytes); try again later",
            )  # fmt: skip
            return
        follower = await http.deliver_request(message.id, data, version)
        answer = _Answer(http, follower, version, self.limits, send)
        if http.store.finished(follower.stream):
            # Answered as it was delivered: nothing to wait for, so no
            # disconnect to watch for.
            await answer.run()
        else:
            await _asgi.until_disconnect(receive, answer.run)
        if opening and not answer.succeeded:
            http.close()  # a failed initialize leaves no session behind

    def _make_room(self) -> bool:
        """Whether a new session fits, after evicting one if need be."""
        if len(self._sessions) < self.limits.max_sessions:
            return True
        victim = evictable(self._sessions.values())
        if victim is None:
            return False
        log.info("HTTP session evicted to make room for a new one")
        victim.close()
        self._sessions.pop(victim.id, None)
        return True

    # --- GET -------------------------------------------------------------------------

    async def get(
        self,
        headers: Mapping[str, str],
        version: str,
        principal: Principal | None,
        receive: Receive,
        send: Send,
    ) -> None:
        if not _accepts_sse(headers):
            await _plain(
                send, 406, "Not Acceptable: GET needs Accept: text/event-stream"
            )
            return
        http = await self._find(headers, principal, send)
        if http is None:
            return
        http.used = True
        last = headers.get("last-event-id")
        sse = SseResponse(send, [(SESSION_HEADER, http.id)])
        if last is None:
            if http.standalone_busy():
                await _plain(
                    send, 409, "Conflict: the standalone stream is already open"
                )
                return
            priming = http.store.mark(STANDALONE)
            follower = http.resume(STANDALONE, parse_event_id(priming)[1])
            if supports_priming(version):
                await sse.event("", id=priming, retry=self.limits.retry_ms)
        else:
            try:
                number, seq = http.store.locate(last)
                http.store.read(number, seq)
            except (UnknownEvent, EventsLost) as exc:
                await _plain(send, 400, f"Bad Request: cannot resume: {exc}")
                return
            follower = http.resume(number, seq)
        lifetime = self.limits.max_stream_seconds
        await _asgi.until_disconnect(
            receive, lambda: _stream(http, follower, sse, lifetime)
        )

    # --- DELETE ----------------------------------------------------------------------

    async def delete(
        self, headers: Mapping[str, str], principal: Principal | None, send: Send
    ) -> None:
        http = await self._find(headers, principal, send)
        if http is None:
            return
        http.close()
        self._sessions.pop(http.id, None)
        await _asgi.respond(send, 200, headers=[(SESSION_HEADER, http.id)])


def _accepts_sse(headers: Mapping[str, str]) -> bool:
    return "accept" in headers and accepts(headers, "text/event-stream")


async def _stream(
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
class _Answer:
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
            await self._run()
        except EventsLost:
            # The client's events were evicted before it read the first one.
            log.warning("an SSE client fell behind the event store; no response")
            if not self.started:
                await _plain(self.send, 503, "Service Unavailable: events were lost")

    async def _run(self) -> None:
        priming = event_id(self.follower.stream, self.follower.after)
        why = await self.http.wait(self.follower)
        if why == StreamEnd.CLOSED:
            await _plain(self.send, 404, "Not Found: the session ended")
            return
        first = self.http.peek(self.follower) if why is None else None
        limit = self.http.release_limit(self.follower)
        plain = self.limits.stream_responses == "when-needed"
        if (
            plain
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
            if first is None:
                # Nothing is ready: the client gets its id before the wait.
                await sse.flush()
        if why is not None:  # released or superseded before the first event
            await sse.end()
            return
        self.succeeded = True
        await _stream(self.http, self.follower, sse)

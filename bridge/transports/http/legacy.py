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

With a store, a request whose handling needs the store (the session's
document for ``initialize`` and ``logging/setLevel``; for ``tools/call``,
whether the request started a call before; a session taken on from the
store) is answered ``-32603`` "Internal error: the server's store failed; try
again" when the store fails, as a 2026-07-28 round is, and a failed
``initialize`` leaves no session. Once the store is found away, every use of
it on a request's way fails at once until this process's beat finds it back
(:class:`~bridge.durable.presence.Outage`): a call fails within one
``--store-timeout``, not one per use. What can do without the store (routing
an answer, taking on a stream, ending a session) does, as before.

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

import contextlib
import logging
import secrets
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final, Literal, final

import trio

from bridge.durable import StoreError, StoreUnreadable
from bridge.durable.presence import Presence
from bridge.jsonrpc.errors import STORE_UNREADABLE, store_failed
from bridge.jsonrpc.messages import (
    INVALID_REQUEST,
    ErrorData,
    ErrorResponse,
    Ignored,
    Message,
    Notification,
    Request,
    RequestId,
    Response,
)
from bridge.server.limits import SERVER_BUSY

from . import asgi as _asgi
from . import durable
from .asgi import Receive, Send, SseResponse
from .config import HttpLimits
from .durable import HttpHome
from .events import (
    STANDALONE,
    EventsLost,
    UnknownEvent,
    parse_event_id,
)
from .expiry import evictable
from .guard import accepts
from .legacy_answer import SESSION_HEADER, Answer, plain, stream
from .legacy_session import HttpSession
from .streams import Follower, supports_priming

if TYPE_CHECKING:
    from bridge.server.server import Server
    from runtime.principal import Principal

__all__ = ["DEFAULT_VERSION", "LegacyEndpoint"]

log = logging.getLogger("yieldmcp.http")

_CANCELLED: Final = "notifications/cancelled"
# A plain answer's words for a record the store cannot read (a JSON-RPC
# answer says STORE_UNREADABLE itself).
_UNREADABLE_WHY: Final = STORE_UNREADABLE.removeprefix("Internal error: ")
DEFAULT_VERSION: Final = "2025-03-26"
"""Assumed when a request has no ``MCP-Protocol-Version`` and no session that
negotiated one (PROTOCOL.md §5.2)."""


async def _json_error(
    send: Send, status: int, request_id: object, code: int, message: str
) -> None:
    rid = request_id if isinstance(request_id, int | str) else None
    body = _asgi.error_body(rid, ErrorData(code, message))
    await _asgi.respond(send, status, body, content_type=_asgi.JSON)


async def _store_failed(
    send: Send, request_id: RequestId | None, exc: BaseException | None = None
) -> None:
    """Answer a request the store failed (with ``exc``), as a 2026-07-28
    round is answered (``-32603``); anything else (a GET, an answer, a
    notification) gets 503, which a client tries again later, or, for a
    record the store holds that cannot be read (asking again will not help),
    500."""
    if request_id is None:
        if isinstance(exc, StoreUnreadable):
            await plain(send, 500, f"Internal Server Error: {_UNREADABLE_WHY}")
        else:
            await plain(send, 503, "Service Unavailable: the store failed; try again")
        return
    body = _asgi.error_body(request_id, store_failed(exc))
    await _asgi.respond(send, 200, body, content_type=_asgi.JSON)


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
        self._reviving: dict[str, trio.Event] = {}  # sessions being taken on
        self._answering: set[Answer] = set()  # POSTs whose answers are written
        self.presence: Presence | None = None  # with a store: this process's lease
        if server.store is not None:
            self.presence = Presence(
                server.store,
                self._sessions.get,
                limits.session_lease,
                inbox_ttl=limits.inbox_ttl,
            )
            nursery.start_soon(self.presence.run)

    def __len__(self) -> int:
        return len(self._sessions)

    def _store(self) -> contextlib.AbstractContextManager[None]:
        """Around a use of the store on a request's way: fails at once while
        the store is known to be away (:class:`~bridge.durable.presence.Outage`)."""
        presence = self.presence
        return (
            contextlib.nullcontext() if presence is None else presence.outage.watching()
        )

    def calls_in_flight(self, *, parked: bool) -> int:
        """Requests the sessions answer (``parked``: those on their client
        too), and answers not yet written out whose call has ended (so a
        drain does not cut a response the call has just given)."""
        calls = sum(h.calls if parked else h.running for h in self._sessions.values())
        return calls + sum(
            a.http.store.finished(a.follower.stream) for a in self._answering
        )

    # --- sessions --------------------------------------------------------------------

    async def _open(self, principal: Principal | None) -> HttpSession:
        http = HttpSession(secrets.token_hex(16), self.server, self.limits)
        http.owner = None if principal is None else principal.identity
        if self.server.store is not None and self.presence is not None:
            presence = self.presence
            home = HttpHome(http, self.server.store, presence.id, presence.outage)
            http.connection.home = home
        http.opening = True  # not evictable before it has answered
        self._sessions[http.id] = http
        await self._nursery.start(self._run, http)
        return http

    async def _revive(
        self,
        session_id: str,
        principal: Principal | None,
        last: str | None,
        posted: RequestId | None = None,
    ) -> HttpSession | None:
        """Take on a durable session another process served (:mod:`.durable`),
        once however many requests name it at once; None if there is none.
        ``posted``: the id of the request being posted (if it started a call
        before, the client saw nothing of that call).

        Raises:
            StoreError: the store failed (whether there is one is unknown).
        """
        store, presence = self.server.store, self.presence
        if store is None or presence is None:
            return None
        pending = self._reviving.get(session_id)
        if pending is not None:
            await pending.wait()
            return self._sessions.get(session_id)
        self._reviving[session_id] = done = trio.Event()
        who = None if principal is None else principal.identity
        began = trio.current_time()
        try:
            ttl = self.limits.session_idle_timeout
            with self._store():
                loaded = await durable.load(store, session_id, who, ttl)
            if loaded is None or not self._make_room():
                return None
            state, generation = loaded
            base = generation << 32
            http = HttpSession(session_id, self.server, self.limits, base)
            http.owner, http.generation, http.used = who, generation, True
            http.connection.home = HttpHome(http, store, presence.id, presence.outage)
            http.connection.restore(state)
            http.connection.principal = principal
            self._sessions[http.id] = http
            await self._nursery.start(self._run, http)
            with self._store():
                calls = await durable.revive_calls(http, presence, last, posted)
        except StoreError as exc:
            log.warning("could not take a session on from the store: %s", exc)
            raise
        else:
            log.info(
                "HTTP session taken on from the store, %d calls in flight (%.1f s)",
                calls, trio.current_time() - began,
            )  # fmt: skip
            return http
        finally:
            del self._reviving[session_id]
            done.set()

    async def _current(
        self, http: HttpSession, principal: Principal | None, last: str | None
    ) -> HttpSession | None:
        """``http``, or, if another process took the session on since this
        copy was made (the store's generation outranks it), the session taken
        on again here from the store (its calls replayed): a resume must see
        what the other process sent.

        Raises:
            StoreError: the store failed while taking the session on again.
        """
        try:
            with self._store():
                if not await durable.stale(http):
                    return http
        except StoreError as exc:
            log.warning("could not check a session against the store: %s", exc)
            return http
        who = None if principal is None else principal.identity
        if http.owner != who:
            return http  # answered 404 by the caller
        http.close()  # its calls are in the store; they are taken on again
        self._sessions.pop(http.id, None)
        return await self._revive(http.id, principal, last)

    async def _run(
        self, http: HttpSession, *, task_status: trio.TaskStatus[None]
    ) -> None:
        try:
            await http.run(task_status=task_status)
        finally:
            self._sessions.pop(http.id, None)

    async def _find(
        self,
        headers: Mapping[str, str],
        principal: Principal | None,
        send: Send,
        posted: RequestId | None = None,
    ) -> HttpSession | None:
        """The session the request names, or None after answering 400/404
        (404 also for a session another principal opened); ``posted``: the
        id of the request being posted, if one is."""
        session_id = headers.get(SESSION_HEADER)
        if session_id is None:
            await plain(send, 400, "Bad Request: Mcp-Session-Id header is required")
            return None
        http = self._sessions.get(session_id)
        last = headers.get("last-event-id")
        try:
            if http is not None and not http.closed and last is not None:
                http = await self._current(http, principal, last)
            if http is None or http.closed:
                http = await self._revive(session_id, principal, last, posted)
        except StoreError as exc:
            # not 404: the session may be there
            await _store_failed(send, posted, exc)
            return None
        who = None if principal is None else principal.identity
        if http is None or http.closed or http.owner != who:
            await _unknown_session(send)
            return None
        http.connection.principal = principal
        return http

    async def unreadable_reply(
        self,
        headers: Mapping[str, str],
        reply: Ignored,
        data: bytes,
        principal: Principal | None,
    ) -> None:
        """A client's reply to a question of the session ``headers`` name,
        which cannot be read (JSON nested too deep, both a result and an
        error, another ``jsonrpc``): that question fails at once, as over
        stdio, rather than waits out its timeout for a reply that came. The
        POST is still refused (400); a question another process asked (with
        a store) waits as before."""
        http = self._sessions.get(headers.get(SESSION_HEADER, ""))
        who = None if principal is None else principal.identity
        if http is None or http.closed or http.owner != who:
            return
        if reply.answers not in http.session.outstanding:
            return
        with contextlib.suppress(trio.ClosedResourceError):
            await http.deliver(data)  # the session reads it as unreadable too

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
            await plain(send, 503, "Service Unavailable: too many busy sessions")
            return
        if opening:
            http = await self._open(principal)
            http.connection.principal = principal
            try:
                await self._post_to(
                    http, True, principal, message, data, version, receive, send
                )
            finally:
                http.opening = False
            return
        posted = message.id if isinstance(message, Request) else None
        http = await self._find(headers, principal, send, posted)
        if http is None:
            return
        await self._post_to(
            http, False, principal, message, data, version, receive, send
        )

    async def _post_to(
        self,
        http: HttpSession,
        opening: bool,
        principal: Principal | None,
        message: Message,
        data: bytes,
        version: str,
        receive: Receive,
        send: Send,
    ) -> None:
        """Answer a POST to ``http`` (``opening``: its ``initialize``)."""
        if isinstance(message, Request) and not opening:
            http.used = True
        if not isinstance(message, Request):
            if (
                self.presence is not None
                and isinstance(message, Response | ErrorResponse)
                and message.id not in http.session.outstanding
            ):
                # It may take a call on here: not from an outranked copy.
                http = await self._current(http, principal, None) or http
            if not await self._routed(http, message, data):
                try:
                    await http.deliver(data)
                except trio.ClosedResourceError:  # ended since it was found
                    await _unknown_session(send)
                    return
            await _asgi.respond(send, 202, headers=[(SESSION_HEADER, http.id)])
            return
        try:
            follower = await self._posted_again(http, message, data)
        except StoreError as exc:
            log.warning("could not look for a request in the store: %s", exc)
            await _store_failed(send, message.id, exc)
            return
        if follower is False:
            await _json_error(
                send, 400, message.id, INVALID_REQUEST, "request id already in use"
            )
            return
        if follower is None:
            if http.holds() + len(data) > self.limits.session_bytes:
                await _json_error(
                    send, 429, message.id, SERVER_BUSY,
                    f"Server busy: this session holds too much "
                    f"(limit {self.limits.session_bytes} bytes); try again later",
                )  # fmt: skip
                return
            try:
                follower = await http.deliver_request(message.id, data, version)
            except trio.ClosedResourceError:  # ended since it was found
                await _unknown_session(send)
                return
            if not await self._remember(http, message.method, opening):
                if opening:
                    http.close()  # a failed initialize leaves no session behind
                await _store_failed(send, message.id)
                return
        answer = Answer(http, follower, version, self.limits, send)
        self._answering.add(answer)
        try:
            if http.store.finished(follower.stream):
                # Answered as it was delivered: nothing to wait for, so no
                # disconnect to watch for.
                await answer.run()
            else:
                await _asgi.until_disconnect(receive, answer.run)
        finally:
            self._answering.discard(answer)
        if opening and not answer.succeeded:
            http.close()  # a failed initialize leaves no session behind

    async def _posted_again(
        self, http: HttpSession, message: Request, data: bytes
    ) -> Follower | Literal[False] | None:
        """If the client posts a request it posted before (it saw nothing of
        it: its connection or the process that had it died), a follower of
        that request's stream from the start, here or taken on from the store;
        None: a new request; False: another request under an id in use.

        Request ids are unique within a session, so a request posted again
        is this one retried: it gets the call the first POST started, never a
        second call.

        Raises:
            StoreError: the store failed: whether the request started a call
                is unknown, so no call is started.
        """
        if http.other_request(message.id, data):
            return False
        follower = http.again(message.id)
        if follower is not None or self.presence is None:
            return follower
        if message.method != "tools/call" or http.connection.home is None:
            return None  # only calls are written down
        with self._store():
            claim = await durable.claim_request(
                http, self.presence, message.id, message.params or {}
            )
        if claim == "unknown":
            return None
        if claim != "here":
            return False  # another request's, or a live process still has it
        return http.again(message.id)

    async def _routed(self, http: HttpSession, message: Message, data: bytes) -> bool:
        """Whether a client's response went to the process whose call asked
        for it (with a store, :mod:`.presence`)."""
        presence = self.presence
        if presence is None:
            return False
        try:
            with self._store():
                return await self._route(http, presence, message, data)
        except StoreError as exc:
            log.warning("could not route a client's answer: %s", exc)
            return False

    async def _route(
        self, http: HttpSession, presence: Presence, message: Message, data: bytes
    ) -> bool:
        """:meth:`_routed`, raising the store's failure."""
        if isinstance(message, Notification) and message.method == _CANCELLED:
            request_id = (message.params or {}).get("requestId")
            if not isinstance(request_id, int | str) or http.busy(request_id):
                return False  # malformed, or the call is this process's
            return await durable.route_cancel(http, presence, request_id, data)
        if not isinstance(message, Response | ErrorResponse):
            return False
        if message.id in http.session.outstanding:
            # The question is this process's. A durable call's answer is
            # written down before the client is told it arrived (202): the
            # client will not send it again if this process dies before the
            # call records it.
            if durable.is_question_id(message.id):
                await presence.keep(http.id, data)
            return False
        return await durable.route(http, presence, message.id, data)

    async def _remember(self, http: HttpSession, method: str, opening: bool) -> bool:
        """With a store, write down what a request changed of the session;
        False if the store failed a write the request needs (the session's
        document for ``initialize`` and ``logging/setLevel``: else the
        session would live here only, unknown to the others)."""
        if http.connection.home is None:
            return True
        needed = opening or method == "logging/setLevel"
        try:
            if not needed:
                await durable.touch(http)
            elif http.connection.protocol_version is not None:
                await durable.save(http)
        except StoreError as exc:
            log.warning("could not write an HTTP session to the store: %s", exc)
            return not needed
        return True

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
            await plain(
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
                await plain(
                    send, 409, "Conflict: the standalone stream is already open"
                )
                return
            priming = http.store.mark(STANDALONE)
            follower = http.resume(STANDALONE, parse_event_id(priming)[1])
            if supports_priming(version):
                await sse.event("", id=priming, retry=self.limits.retry_ms)
        else:
            began = trio.current_time()
            try:
                claimed = await self._claim(http, last)
            except StoreError as exc:
                # Not known here, and the store cannot say whose it is: the
                # stream may well exist (a 400 would tell the client it is
                # gone for good), so the client tries again.
                log.warning("could not take a call on from the store: %s", exc)
                await _store_failed(send, None, exc)
                return
            waited = trio.current_time() - began
            if waited > 1 or not claimed:
                log.info(
                    "resume from %s: %s after %.1f s", last,
                    "servable" if claimed else "held elsewhere", waited,
                )  # fmt: skip
            if not claimed:
                await plain(send, 503, "Service Unavailable: another process "
                            "serves this stream; resume again")  # fmt: skip
                return
            try:
                number, seq = http.store.locate(last)
                http.store.read(number, seq)
            except (UnknownEvent, EventsLost) as exc:
                await plain(send, 400, f"Bad Request: cannot resume: {exc}")
                return
            follower = http.resume(number, seq)
        # Accepted: the head goes out now, not with the first event or
        # heartbeat (a resumed stream with nothing new, or a standalone one
        # of a client too old for a priming event, would otherwise show the
        # client, and a proxy's timeout, nothing for --heartbeat seconds).
        await sse.open()
        lifetime = self.limits.max_stream_seconds
        await _asgi.until_disconnect(
            receive, lambda: stream(http, follower, sse, lifetime)
        )

    async def _claim(self, http: HttpSession, last: str) -> bool:
        """With a store, make a stream another process began servable here;
        False if a live process holds it (the client resumes again later).

        Raises:
            StoreError: the stream is not known here, and the store failed.
        """
        presence = self.presence
        if presence is None:
            return True
        with contextlib.suppress(UnknownEvent, EventsLost):
            http.store.locate(last)
            return True  # known here
        with self._store():
            claim = await durable.claim_stream(http, presence, last)
        return claim != "elsewhere"

    # --- DELETE ----------------------------------------------------------------------

    async def delete(
        self, headers: Mapping[str, str], principal: Principal | None, send: Send
    ) -> None:
        http = await self._find(headers, principal, send)
        if http is None:
            return
        http.close()
        self._sessions.pop(http.id, None)
        try:
            with self._store():
                await durable.forget(http)
        except StoreError as exc:
            log.warning("could not delete an HTTP session from the store: %s", exc)
        await _asgi.respond(send, 200, headers=[(SESSION_HEADER, http.id)])


def _accepts_sse(headers: Mapping[str, str]) -> bool:
    return "accept" in headers and accepts(headers, "text/event-stream")


async def _unknown_session(send: Send) -> None:
    await plain(send, 404, "Not Found: unknown or terminated session")

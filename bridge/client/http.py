"""Streamable HTTP for our MCP client, both eras, over httpx on trio.

:func:`http_transport` yields a :class:`~bridge.jsonrpc.transport.Transport`:
every message the session sends is one ``POST``, and what the server answers
(one JSON body, or an SSE stream of notifications, server requests and finally
the response) comes back through ``receive`` in order. The era follows the
messages, so :class:`~bridge.client.Client` needs no extra coupling:

* a request whose ``_meta`` holds the 2026-07-28 envelope is sent with its
  version in ``MCP-Protocol-Version`` plus ``Mcp-Method``, ``Mcp-Name`` and the
  ``Mcp-Param-*`` mirrors of ``x-mcp-header`` arguments (:mod:`.headers`). No
  session, no ``GET``; cancelling a request aborts its ``POST``, which is how
  2026-07-28 cancels, so ``notifications/cancelled`` is not posted;
* after ``initialize`` (2025-11-25 and older) it sends the ``Mcp-Session-Id``
  and ``MCP-Protocol-Version`` on every request, opens the standalone ``GET``
  stream once initialized (a 405 means there is none), resumes a request's SSE
  stream that ended early by ``GET`` + ``Last-Event-ID`` after the server's
  ``retry:`` delay (while the server is unreachable or answers 502/503/504:
  it restarts, or a worker takes the call on), posts an answer to the
  server's question again on the same terms, and ``DELETE``\\ s the session
  on close (waiting :data:`CLOSE_TIMEOUT` at most).

:meth:`HttpClientTransport.send` of a request does the whole exchange in the
caller's task (post, read, resume) and returns once the response is in the
inbox (:mod:`._http_inbox`): its failure raises from ``send`` and
``Session.request``, and cancelling the caller closes the connection.

A 404 to a request sent with our session id means the server ended the
session (2025-11-25): the transport posts the ``initialize`` it carried before
without a session id, then ``notifications/initialized``, and sends the refused
request again; concurrent refusals renew it once. What the server kept per
session is not carried over. A renewal that fails or negotiates another
version, or a 404 while resuming, is a :class:`~runtime.errors.BrokenSessionError`.

Errors: an unreachable server, or a dropped connection that cannot be resumed,
is :class:`~runtime.errors.BrokenSessionError`; an HTTP error whose body is a
JSON-RPC error is that :class:`~runtime.errors.PeerError`; any other HTTP error
is :class:`~runtime.errors.RemoteProtocolError` naming the status; so is a
body in a content coding other than the ``gzip`` or ``deflate`` it asks for
(:mod:`bridge.http_body` decodes them a piece at a time, so a compressed
body is refused past ``max_message`` having held no more). With ``auth``
(:class:`~bridge.client.oauth.OAuthSession`) each request carries the access
token, and a 401 or 403 ``insufficient_scope`` runs the OAuth flow and sends it
again (:class:`~runtime.errors.AuthorizationError` if that fails). It does not
negotiate versions, or speak the pre-2025 HTTP+SSE transport.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import re
from collections.abc import AsyncGenerator, Mapping
from typing import Final, final

import httpx
import trio

from bridge.jsonrpc.messages import (
    INTERNAL_ERROR,
    ErrorData,
    ErrorResponse,
    Ignored,
    Invalid,
    Message,
    Notification,
    Request,
    RequestId,
    Response,
    dumps,
    parse,
)
from runtime.errors import (
    AuthorizationError,
    BrokenSessionError,
    PeerError,
    PeerUnreachable,
    RemoteProtocolError,
)

from ..http_body import ACCEPT_ENCODING, UnreadableEncoding
from ..http_clients import new_client
from ._http_inbox import Cursor, Exchange, Inbox, private_answer, unreadable, why
from ._http_state import ConnectionState, is_cancel, session_id_of
from ._http_wire import (
    MAX_MESSAGE,
    TRANSIENT,
    again,
    is_sse,
    open_response,
    read_body,
    read_message,
    status_error,
)
from .oauth.flow import OAuthSession

__all__ = ["HttpClientTransport", "http_transport"]

log = logging.getLogger("yieldmcp.http_client")

_SENDABLE_ID: Final = re.compile(r"[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?")
"""An event id a ``Last-Event-ID`` header can carry back: visible ASCII, with
inner spaces only (a header's value is trimmed)."""
_LISTEN_WAIT: Final = 2.0  # seconds to wait for the standalone stream to open

CLOSE_TIMEOUT: Final = 2.0
"""Seconds closing a 2025-11-25 connection waits for the server to take its
``DELETE`` (as long as a stdio server is given to exit, before it is made
to): past it the session is left to expire on the server, and the caller's
``--timeout`` or Ctrl-C is not held up by a server that does not answer."""


MAX_ANSWERS_POSTING: Final = 256
"""Our answers to a 2025-11-25 server's requests being posted at once (four
times the questions a client answers at once): past it, the server is not
taking them, and the session ends."""


@final
class HttpClientTransport:
    """The client end of one Streamable HTTP connection. Build it with
    :func:`http_transport`.

    Attributes:
        url: the MCP endpoint.
        state: the version, session and tool header maps it follows.
    """

    def __init__(
        self,
        http: httpx.AsyncClient,
        url: str,
        nursery: trio.Nursery,
        *,
        headers: Mapping[str, str],
        retry: float,
        max_resumes: int,
        timeout: float,
        auth: OAuthSession | None = None,
        max_message: int = MAX_MESSAGE,
        close_timeout: float = CLOSE_TIMEOUT,
    ) -> None:
        self.url = url
        self._auth = auth
        self._max_message = max_message
        self.state = ConnectionState(headers)
        self._http = http
        self._nursery = nursery
        self._retry = retry
        self._max_resumes = max_resumes
        self._timeout = timeout
        self._close_timeout = close_timeout
        self._inbox = Inbox(url, self.state, max_message=max_message)
        self._closed = False
        self._handshake: Request | None = None  # to renew an expired session
        self._renewing = trio.Lock()
        self._answers_posting = 0  # our answers to the server, not yet taken
        self._receiving = trio.CancelScope()  # the wait in receive(), if any

    @property
    def session_id(self) -> str | None:
        """The 2025-11-25 ``Mcp-Session-Id``, once initialized."""
        return self.state.session_id

    @property
    def version(self) -> str | None:
        """The protocol version sent in ``MCP-Protocol-Version``."""
        return self.state.version

    @property
    def modern(self) -> bool:
        """Whether messages go out the 2026-07-28 way."""
        return self.state.modern

    async def receive(self) -> bytes:
        # A server that asks and never takes the answers ends the session:
        # each answer's POST holds a connection (the pool has no limit, as
        # every open stream holds one), and the session's task waits.
        if self._answers_posting <= MAX_ANSWERS_POSTING:
            with trio.CancelScope() as self._receiving:
                return await self._inbox.receive_channel.receive()
        for exchange in self._inbox.exchanges.values():
            exchange.scope.cancel()  # stop reading their streams: they fail
        raise RemoteProtocolError(
            f"the server does not read what it asks for: "
            f"{self._answers_posting} answers wait for it (the client posts "
            f"at most {MAX_ANSWERS_POSTING} at once)"
        )

    async def send(self, message: Message, *, related: RequestId | None = None) -> None:
        if self._closed:
            raise trio.ClosedResourceError("the HTTP transport is closed")
        if isinstance(message, Request):
            await self._exchange(message)
        elif isinstance(message, Response | ErrorResponse) and not self.modern:
            # The server's call waits for it: post it again if need be.
            post = functools.partial(self._post_one_way, message)
            self._answers_posting += 1
            if self._answers_posting > MAX_ANSWERS_POSTING:
                self._receiving.cancel()  # receive() says why
            try:
                await again(post, self._max_resumes, self._retry)
            finally:
                self._answers_posting -= 1
        elif not (self.modern and is_cancel(message)):
            await self._post_one_way(message)

    async def _exchange(self, request: Request) -> None:
        exchange = Exchange(request.method)
        self._inbox.exchanges[request.id] = exchange
        try:
            with exchange.scope:  # cancelled if the response comes another way
                cursor = await self._post_request(request, exchange)
                await self._resume(request, exchange, cursor)
        finally:
            del self._inbox.exchanges[request.id]

    async def _post_request(
        self, request: Request, exchange: Exchange, *, renew: bool = True
    ) -> Cursor:
        if request.method == "initialize":
            self._handshake = request
        headers = self.state.post_headers(request)
        sent_in = self.state.session_id
        # A 2025-11-25 session's request whose server went away before it
        # answered anything is posted again: the process that took it may
        # have died before it wrote the call down, and then no process can
        # resume it (another, with a store, takes the session on and starts
        # the call anew; one that holds the call refuses the id as in use).
        repost = not self.modern and sent_in is not None and self._handshake is not None
        async with self._posting(headers, dumps(request), repost=repost) as response:
            if request.method == "initialize":
                self.state.session_id = session_id_of(response)
            if response.status_code == 200 and is_sse(response):
                return await self._inbox.read(response, exchange, Cursor())
            body = (
                await read_message(
                    response, f"POST {self.url} ({request.method})", self._max_message
                )
                if response.is_success
                else await read_body(response)
            )
        if renew and self._expired(response, sent_in):
            await self._renew(sent_in)
            return await self._post_request(request, exchange, renew=False)
        await self._answered_by_body(request, exchange, response, body)
        return Cursor()

    @contextlib.asynccontextmanager
    async def _posting(
        self, headers: Mapping[str, str], content: bytes, *, repost: bool
    ) -> AsyncGenerator[httpx.Response]:
        """The POST's response; with ``repost``, the POST is sent once more
        (up to ``max_resumes`` times, ``retry`` apart) while the server
        disconnects without answering anything."""
        async with contextlib.AsyncExitStack() as stack:
            opened: list[httpx.Response] = []

            async def post() -> None:
                response = self._open("POST", headers, content)
                opened.append(await stack.enter_async_context(response))

            def unanswered(exc: BrokenSessionError) -> bool:
                return repost and isinstance(
                    exc.__cause__, httpx.RemoteProtocolError | httpx.ReadError
                )

            await again(post, self._max_resumes + 1, self._retry, unanswered)
            yield opened[0]

    def _expired(self, response: httpx.Response, sent_in: str | None) -> bool:
        return (
            response.status_code == 404
            and sent_in is not None
            and not self.modern
            and self._handshake is not None
        )

    async def _renew(self, expired: str | None) -> None:
        """Open a new session the way the expired one was opened."""
        async with self._renewing:
            if self.state.session_id != expired:
                return  # a concurrent request has renewed it already
            handshake, version = self._handshake, self.state.version
            assert handshake is not None
            log.info("session %s expired; initializing a new one", expired)
            headers = self.state.post_headers(handshake)
            async with self._open("POST", headers, dumps(handshake)) as response:
                self.state.session_id = session_id_of(response)
                answer = await private_answer(response, handshake.id, self._max_message)
            if not isinstance(answer, Response):
                self.state.session_id = None
                raise BrokenSessionError(
                    f"session {expired} expired and a new one could not be "
                    f"initialized at {self.url}: {why(answer, response)}"
                )
            self.state.answered("initialize", answer.result)
            if self.state.version != version:
                raise BrokenSessionError(
                    f"session {expired} expired and the new session speaks "
                    f"{self.state.version}, not {version}; connect again"
                )
            await self._post_one_way(Notification("notifications/initialized"))

    async def _answered_by_body(
        self,
        request: Request,
        exchange: Exchange,
        response: httpx.Response,
        body: bytes,
    ) -> None:
        """Deliver the response a plain (JSON) answer holds, or raise."""
        message = parse(body) if body.strip() else None
        if isinstance(message, Response | ErrorResponse):
            if await self._inbox.deliver(body, exchange):
                return
            if isinstance(message, ErrorResponse) and message.id is None:
                error = message.error
                raise PeerError(error.code, error.message, error.data)
        if response.is_success:
            raise RemoteProtocolError(
                f"POST {self.url} ({request.method}) answered HTTP "
                f"{response.status_code} without the response to the request: "
                f"{_body_is(message)}"
            )
        raise self._http_error("POST", request.method, response, body)

    async def _resume(
        self, request: Request, exchange: Exchange, cursor: Cursor
    ) -> None:
        """Until answered: resume the request's stream with GET + Last-Event-ID."""
        attempts = 0
        while not exchange.answered:
            if self.modern or cursor.last_id is None:
                raise BrokenSessionError(
                    f"the response stream of {request.method} from {self.url} "
                    f"ended before the response, and cannot be resumed"
                )
            if not _SENDABLE_ID.fullmatch(cursor.last_id):
                # A header carries visible ASCII only: httpx would raise
                # UnicodeEncodeError, and a control character is the server's
                # to send, not ours to echo.
                raise RemoteProtocolError(
                    f"the response stream of {request.method} from {self.url} "
                    f"ended before the response, and cannot be resumed: its "
                    f"last event id is not visible ASCII, which Last-Event-ID "
                    f"cannot carry"
                )
            if attempts >= self._max_resumes:
                raise BrokenSessionError(
                    f"gave up resuming the response stream of {request.method} "
                    f"after {attempts} attempts"
                )
            attempts += 1
            # The server's retry: delay is the behaviour asked for (SEP-1699).
            await trio.sleep(self._retry if cursor.retry is None else cursor.retry)
            before = cursor.last_id
            cursor = await self._resume_once(request, exchange, cursor)
            if cursor.last_id != before:
                attempts = 0  # progress: the stream is alive

    async def _resume_once(
        self, request: Request, exchange: Exchange, cursor: Cursor
    ) -> Cursor:
        headers = self.state.get_headers(cursor.last_id)
        try:
            async with self._open("GET", headers) as response:
                if response.status_code == 200 and is_sse(response):
                    return await self._inbox.read(response, exchange, cursor)
                body = await read_body(response)
        except BrokenSessionError as exc:  # the server is away; try again later
            log.debug("resuming %s failed: %s", request.method, exc)
            return cursor
        if response.status_code in TRANSIENT:  # a balancer with no worker up
            return cursor
        raise self._http_error("GET", request.method, response, body)

    async def _post_one_way(self, message: Message) -> None:
        headers = self.state.post_headers(message)
        content = dumps(message)
        async with self._open("POST", headers, content) as response:
            body = b"" if response.is_success else await read_body(response)
        if not response.is_success:
            answer = isinstance(message, Response | ErrorResponse)
            if answer and response.status_code in TRANSIENT:
                raise BrokenSessionError(f"HTTP {response.status_code}: try again")
            if isinstance(message, Response) and response.status_code == 413:
                # Too large (a model's answer of 20 MB): the server's request
                # fails at once, saying so, rather than wait out its timeout.
                text = (
                    f"the client's answer is {len(content):,} bytes, more than "
                    f"the server takes (HTTP 413)"
                )
                log.warning("not taken: %s", text)
                refusal = ErrorData(INTERNAL_ERROR, text)
                await self._post_one_way(ErrorResponse(message.id, refusal))
                return
            if answer or is_cancel(message):
                # No one to tell: the server refused what it no longer wants.
                log.warning(
                    "the server refused a message (HTTP %d)", response.status_code
                )
                return
            what = message.method if isinstance(message, Notification) else "?"
            raise self._http_error("POST", what, response, body)
        if (
            isinstance(message, Notification)
            and message.method == "notifications/initialized"
            and not self.modern
        ):
            await self._open_standalone()

    async def _open_standalone(self) -> None:
        """Start listening, and wait (briefly) until the server has answered."""
        opened = trio.Event()
        self._nursery.start_soon(self._listen, opened)
        # Only to order the GET before our next request: a server that sends
        # the headers with its first event must not stall the handshake.
        with trio.move_on_after(min(self._timeout, _LISTEN_WAIT)):
            await opened.wait()

    async def _listen(self, opened: trio.Event) -> None:
        try:
            headers = self.state.get_headers()
            async with self._open("GET", headers, optional=True) as response:
                if response.status_code != 200 or not is_sse(response):
                    log.debug("no standalone stream (HTTP %d)", response.status_code)
                    return
                opened.set()
                await self._inbox.read(response, None, Cursor())
        except (BrokenSessionError, trio.ClosedResourceError) as exc:
            log.debug("the standalone stream ended: %s", exc)  # it is optional
        except AuthorizationError as exc:
            # Refused while the requests are not: the calls go on without it.
            log.warning("no standalone stream: %s", exc)
        finally:
            opened.set()

    @contextlib.asynccontextmanager
    async def _open(
        self,
        verb: str,
        headers: Mapping[str, str],
        content: bytes | None = None,
        *,
        optional: bool = False,
    ) -> AsyncGenerator[httpx.Response]:
        """The response to one request, asking for the content codings the
        body is read in (:mod:`bridge.http_body`), unless the caller's
        headers say otherwise; a body in another one fails the request.
        ``optional``: a request the client can do without (the standalone
        stream), which never asks the user to log in."""
        if not any(name.lower() == "accept-encoding" for name in headers):
            headers = {**headers, "Accept-Encoding": ACCEPT_ENCODING}
        opened = (
            open_response(self._http, verb, self.url, headers, content)
            if self._auth is None
            else self._auth.open(
                self._http, verb, self.url, headers, content, interactive=not optional
            )
        )
        try:
            async with opened as response:
                yield response
        except UnreadableEncoding as exc:
            raise RemoteProtocolError(f"{verb} {self.url}: {exc}") from None

    def _http_error(
        self, verb: str, method: str, response: httpx.Response, body: bytes
    ) -> Exception:
        session = None if self.modern else self.session_id
        return status_error(f"{verb} {self.url} ({method})", response, body, session)

    async def aclose(self) -> None:
        """End the session (DELETE, best effort) and the inbox."""
        if self._closed:
            return
        self._closed = True
        self._inbox.send_channel.close()
        if self.session_id is None or self.modern:
            return
        with trio.move_on_after(self._close_timeout):
            try:
                async with self._open("DELETE", self.state.get_headers()) as response:
                    log.debug("DELETE session: HTTP %d", response.status_code)
            except BrokenSessionError as exc:
                log.debug("could not DELETE the session: %s", exc)


def _body_is(message: Message | Invalid | Ignored | None) -> str:
    """What a success's body held instead of the response, in a few words."""
    match message:
        case None:
            return "its body is empty"
        case Invalid() | Ignored():
            return f"its body cannot be read ({unreadable(message)})"
        case Request(method=method) | Notification(method=method):
            return f"its body is a {method} message"
        case _:
            return "its body answers another request"


@contextlib.asynccontextmanager
async def http_transport(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    timeout: float = 30.0,
    retry: float = 1.0,
    max_resumes: int = 5,
    client: httpx.AsyncClient | None = None,
    auth: OAuthSession | None = None,
    max_message: int = MAX_MESSAGE,
    close_timeout: float = CLOSE_TIMEOUT,
) -> AsyncGenerator[HttpClientTransport]:
    """A Streamable HTTP transport to the MCP endpoint ``url``, for the block.

    Args:
        url: the endpoint, used exactly as given (e.g. ``http://127.0.0.1:8000/mcp``).
        headers: sent with every request (e.g. ``Authorization``).
        timeout: seconds to connect and send a request. Waiting for answers
            is unbounded: bound it with ``Session`` timeouts or trio cancel
            scopes.
        retry: seconds to wait before resuming a stream when the server gave
            no ``retry:``.
        max_resumes: consecutive resumptions without progress before a request
            fails; also how many times a 2025-11-25 request is posted again
            when the server disconnects without answering it (``retry``
            apart).
        client: an httpx client to use (it is not closed); by default one is
            made with no connection limit (every open stream holds one).
        auth: authorizes every request (see the module doc).
        max_message: the largest message read, in bytes: a JSON answer's
            body or one SSE event (16 MiB, as a stdio line); a longer one
            fails its request with ``RemoteProtocolError``.
        close_timeout: seconds the 2025-11-25 session's ``DELETE`` may take
            on close (:data:`CLOSE_TIMEOUT`); then it is given up, and the
            session left to expire on the server.
    """
    failure: Exception | None = None
    async with contextlib.AsyncExitStack() as stack:
        if client is None:
            client = await stack.enter_async_context(
                new_client(
                    PeerUnreachable,
                    timeout=httpx.Timeout(timeout, read=None, pool=None),
                    limits=httpx.Limits(max_connections=None),
                )
            )
        nursery = await stack.enter_async_context(trio.open_nursery())
        transport = HttpClientTransport(
            client,
            url,
            nursery,
            headers=headers or {},
            retry=retry,
            max_resumes=max_resumes,
            timeout=timeout,
            auth=auth,
            max_message=max_message,
            close_timeout=close_timeout,
        )
        try:
            yield transport
        except Exception as exc:
            # The caller's block failed: re-raise it as itself, not wrapped in
            # the nursery's ExceptionGroup (as Client.connect does).
            failure = exc
        finally:
            with trio.CancelScope(shield=True):
                await transport.aclose()
            nursery.cancel_scope.cancel()
    if failure is not None:
        raise failure

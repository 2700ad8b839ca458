"""One HTTP/1.1 connection: its requests in turn, each handed to an ASGI app.

h11 parses and frames; this module moves its bytes and enforces the
connection's clocks:

* the request head must be complete ``header_timeout`` seconds after the
  connection opens (or after the first byte of a later request): else 408
  and the connection closes (a stalled or slowloris client);
* between requests, a kept-alive connection may be quiet for
  ``keepalive_timeout`` seconds, then it closes;
* a response write that stalls ``write_timeout`` seconds (a peer that stopped
  reading) ends the connection;
* a request body still incomplete ``body_timeout`` seconds after the app
  first waited for more of it gets 408 (if no response began) and the
  connection closes; the scope's ``yieldmcp.body_timeout`` extension says
  so, so that an app need not time the body itself.

These deadlines are floats that one task per listener checks (:mod:`.clock`),
not a cancel scope per wait or write; a connection has one scope, which an
expired deadline cancels (with whatever app call the connection is serving).

A peer that goes away is noticed both ways: a failed or stalled write cancels
the request's app at once, and once the body is read the app's ``receive``
returns ``http.disconnect`` when the socket reaches its end (how the MCP
endpoint cancels a call whose client left). The body's own size and time
limits are the app's (it reads the body); a response that is not complete,
or a request body left unread, closes the connection instead of reusing it.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, final

import attrs
import h11
import trio

from .clock import Clock
from .wire import head_size, http_scope, refusal, response_head

__all__ = ["App", "Clock", "ConnectionSettings", "serve_connection"]

log = logging.getLogger("yieldmcp.http")

App = Callable[
    [
        Mapping[str, Any],
        Callable[[], Awaitable[dict[str, Any]]],
        Callable[[dict[str, Any]], Awaitable[None]],
    ],
    Awaitable[None],
]
Address = tuple[str, int] | None

_CHUNK: Final = 65536
_PIPELINE_BYTES: Final = 65536  # read ahead of the current request, at most
_DRAIN_SECONDS: Final = 2.0
_DRAIN_BYTES: Final = 4 * 1024 * 1024


@final
@attrs.frozen(kw_only=True)
class ConnectionSettings:
    """The clocks and sizes of one connection (see the module docstring)."""

    header_timeout: float = 10.0
    keepalive_timeout: float = 10.0
    write_timeout: float = 30.0
    body_timeout: float = 30.0
    max_header_bytes: int = 16 * 1024


class _Gone(Exception):
    """The peer went away (or stopped reading) mid-exchange."""


@final
class _Connection:
    def __init__(self, stream: trio.SocketStream, settings: ConnectionSettings) -> None:
        self.stream = stream
        self.settings = settings
        self.h11 = h11.Connection(
            h11.SERVER, max_incomplete_event_size=settings.max_header_bytes
        )
        self.gone = False  # the peer closed, reset, or stopped reading
        # Read by the listener's Clock: past ``deadline`` it calls expire().
        self.deadline = math.inf
        self.late: str | None = None  # past the deadline, a 408 saying this
        self.expired = False
        self.scope = trio.CancelScope()  # the connection's, app calls included

    def expire(self) -> None:
        """The deadline passed: end the connection (a 408 first if a head or
        body was under way: :func:`serve_connection`)."""
        self.expired = True
        self.scope.cancel()

    def until(self, seconds: float) -> None:
        self.deadline = trio.current_time() + seconds

    async def receive(self) -> bytes:
        """The next bytes from the peer; ``b""`` once it is gone."""
        if self.gone:
            return b""
        try:
            data = await self.stream.receive_some(_CHUNK)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            data = b""
        if not data:
            self.gone = True
        return data

    async def send_all(self, data: bytes) -> None:
        """Write ``data``, or raise :class:`_Gone` if the peer cannot take it."""
        if not self.gone:
            self.until(self.settings.write_timeout)
            sent = False
            try:
                await self.stream.send_all(data)
                sent = True
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass
            finally:
                self.deadline = math.inf
                # Stopped mid-write (stalled past the deadline, or cancelled):
                # the response is cut, so the connection is not reusable.
                self.gone = self.gone or not sent
            if sent:
                return
        raise _Gone

    def next_event(self) -> Any:
        """h11's next event (raises :class:`h11.RemoteProtocolError`)."""
        return self.h11.next_event()

    async def next_request(self, first: bool) -> h11.Request | None:
        """The next request's head, or None when the connection should close
        (after a 408 or 4xx if the head was late or malformed)."""
        settings = self.settings
        try:
            event = self.next_event()
            if event is h11.NEED_DATA:
                # Quiet past the deadline: the clock closes it without a word
                # (the first request's deadline runs from the connection's start).
                if not first:
                    self.until(settings.keepalive_timeout)
                self.h11.receive_data(await self.receive())
                event = self.next_event()
            if event is h11.NEED_DATA:  # a head in pieces: it has a deadline
                if not first:
                    self.until(settings.header_timeout)
                self.late = "Request Timeout: the head was too slow"
                while event is h11.NEED_DATA:
                    self.h11.receive_data(await self.receive())
                    event = self.next_event()
            self.deadline, self.late = math.inf, None
        except h11.RemoteProtocolError as exc:
            self.deadline, self.late = math.inf, None
            await self.refuse(exc.error_status_hint, f"Bad Request: {exc}")
            return None
        if not isinstance(event, h11.Request):
            return None  # the peer closed
        if head_size(event) > settings.max_header_bytes:
            # h11 bounds only a head still arriving; this one came whole.
            await self.refuse(431, "Request Header Fields Too Large")
            return None
        names = {name for name, _ in event.headers}
        if b"content-length" in names and b"transfer-encoding" in names:
            # h11 frames such a request by Transfer-Encoding; a proxy in front
            # may frame it by Content-Length, and then the two disagree on
            # where the next request starts (request smuggling). RFC 9112
            # 6.3 lets a server refuse it, and says to close after it.
            await self.refuse(
                400, "Bad Request: both Content-Length and Transfer-Encoding"
            )
            return None
        return event

    async def refuse(self, status: int, text: str) -> None:
        if self.gone:  # (nothing of a response was sent yet)
            return
        with contextlib.suppress(_Gone):
            await self.send_all(refusal(status, text))

    def reusable(self) -> bool:
        return (
            not self.gone
            and self.h11.our_state is h11.DONE
            and self.h11.their_state is h11.DONE
        )

    async def close(self) -> None:
        """Close; if the request's body was left unread, first end our side
        and read a little, so that the peer sees our response, not a reset."""
        try:
            if not self.gone and self.h11.their_state is h11.SEND_BODY:
                with trio.move_on_after(_DRAIN_SECONDS):
                    await self.stream.send_eof()
                    drained = 0
                    while drained < _DRAIN_BYTES and (data := await self.receive()):
                        drained += len(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            await self.stream.aclose()


@final
class _Exchange:
    """One request and its response: the ASGI ``receive`` and ``send``."""

    def __init__(self, connection: _Connection) -> None:
        self.c = connection
        self.body_done = False  # the app has the whole body
        self.ended = False  # h11 has seen the body's end
        self.pending: list[bytes] = []  # body read ahead, not yet handed over
        self.status = 500
        self.headers: list[tuple[bytes, bytes]] = []
        self.started = False
        self.done = False
        self.head = False  # a HEAD request: the response's head only

    async def run(self, app: App, scope: Mapping[str, Any]) -> None:
        # The app answers HEAD as GET; the body is left out here, as ASGI
        # servers do (h11 refuses a HEAD response's body bytes).
        self.head = scope["method"] == "HEAD"
        try:
            await app(scope, self.receive, self.send)
        except Exception:
            log.exception("the app failed on %s %s", scope["method"], scope["path"])
        if not self.started and not self.c.gone:
            await self._fallback()

    async def _fallback(self) -> None:
        # The app sent nothing (it failed): the client still gets an answer.
        self.status, self.headers = 500, [(b"connection", b"close")]
        body = {"type": "http.response.body", "body": b"Internal Server Error"}
        await self.send(body)

    async def receive(self) -> dict[str, Any]:
        if self.body_done or self.c.gone:
            await self._until_gone()
            return {"type": "http.disconnect"}
        if self.c.h11.client_is_waiting_for_100_continue:
            await self._write(h11.InformationalResponse(status_code=100, headers=[]))
        try:
            return await self._body()
        except h11.RemoteProtocolError as exc:
            if not self.started:  # the client hears why, as for a bad head
                self.started = self.done = True  # (what the app sends is dropped)
                await self.c.refuse(exc.error_status_hint, f"Bad Request: {exc}")
            self.c.gone = True  # a malformed body: nothing more to read
            return {"type": "http.disconnect"}

    async def _body(self) -> dict[str, Any]:
        chunks, self.pending = self.pending, []
        if self.ended:
            self.body_done = True
            return _request(chunks, more=False)
        while True:
            event = self.c.next_event()
            if event is h11.NEED_DATA:
                if chunks:  # hand over what is here; the rest comes later
                    return _request(chunks, more=True)
                if self.c.deadline == math.inf:  # from the first wait on
                    self.c.until(self.c.settings.body_timeout)
                    self.c.late = "Request Timeout: the body was too slow"
                self.c.h11.receive_data(await self.c.receive())
            elif isinstance(event, h11.Data):
                chunks.append(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage):
                self.ended = self.body_done = True
                self.c.deadline, self.c.late = math.inf, None
                return _request(chunks, more=False)
            else:  # ConnectionClosed: the peer left mid-body
                self.c.gone = True
                return {"type": "http.disconnect"}

    async def _until_gone(self) -> None:
        """Read until the peer goes; bytes it sends meanwhile (a pipelined
        next request) are kept for h11, up to a bound."""
        while not self.c.gone:
            if len(self.c.h11.trailing_data[0]) > _PIPELINE_BYTES:
                await trio.sleep_forever()  # until the response ends this wait
            data = await self.c.receive()
            if data:
                self.c.h11.receive_data(data)

    async def send(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
            self.headers = list(message.get("headers", ()))
            return
        if message["type"] != "http.response.body" or self.done:
            return
        body: bytes = message.get("body", b"")
        more: bool = message.get("more_body", False)
        out: list[bytes] = []
        if not self.started:
            self.started = True
            self.c.late = None  # a response began: too late for a 408
            if not self._peek_end():
                # The body is not all read: the connection cannot be reused.
                self.headers.append((b"connection", b"close"))
            head = response_head(self.status, self.headers, None if more else body)
            out.append(self.c.h11.send(head) or b"")
        if body and not self.head:
            out.append(self.c.h11.send(h11.Data(data=body)) or b"")
        if not more:
            self.done = True
            out.append(self.c.h11.send(h11.EndOfMessage()) or b"")
        await self._send_bytes(b"".join(out))

    def _peek_end(self) -> bool:
        """Whether the request is complete, pulling only what is buffered
        (a request with no body is complete without a read)."""
        try:
            while not self.ended:
                event = self.c.next_event()
                if isinstance(event, h11.Data):
                    self.pending.append(bytes(event.data))
                elif isinstance(event, h11.EndOfMessage):
                    self.ended = True
                else:
                    return False
        except h11.RemoteProtocolError:
            return False
        return True

    async def _write(self, event: h11.InformationalResponse) -> None:
        await self._send_bytes(self.c.h11.send(event) or b"")

    async def _send_bytes(self, data: bytes) -> None:
        try:
            await self.c.send_all(data)
        except _Gone:
            # The peer is gone: the app's work for it ends here (a cancellation,
            # which the app's nurseries and the connection's scope absorb).
            self.c.scope.cancel()
            await trio.lowlevel.checkpoint()


def _request(chunks: list[bytes], *, more: bool) -> dict[str, Any]:
    body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
    return {"type": "http.request", "body": body, "more_body": more}


async def serve_connection(
    stream: trio.SocketStream,
    app: App,
    settings: ConnectionSettings,
    clock: Clock,
    client: Address = None,
    server: Address = None,
) -> None:
    """Serve ``app`` on ``stream``, request after request, then close it;
    ``clock`` keeps its deadlines (:mod:`.clock`)."""
    connection = _Connection(stream, settings)
    clock.timed.add(connection)
    try:
        with connection.scope:
            connection.deadline = trio.current_time() + settings.header_timeout
            await _serve_requests(connection, app, client, server)
        if connection.expired and connection.late:
            with trio.move_on_after(settings.write_timeout):  # (out of its scope)
                await connection.refuse(408, connection.late)
    finally:
        clock.timed.discard(connection)
        await connection.close()  # closes the socket even when cancelled


async def _serve_requests(
    connection: _Connection, app: App, client: Address, server: Address
) -> None:
    first = True
    while True:
        request = await connection.next_request(first)
        if request is None:
            return
        first = False
        exchange = _Exchange(connection)
        timeout = connection.settings.body_timeout
        await exchange.run(app, http_scope(request, client, server, timeout))
        if not connection.reusable():
            return
        connection.h11.start_next_cycle()

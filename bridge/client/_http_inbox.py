"""What the server sends our HTTP client, matched to the requests awaiting it.

Every message the server sends, on a POST's answer or an SSE stream, goes into
the :class:`Inbox`, which the session drains (``receive``). A response also
ends the :class:`Exchange` of the request it answers: the one reading that
stream stops, and one reading another stream is cancelled. :class:`Cursor`
keeps how far a stream got, so it can be resumed. :func:`private_answer` reads
the answer to a request the session never sent (the ``initialize`` that renews
an expired session) without passing anything on.

A message that cannot be read (not JSON, not JSON-RPC) on the stream of a
request in flight fails that request at once: it may have been the response,
which would then never come, and the call would wait for ever. On the
standalone stream, which answers no request, it is dropped with a warning
(once per connection).

It does not post, resume or decide what a failure means
(:mod:`bridge.client.http`).
"""

from __future__ import annotations

import logging
from typing import Final, final

import attrs
import httpx
import trio

from bridge.jsonrpc.messages import (
    ErrorResponse,
    Ignored,
    Invalid,
    Message,
    RequestId,
    Response,
    coerce_id,
    parse,
)
from bridge.transports.sse import SseEvent, SseEventTooLarge, SseParser
from runtime.errors import RemoteProtocolError

from ..http_body import chunks
from ._http_state import ConnectionState
from ._http_wire import MAX_MESSAGE, is_sse, read_message

__all__ = [
    "MAX_RETRY",
    "Cursor",
    "Exchange",
    "Inbox",
    "private_answer",
    "unreadable",
]

log = logging.getLogger("yieldmcp.http_client")


MAX_RETRY: Final = 30.0
"""The longest a server's ``retry:`` makes the client wait before resuming,
in seconds (the TypeScript SDK's longest reconnection delay): a server
asking for more (``retry: 999999999999``, 31 years) gets this."""


@attrs.define
class Cursor:
    """How far a request's SSE stream got: where and when to resume it."""

    last_id: str | None = None
    retry: float | None = None  # seconds, from the server's ``retry:``


@final
class Exchange:
    """One request in flight: whether it is answered, and how to stop reading."""

    __slots__ = ("answered", "method", "scope")

    def __init__(self, method: str) -> None:
        self.method = method
        self.answered = False
        self.scope = trio.CancelScope()


@final
class Inbox:
    """The messages of one HTTP client transport, on their way to the session.

    Args:
        url: the endpoint, for log messages.
        state: told the results of the requests it follows (``tools/list``).
    """

    def __init__(
        self, url: str, state: ConnectionState, *, max_message: int = MAX_MESSAGE
    ) -> None:
        self.url = url
        self.state = state
        self.max_message = max_message
        self.send_channel, self.receive_channel = trio.open_memory_channel[bytes](64)
        self.exchanges: dict[RequestId, Exchange] = {}
        self._said_unreadable = False  # warned of one on the standalone stream

    async def read(
        self, response: httpx.Response, exchange: Exchange | None, cursor: Cursor
    ) -> Cursor:
        """Deliver a stream's messages until it ends or answers ``exchange``.

        Raises:
            RemoteProtocolError: an event over ``max_message``, or one that
                cannot be read on ``exchange``'s stream (:meth:`deliver`).
        """
        parser = SseParser(max_event=self.max_message)
        try:
            async with chunks(response) as pieces:
                async for chunk in pieces:
                    for event in parser.feed(chunk):
                        if await self._on_event(event, exchange, cursor):
                            return cursor
        except httpx.TransportError as exc:  # dropped: the caller may resume
            log.debug("an SSE stream from %s dropped: %s", self.url, exc)
        except SseEventTooLarge as exc:
            raise RemoteProtocolError(
                f"the SSE stream from {self.url} sent {exc} (the client's max_message)"
            ) from None
        return cursor

    async def _on_event(
        self, event: SseEvent, exchange: Exchange | None, cursor: Cursor
    ) -> bool:
        if event.id is not None:
            # An empty id resets it, as in a browser: the stream cannot be
            # resumed from before this event.
            cursor.last_id = event.id or None
        if event.retry is not None:
            cursor.retry = min(event.retry / 1000, MAX_RETRY)
        if event.event not in (None, "message") or not event.data:
            return False  # a priming event, or not MCP
        return await self.deliver(event.data.encode(), exchange)

    async def deliver(self, data: bytes, exchange: Exchange | None) -> bool:
        """Pass one message on; say whether it answered ``exchange``.

        Raises:
            RemoteProtocolError: the message cannot be read, and came on the
                stream of ``exchange`` (a request in flight): it may have been
                the response, which would then never come.
        """
        message = parse(data)
        if isinstance(message, Invalid | Ignored):
            why = unreadable(message)
            if exchange is not None:
                raise RemoteProtocolError(
                    f"the server's answer to {exchange.method} at {self.url} "
                    f"holds a message that cannot be read ({why})"
                )
            if not self._said_unreadable:
                self._said_unreadable = True
                log.warning(
                    "the server at %s sent a message that cannot be read on "
                    "its standalone stream (%s); it was dropped",
                    self.url,
                    why,
                )
            return False
        answered = self._answered(message)
        await self.send_channel.send(data)
        if answered is not None and answered is not exchange:
            answered.scope.cancel()  # that exchange is waiting on another stream
        return answered is not None and answered is exchange

    def _answered(self, message: Message) -> Exchange | None:
        if not isinstance(message, Response | ErrorResponse) or message.id is None:
            return None
        request_id = coerce_id(message.id)
        exchange = self.exchanges.get(request_id) if request_id is not None else None
        if exchange is None or exchange.answered:
            return None
        exchange.answered = True
        if isinstance(message, Response):
            self.state.answered(exchange.method, message.result)
        return exchange


async def private_answer(
    response: httpx.Response, request_id: RequestId, max_message: int = MAX_MESSAGE
) -> Response | ErrorResponse | None:
    """The response to our renewal ``initialize``, kept from the session
    (which never sent that request); anything else on its stream is dropped.

    Raises:
        RemoteProtocolError: a message over ``max_message``.
    """
    if not (response.status_code == 200 and is_sse(response)):
        if not response.is_success:
            return None
        body = await read_message(response, "the renewal", max_message)
        message = parse(body) if body.strip() else None
        return message if isinstance(message, Response | ErrorResponse) else None
    parser = SseParser(max_event=max_message)
    async with chunks(response) as pieces:
        async for chunk in pieces:
            try:
                events = parser.feed(chunk)
            except SseEventTooLarge as exc:
                raise RemoteProtocolError(
                    f"the renewal's SSE stream sent {exc} (the client's max_message)"
                ) from None
            for event in events:
                message = parse(event.data.encode()) if event.data else None
                if (
                    isinstance(message, Response | ErrorResponse)
                    and message.id is not None
                    and coerce_id(message.id) == request_id
                ):
                    return message
    return None


def unreadable(message: Invalid | Ignored) -> str:
    """Why a message from the server cannot be read, in a few words."""
    if isinstance(message, Ignored):
        return message.reason
    return message.error.message


def why(answer: Message | None, response: httpx.Response) -> str:
    """What a failed renewal got, in a few words."""
    if isinstance(answer, ErrorResponse):
        return f"error {answer.error.code}: {answer.error.message}"
    return f"HTTP {response.status_code} {response.reason_phrase}"

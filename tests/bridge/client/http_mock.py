"""A scripted Streamable HTTP endpoint for testing our client's transport.

``async with scripted(route) as (url, mock)`` serves ``route`` with hypercorn on
127.0.0.1 (a free port). ``route(hit, reply)`` gets each HTTP request as a
:class:`Hit` (verb, lower-case headers, parsed JSON body, arrival time) and
answers it through :class:`Reply` (JSON, 202, plain text, or an SSE stream it
writes event by event). Every hit is kept in ``mock.hits`` in arrival order,
so a test can check exactly what the client sent, and when.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from functools import partial
from typing import Any, cast

import attrs
import trio

from bridge.transports.sse import encode

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


@attrs.define
class Hit:
    verb: str
    headers: dict[str, str]
    body: Any
    at: float

    @property
    def method(self) -> str | None:
        method = self._fields().get("method")
        return method if isinstance(method, str) else None

    @property
    def has_id(self) -> bool:
        return "id" in self._fields()

    def _fields(self) -> dict[str, Any]:
        body: Any = self.body
        return cast(dict[str, Any], body) if isinstance(body, dict) else {}


class Reply:
    """How a route answers one HTTP request."""

    def __init__(self, send: Send, receive: Receive) -> None:
        self._send = send
        self._receive = receive

    async def json(self, body: Any, status: int = 200, **headers: str) -> None:
        await self._start(status, "application/json", headers)
        await self._body(json.dumps(body).encode(), more=False)

    async def text(self, status: int, text: str = "") -> None:
        await self._start(status, "text/plain", {})
        await self._body(text.encode(), more=False)

    async def accepted(self) -> None:
        await self._start(202, None, {})
        await self._body(b"", more=False)

    async def open_sse(self, **headers: str) -> None:
        await self._start(200, "text/event-stream", headers)

    async def event(
        self, data: Any = "", *, id: str | None = None, retry: int | None = None
    ) -> None:
        text = data if isinstance(data, str) else json.dumps(data)
        name = "message" if text else None
        await self._body(encode(text, event=name, id=id, retry=retry), more=True)

    async def raw(self, data: bytes) -> None:
        """Bytes on the open stream, as they are (what ``event`` cannot
        write: a ``retry:`` of 5,000 digits, say)."""
        await self._body(data, more=True)

    async def end(self) -> None:
        await self._body(b"", more=False)

    async def wait_disconnect(self) -> None:
        while (await self._receive())["type"] != "http.disconnect":
            pass

    async def _start(
        self, status: int, kind: str | None, extra: dict[str, str]
    ) -> None:
        headers = [(k.replace("_", "-").encode(), v.encode()) for k, v in extra.items()]
        if kind is not None:
            headers.append((b"content-type", kind.encode()))
        await self._send(
            {"type": "http.response.start", "status": status, "headers": headers}
        )

    async def _body(self, data: bytes, *, more: bool) -> None:
        await self._send(
            {"type": "http.response.body", "body": data, "more_body": more}
        )


Route = Callable[[Hit, Reply], Awaitable[None]]


class Mock:
    def __init__(self, route: Route) -> None:
        self.route = route
        self.hits: list[Hit] = []

    def posts(self, method: str) -> list[Hit]:
        return [h for h in self.hits if h.verb == "POST" and h.method == method]

    def gets(self) -> list[Hit]:
        return [h for h in self.hits if h.verb == "GET"]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (event := await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        data = b""
        while True:
            event = await receive()
            data += event.get("body", b"")
            if not event.get("more_body"):
                break
        body = json.loads(data) if data else None
        hit = Hit(scope["method"], headers, body, trio.current_time())
        self.hits.append(hit)
        await self.route(hit, Reply(send, receive))


@contextlib.asynccontextmanager
async def scripted(route: Route) -> AsyncGenerator[tuple[str, Mock]]:
    """The URL of an endpoint answering with ``route``, and its record."""
    import hypercorn.trio
    from hypercorn.config import Config

    serve: Any = getattr(hypercorn.trio, "serve")  # noqa: B009
    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.errorlog = logging.getLogger("hypercorn.error")
    config.accesslog = None
    mock = Mock(route)
    async with trio.open_nursery() as nursery:
        binds: Any = await nursery.start(partial(serve, mock, config))
        yield f"{binds[0]}/mcp", mock
        nursery.cancel_scope.cancel()

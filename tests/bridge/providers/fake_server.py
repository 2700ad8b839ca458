"""A fake provider HTTP server on 127.0.0.1 that serves scripted recordings.

A hypercorn (trio worker) ASGI app: each request is recorded (method, path,
query, headers, JSON body) and answered with the next scripted :class:`Reply`,
whose body may be streamed in chunks, never sent (to test timeouts), or cut off
mid-body (to test broken connections).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import attrs
import trio
from hypercorn.config import Config
from hypercorn.trio import serve

CONTENT_TYPES = {
    "json": "application/json",
    "sse": "text/event-stream",
    "ndjson": "application/x-ndjson",
}


@attrs.define
class Reply:
    """One scripted answer."""

    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    headers: list[tuple[str, str]] = attrs.Factory(list)
    chunk_size: int | None = None
    hang: bool = False
    cut: bool = False
    trickle: float = 0.0  # seconds between two chunks

    @classmethod
    def json(cls, value: Any, status: int = 200, **kw: Any) -> Reply:
        return cls(status=status, body=json.dumps(value).encode(), **kw)


@attrs.define
class Seen:
    """One request the server received."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: Any


@attrs.define
class FakeProvider:
    """The server's script and what it has seen; ``url`` once it listens."""

    script: list[Reply] = attrs.Factory(list)
    seen: list[Seen] = attrs.Factory(list)
    url: str = ""

    async def app(
        self,
        scope: dict[str, Any],
        receive: Callable[..., Any],
        send: Callable[..., Any],
    ) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        parsed = json.loads(body) if body else None
        self.seen.append(
            Seen(
                scope["method"],
                scope["path"],
                scope["query_string"].decode(),
                headers,
                parsed,
            )
        )
        reply = (
            self.script.pop(0)
            if self.script
            else Reply.json({"error": "unscripted"}, 500)
        )
        await _answer(reply, send)


async def _lifespan(receive: Callable[..., Any], send: Callable[..., Any]) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def _answer(reply: Reply, send: Callable[..., Any]) -> None:
    if reply.hang:
        await trio.sleep_forever()
    headers = [(b"content-type", reply.content_type.encode())]
    headers += [(k.encode(), v.encode()) for k, v in reply.headers]
    await send(
        {"type": "http.response.start", "status": reply.status, "headers": headers}
    )
    size = reply.chunk_size or max(len(reply.body), 1)
    for start in range(0, len(reply.body), size):
        chunk = reply.body[start : start + size]
        await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await trio.sleep(reply.trickle)
    if reply.cut:
        raise ConnectionAbortedError("cut the connection mid-body on purpose")
    await send({"type": "http.response.body", "body": b"", "more_body": False})


@asynccontextmanager
async def open_fake_provider(nursery: trio.Nursery) -> AsyncIterator[FakeProvider]:
    """Serve a :class:`FakeProvider` on 127.0.0.1 until the caller is done."""
    server = FakeProvider()
    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.accesslog = None
    config.errorlog = None
    done = trio.Event()
    binds = await nursery.start(
        lambda task_status: serve(
            server.app,
            config,
            shutdown_trigger=done.wait,
            task_status=task_status,  # type: ignore[arg-type]
        )
    )
    server.url = binds[0]
    assert server.url.startswith("http://127.0.0.1:")
    try:
        yield server
    finally:
        done.set()

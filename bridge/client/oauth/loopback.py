"""The loopback listener that receives the authorization redirect (RFC 8252 §7.3).

:func:`listen` serves ``http://127.0.0.1:PORT/callback`` (hypercorn, on
loopback only) for the block. The first request to that path with a ``code``
or an ``error`` is the answer: its query is handed to :meth:`Callback.wait`,
and the browser is told it may close the window. Other requests (a favicon)
get 404; later ones get a page saying the answer was already received.
Nothing here checks the answer (:func:`~bridge.client.oauth.redirect.check_callback`
does) or logs its query.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import AsyncGenerator, Mapping
from typing import Any, Final, final
from urllib.parse import parse_qsl

import trio

__all__ = ["Callback", "listen"]

PATH: Final = "/callback"
_GRACE: Final = 2.0  # seconds the page has to finish when the listener stops
_DONE: Final = (
    b"<!doctype html><title>yieldmcp</title><p>Authorization received. "
    b"You can close this window.</p>"
)


@final
class Callback:
    """Where the redirect comes back, and what it brought."""

    def __init__(self) -> None:
        self.redirect_uri = ""
        self._answer: dict[str, str] | None = None
        self._arrived = trio.Event()

    async def wait(self) -> Mapping[str, str]:
        """The query of the redirect, once it arrives."""
        await self._arrived.wait()
        assert self._answer is not None
        return self._answer

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        query = dict(parse_qsl(bytes(scope.get("query_string", b"")).decode("latin-1")))
        if scope["path"] != PATH or not ({"code", "error"} & query.keys()):
            await _respond(send, 404, b"Not Found")
            return
        await _respond(send, 200, _DONE, b"text/html; charset=utf-8")
        if self._answer is None:  # answered first, so the page is not cut off
            self._answer = query
            self._arrived.set()


async def _respond(
    send: Any, status: int, body: bytes, kind: bytes = b"text/plain"
) -> None:
    headers = [(b"content-type", kind), (b"cache-control", b"no-store")]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@contextlib.asynccontextmanager
async def listen(port: int = 0) -> AsyncGenerator[Callback]:
    """Listen on 127.0.0.1:``port`` (0: any free port) for the block."""
    import hypercorn.trio
    from hypercorn.config import Config

    config = Config()
    config.bind = [f"127.0.0.1:{port}"]
    config.accesslog = None  # the query carries the code: never log it
    config.errorlog = logging.getLogger("yieldmcp.oauth.loopback")
    config.graceful_timeout = _GRACE
    serve: Any = getattr(hypercorn.trio, "serve")  # noqa: B009
    callback, stop = Callback(), trio.Event()
    run = functools.partial(serve, callback, config, shutdown_trigger=stop.wait)
    async with trio.open_nursery() as nursery:
        binds: Any = await nursery.start(run)
        callback.redirect_uri = f"{binds[0]}{PATH}"
        try:
            yield callback
        finally:
            stop.set()  # let the browser's page finish, then stop
            nursery.cancel_scope.deadline = trio.current_time() + _GRACE

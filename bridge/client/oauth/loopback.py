"""The loopback listener that receives the authorization redirect (RFC 8252 §7.3).

:func:`listen` serves ``http://127.0.0.1:PORT/callback`` (hypercorn, on
loopback only) for the block. The first request to that path with a ``code``
or an ``error`` and the ``state`` that was sent (:meth:`Callback.expect`) is
the answer: its query is handed to :meth:`Callback.wait`, and the browser is
told it may close the window. One with another ``state`` (or none) is not
the answer to our request (another process on this machine can reach the
port, and a page the user has open can send their browser there): it gets a
small error page and is ignored, and the listener waits on for the right one
until the login times out. Other requests (a favicon) get 404. The answer is
still checked in full (:func:`~bridge.client.oauth.redirect.check_callback`);
nothing here logs a query.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import secrets
import socket
from collections.abc import AsyncGenerator, Mapping
from typing import Any, Final, final
from urllib.parse import parse_qsl

import trio

from runtime.errors import AuthorizationError

__all__ = ["Callback", "listen"]

PATH: Final = "/callback"
_GRACE: Final = 2.0  # seconds the page has to finish when the listener stops
_DONE: Final = (
    b"<!doctype html><title>yieldmcp</title><p>Authorization received. "
    b"You can close this window.</p>"
)
_NOT_OURS: Final = (
    b"<!doctype html><title>yieldmcp</title><p>This is not the answer to "
    b"yieldmcp's authorization request (its state does not match); it was "
    b"ignored.</p>"
)
log = logging.getLogger("yieldmcp.oauth.loopback")


@final
class Callback:
    """Where the redirect comes back, and what it brought."""

    def __init__(self) -> None:
        self.redirect_uri = ""
        self._state: bytes | None = None
        self._answer: dict[str, str] | None = None
        self._arrived = trio.Event()

    def expect(self, state: str) -> None:
        """The ``state`` of the request sent: only its answer is taken."""
        self._state = state.encode()

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
        if not self._ours(query.get("state", "")):
            log.info("ignored a request to the callback with another state")
            await _respond(send, 400, _NOT_OURS, b"text/html; charset=utf-8")
            return
        await _respond(send, 200, _DONE, b"text/html; charset=utf-8")
        if self._answer is None:  # answered first, so the page is not cut off
            self._answer = query
            self._arrived.set()

    def _ours(self, state: str) -> bool:
        expected = self._state
        return expected is not None and secrets.compare_digest(state.encode(), expected)


async def _respond(
    send: Any, status: int, body: bytes, kind: bytes = b"text/plain"
) -> None:
    headers = [(b"content-type", kind), (b"cache-control", b"no-store")]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@contextlib.asynccontextmanager
async def listen(port: int = 0) -> AsyncGenerator[Callback]:
    """Listen on 127.0.0.1:``port`` (0: any free port) for the block.

    Raises:
        AuthorizationError: ``port`` cannot be listened on (in use, say).
    """
    if port:
        _check_free(port)
    import hypercorn.trio
    from hypercorn.config import Config

    config = Config()
    config.bind = [f"127.0.0.1:{port}"]
    config.accesslog = None  # the query carries the code: never log it
    config.errorlog = log
    config.graceful_timeout = _GRACE
    serve: Any = getattr(hypercorn.trio, "serve")  # noqa: B009
    callback, stop = Callback(), trio.Event()
    run = functools.partial(serve, callback, config, shutdown_trigger=stop.wait)
    failure: Exception | None = None
    async with trio.open_nursery() as nursery:
        binds: Any = await nursery.start(run)
        callback.redirect_uri = f"{binds[0]}{PATH}"
        try:
            yield callback
        except Exception as exc:
            # Raised by the block (the login timed out, a check failed): raised
            # as itself, not wrapped in the nursery's ExceptionGroup.
            failure = exc
        finally:
            stop.set()  # let the browser's page finish, then stop
            nursery.cancel_scope.deadline = trio.current_time() + _GRACE
    if failure is not None:
        raise failure


def _check_free(port: int) -> None:
    """Raise in one line if 127.0.0.1:``port`` cannot be listened on: the
    server started below would raise it inside its nursery, a traceback."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as exc:
            reason = os.strerror(exc.errno).lower() if exc.errno else str(exc)
            raise AuthorizationError(
                f"cannot listen on 127.0.0.1:{port} for the login's redirect: {reason}"
            ) from None

"""``yieldmcp serve --http``: start the endpoint, say where it is, fail in one line.

On start it prints ``serving MCP at http://HOST:PORT/mcp`` on stderr, with the
port actually bound (``--http 0`` picks one). A port that cannot be bound is
one line (``cannot listen on 127.0.0.1:8765: address already in use``), not
the listener's traceback. With a store, tasks left by a process that died are
resumed from the start (the server's run scope runs the recovery service:
:meth:`bridge.server.Server.running`).

SIGTERM drains (:func:`serve_until_drained`, for one process and for each
worker alike): no new connections, 503 for new work, the calls in flight
finish within ``--drain-seconds`` (:mod:`bridge.transports.http.drain`),
then the server stops and the process exits 0.
"""

from __future__ import annotations

import errno
import functools
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, cast

import trio

from bridge.server.server import Server

from .interrupt import receiving

if TYPE_CHECKING:
    from bridge.transports.http.drain import Drain

__all__ = ["ListenError", "serve_http_announced", "serve_until_drained"]


class ListenError(Exception):
    """The address could not be bound; the text says which and why."""


async def serve_until_drained(
    server: Server,
    host: str,
    port: int,
    options: dict[str, Any],
    *,
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
) -> None:
    """``serve_http`` until cancelled, or until SIGTERM begins its drain and
    the drain is over; ``task_status`` gets the URL."""
    from bridge.transports.http.drain import Drain
    from bridge.transports.http.serve import serve_http

    drain = Drain()
    with receiving(signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:

            async def serve(*, task_status: trio.TaskStatus[str]) -> None:
                await serve_http(
                    server, host, port, drain=drain, task_status=task_status,
                    **options,
                )  # fmt: skip
                nursery.cancel_scope.cancel()  # drained: stop hearing signals

            nursery.start_soon(_drain_on, signals, drain)
            task_status.started(await nursery.start(serve))


async def _drain_on(signals: AsyncIterator[int], drain: Drain) -> None:
    async for _ in signals:
        drain.begin()


async def serve_http_announced(
    server: Server, host: str, port: int, options: dict[str, Any]
) -> None:
    """Serve until cancelled or drained (SIGTERM), after printing the
    endpoint's URL on stderr."""
    started = False
    try:
        async with trio.open_nursery() as nursery:
            url = await nursery.start(
                functools.partial(serve_until_drained, server, host, port, options)
            )
            started = True
            print(f"serving MCP at {url}", file=sys.stderr, flush=True)
    except Exception as exc:
        failure = None if started else _os_error(exc)
        if failure is None:
            raise
        shown = f"[{host}]" if ":" in host else host
        raise ListenError(f"cannot listen on {shown}:{port}: {_why(failure)}") from None


def _os_error(exc: BaseException) -> OSError | None:
    """The ``OSError`` behind ``exc``, looking inside exception groups."""
    if isinstance(exc, OSError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        group = cast(BaseExceptionGroup[BaseException], exc)
        for inner in group.exceptions:
            found = _os_error(inner)
            if found is not None:
                return found
    return None


def _why(exc: OSError) -> str:
    if isinstance(exc, socket.gaierror):  # its errno is the resolver's (-2)
        return (exc.strerror or str(exc)).lower()
    if exc.errno == errno.EADDRINUSE:
        return "address already in use"
    if exc.errno is not None:
        return os.strerror(exc.errno).lower()
    return str(exc)

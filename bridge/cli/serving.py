"""``yieldmcp serve --http``: start the endpoint, say where it is, fail in one line.

On start it prints ``serving MCP at http://HOST:PORT/mcp`` on stderr, with the
port actually bound (``--http 0`` picks one). A port that cannot be bound is
one line (``cannot listen on 127.0.0.1:8765: address already in use``), not
the listener's traceback. With a store, tasks left by a process that died are
resumed from the start (:mod:`bridge.server.tasks`).
"""

from __future__ import annotations

import errno
import functools
import os
import sys
from typing import Any, cast

import trio

from bridge.server.server import Server
from bridge.server.tasks import tasks_of

__all__ = ["ListenError", "serve_http_announced"]


class ListenError(Exception):
    """The address could not be bound; the text says which and why."""


async def serve_http_announced(
    server: Server, host: str, port: int, options: dict[str, Any]
) -> None:
    """Serve until cancelled, after printing the endpoint's URL on stderr."""
    from bridge.transports.http.serve import serve_http

    started = False
    try:
        async with trio.open_nursery() as nursery:
            url = await nursery.start(
                functools.partial(serve_http, server, host, port, **options)
            )
            started = True
            if server.store is not None:
                # Tasks whose process died go on here once their lease runs
                # out; expired ones are swept.
                tasks_of(server).start_janitor()
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
    if exc.errno == errno.EADDRINUSE:
        return "address already in use"
    if exc.errno is not None:
        return os.strerror(exc.errno).lower()
    return str(exc)

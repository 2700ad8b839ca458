"""Serving the MCP endpoint: :func:`serve_http`, the entry point
``yieldmcp serve FILE --http HOST:PORT`` calls.

It runs :class:`~.app.McpHttpApp` on the HTTP/1.1 server of :mod:`.serving`
for as long as the server lives, with the Host and Origin policy made from
its arguments, and the connection bounds of :class:`~.config.HttpLimits`;
until it is cancelled, or until the :class:`~.drain.Drain` it was given is
begun and the drain is over (:mod:`.drain`). When it stops, it closes what
the token verifier keeps (its HTTP client).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

import trio

from . import drain as _drain
from . import protect as _protect
from . import serving as _serving
from .app import ENDPOINT, McpHttpApp
from .config import HttpLimits
from .guard import LOOPBACK_HOSTS, Guard
from .mount import bind_address

if TYPE_CHECKING:
    from bridge.server.server import Server

__all__ = ["serve_http"]

log = logging.getLogger("yieldmcp.http")

_WILDCARDS = frozenset({"", "0.0.0.0", "::"})


async def serve_http(
    server: Server,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    allowed_origins: Iterable[str] = (),
    allowed_hosts: Iterable[str] = (),
    limits: HttpLimits | None = None,
    reuse_port: bool = False,
    sessions: bool = True,
    drain: _drain.Drain | None = None,
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``server`` at ``http://HOST:PORT/mcp`` until cancelled, or
    until ``drain`` is begun and the drain is over.

    On the HTTP/1.1 server of :mod:`.serving` (to use another ASGI server,
    mount :class:`McpHttpApp`). Bind to loopback unless the server must be
    reachable from elsewhere; then list its names in ``allowed_hosts``.

    Args:
        server: the tools, resources and prompts to serve.
        host: the address to bind (``127.0.0.1``; ``::1`` for IPv6).
        port: the TCP port (0: any free port; see ``task_status``).
        allowed_origins: browser origins (``scheme://host[:port]``) allowed
            besides the server's own (an accepted host on the server's port).
        allowed_hosts: ``Host`` names accepted besides loopback ones and
            ``host`` itself.
        limits: bounds on connections, bodies, sessions, queues and stores.
        reuse_port: let other processes listen on the same port
            (``SO_REUSEPORT``; the kernel spreads connections among them).
        sessions: serve the 2025-11-25 era (False: refuse it, as several
            workers sharing the port must; see :class:`McpHttpApp`).
        drain: once begun, stop taking new work, wait at most
            ``limits.drain_seconds`` for the work in flight, cut what is
            left, and return (:mod:`.drain`).
        task_status: started with the endpoint's URL (``nursery.start``),
            which names the bound port.
    """
    limits = limits or HttpLimits()
    hosts = [*allowed_hosts] + ([] if host in _WILDCARDS else [host])
    guard = Guard(allowed_hosts=hosts, allowed_origins=allowed_origins)
    settings = _serving.ConnectionSettings(
        header_timeout=limits.header_timeout,
        keepalive_timeout=limits.keepalive_timeout,
        write_timeout=limits.body_timeout,
        body_timeout=limits.body_timeout,
        max_header_bytes=limits.max_header_bytes,
    )
    try:
        async with server.running(), trio.open_nursery() as nursery:
            app = McpHttpApp(
                server, nursery, guard=guard, limits=limits, sessions=sessions
            )
            start = functools.partial(
                _serving.serve_app,
                app,
                host,
                port,
                settings=settings,
                max_connections=limits.max_connections,
                backlog=limits.backlog,
                reuse_port=reuse_port,
            )
            listener: _serving.Listener = await nursery.start(start)
            bound, bound_port = listener.address
            url = f"http://{bind_address(bound, bound_port)}{ENDPOINT}"
            guard.serve_at(bound_port)
            log.info("serving MCP at %s", url)
            if host not in LOOPBACK_HOSTS:
                log.warning("listening on %s: reachable beyond this machine", host)
            task_status.started(url)
            if drain is not None:
                await drain.asked.wait()
                await _drain.drain(app, listener, limits.drain_seconds)
                nursery.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        # Ctrl-C lands in one of the server's tasks; the caller (the CLI: exit
        # 130, quietly) should see the interrupt, not a group of it.
        interrupt, rest = group.split(KeyboardInterrupt)
        if interrupt is not None and rest is None:
            raise KeyboardInterrupt from None
        raise
    finally:
        await _protect.close_verifier(server.auth)

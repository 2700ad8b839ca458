"""The listening socket and its accept loop, with the connection cap.

* The socket listens with a ``backlog`` (default 4096; the kernel caps it at
  ``net.core.somaxconn``, and a larger one than ``listen`` takes, a C
  ``int``, is lowered to that first): a burst of connections waits in the kernel's
  queue instead of being reset.
* At most ``max_connections`` connections are served at once, and never more
  than the descriptor limit (``ulimit -n``) minus a reserve for the server's
  own files and outgoing connections. A connection beyond the cap is
  accepted, answered ``503`` with ``Retry-After`` and closed; the log gets one
  warning a minute while it lasts, not one per connection.
* Running out of descriptors anyway (``accept`` fails with ``EMFILE``) gets
  the same treatment: one warning a minute, a short pause, and the loop goes
  on; no traceback per accept.
* :meth:`Listener.stop_accepting` (a drain) ends the accept loop and closes
  the socket, so the kernel refuses new connections (with ``SO_REUSEPORT``,
  gives them to the group's other sockets); the connections open go on.
* A process the served code forks without exec (``multiprocessing``'s
  ``fork`` start, ``os.fork``) does not keep the listening socket: it is closed
  in the child. Otherwise a child that outlives the server keeps its port
  taken, and with ``SO_REUSEPORT`` the kernel goes on giving that socket
  connections nobody accepts.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import math
import os
import resource
import socket as stdlib_socket
import weakref
from typing import Any, Final, cast, final

import trio

from .clock import Clock, tick_for
from .connection import App, ConnectionSettings, serve_connection
from .wire import refusal

__all__ = ["Listener", "descriptor_cap", "serve_app"]

log = logging.getLogger("yieldmcp.http")

RESERVED_DESCRIPTORS: Final = 128
"""Descriptors kept for the server's own use below ``ulimit -n``."""
_OUT_OF_DESCRIPTORS: Final = frozenset(
    {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}
)
_PER_NURSERY: Final = 256
_MOST_BACKLOG: Final = 2**31 - 1  # listen()'s int; the kernel caps it lower anyway
_REFUSING_AT_ONCE: Final = 64  # beyond, an over-cap connection is just closed
_WARN_EVERY: Final = 60.0
_BUSY: Final = refusal(
    503,
    "Service Unavailable: too many connections; try again later\n",
    ("retry-after", "1"),
)


_LISTENING: Final[weakref.WeakSet[trio.socket.SocketType]] = weakref.WeakSet()


def _close_listening_in_child() -> None:
    # Runs in a forked child, before anything else there: the child owns a
    # copy of each descriptor, which it must not keep serving or holding.
    for sock in list(_LISTENING):
        with contextlib.suppress(OSError):  # closed already: detach gives -1
            os.close(sock.detach())
    _LISTENING.clear()


os.register_at_fork(after_in_child=_close_listening_in_child)


def descriptor_cap(requested: int) -> int:
    """``requested``, lowered to fit under the descriptor limit."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return requested
    return max(1, min(requested, soft - RESERVED_DESCRIPTORS))


async def open_socket(
    host: str, port: int, backlog: int, *, reuse_port: bool = False
) -> trio.socket.SocketType:
    """A TCP socket bound to ``host:port`` and listening with ``backlog``."""
    infos = await trio.socket.getaddrinfo(
        host, port, type=stdlib_socket.SOCK_STREAM, flags=stdlib_socket.AI_PASSIVE
    )
    family, kind, proto, _, address = infos[0]
    sock = trio.socket.socket(family, kind, proto)
    try:
        sock.setsockopt(stdlib_socket.SOL_SOCKET, stdlib_socket.SO_REUSEADDR, 1)
        if reuse_port:
            sock.setsockopt(stdlib_socket.SOL_SOCKET, stdlib_socket.SO_REUSEPORT, 1)
        await sock.bind(address)
        sock.listen(min(backlog, _MOST_BACKLOG))
    except BaseException:
        sock.close()
        raise
    _LISTENING.add(sock)
    return sock


@final
class Listener:
    """A listening socket and the connections it serves.

    Attributes:
        socket: the listening socket.
        max_connections: the cap in effect (see :func:`descriptor_cap`).
        open: connections being served now.
        refused: connections answered 503 so far.
    """

    def __init__(self, sock: trio.socket.SocketType, max_connections: int) -> None:
        self.socket = sock
        self.max_connections = descriptor_cap(max_connections)
        self.open = 0
        self.refused = 0
        self._refusing = 0
        self._warned: dict[str, float] = {}
        self._accepting = trio.CancelScope()

    @property
    def address(self) -> tuple[str, int]:
        """The bound host and port (the port is known here when 0 was asked)."""
        name = self.socket.getsockname()
        return str(name[0]), int(name[1])

    @property
    def port(self) -> int:
        return self.address[1]

    def stop_accepting(self) -> None:
        """Accept no more connections; those open are served on."""
        self._accepting.cancel()

    def _warn(self, kind: str, message: str, *args: object) -> None:
        now = trio.current_time()
        if now - self._warned.get(kind, -math.inf) >= _WARN_EVERY:
            self._warned[kind] = now
            log.warning(message, *args)

    async def serve(
        self, app: App, settings: ConnectionSettings, nursery: trio.Nursery
    ) -> None:
        """Accept connections until cancelled, each served in a child of
        ``nursery``: a new one every ``_PER_NURSERY`` connections, so that a
        burst's bookkeeping goes with its nursery (trio keeps a nursery's
        tasks in sets, and a set does not shrink when they leave)."""
        server = self.address
        clock = Clock(
            tick_for(
                settings.header_timeout,
                settings.keepalive_timeout,
                settings.write_timeout,
                settings.body_timeout,
            )
        )
        nursery.start_soon(clock.run)
        spawned, full = 0, trio.Event()
        batch: trio.Nursery = await nursery.start(_batch, full)
        with self._accepting:
            while True:
                try:
                    sock, peer = await self.socket.accept()
                except OSError as exc:
                    await self._accept_failed(exc)
                    continue
                stream = trio.SocketStream(sock)
                if self.open >= self.max_connections:
                    await self._over_cap(stream, nursery)
                    continue
                self.open += 1
                if spawned == _PER_NURSERY:
                    full.set()  # the old batch ends with its last connection
                    spawned, full = 0, trio.Event()
                    batch = await nursery.start(_batch, full)
                spawned += 1
                client = _address(peer)
                batch.start_soon(
                    self._serve_one, stream, app, settings, clock, client, server
                )
        full.set()  # (stopped accepting: the last batch ends with its connections)
        self.socket.close()

    async def _accept_failed(self, exc: OSError) -> None:
        if exc.errno in _OUT_OF_DESCRIPTORS:
            self._warn(
                "descriptors",
                "accept failed (%s, %d connections open): out of file "
                "descriptors; raise `ulimit -n` or lower --max-connections",
                errno.errorcode.get(exc.errno or 0, exc.errno),
                self.open,
            )
            await trio.sleep(0.1)  # the connection waits in the backlog
        elif exc.errno not in (errno.ECONNABORTED, errno.EPROTO, errno.EPERM):
            raise exc

    async def _serve_one(
        self,
        stream: trio.SocketStream,
        app: App,
        settings: ConnectionSettings,
        clock: Clock,
        client: tuple[str, int] | None,
        server: tuple[str, int],
    ) -> None:
        try:
            await serve_connection(stream, app, settings, clock, client, server)
        finally:
            self.open -= 1

    async def _over_cap(self, stream: trio.SocketStream, nursery: trio.Nursery) -> None:
        self.refused += 1
        self._warn(
            "cap",
            "connection cap reached (%d open): new connections get 503 "
            "(--max-connections; this warning repeats at most once a minute)",
            self.open,
        )
        if self._refusing >= _REFUSING_AT_ONCE:
            await stream.aclose()
            return
        self._refusing += 1
        nursery.start_soon(self._refuse, stream)

    async def _refuse(self, stream: trio.SocketStream) -> None:
        try:
            with trio.move_on_after(1.0):
                await stream.send_all(_BUSY)
                await stream.send_eof()
                # Read what the client sent, so that it gets the 503, not a reset.
                while await stream.receive_some(65536):
                    pass
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            self._refusing -= 1
            await stream.aclose()


async def _batch(
    full: trio.Event, *, task_status: trio.TaskStatus[trio.Nursery]
) -> None:
    async with trio.open_nursery() as nursery:
        task_status.started(nursery)
        await full.wait()  # then the nursery waits for its connections


def _address(peer: Any) -> tuple[str, int] | None:
    """``(host, port)`` of an accepted peer (IPv6 adds fields we drop)."""
    if not isinstance(peer, tuple):
        return None
    fields = cast(tuple[object, ...], peer)
    host, port = fields[0], fields[1]
    return (host, port) if isinstance(host, str) and isinstance(port, int) else None


async def serve_app(
    app: App,
    host: str,
    port: int,
    *,
    settings: ConnectionSettings | None = None,
    max_connections: int = 4096,
    backlog: int = 4096,
    reuse_port: bool = False,
    task_status: trio.TaskStatus[Listener] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve the ASGI ``app`` over HTTP/1.1 at ``host:port`` until cancelled.

    ``task_status`` is started with the :class:`Listener` (its ``port`` is
    the bound one). ``reuse_port`` lets several processes listen on the port.
    """
    sock = await open_socket(host, port, backlog, reuse_port=reuse_port)
    with sock:
        listener = Listener(sock, max_connections)
        async with trio.open_nursery() as nursery:
            task_status.started(listener)
            await listener.serve(app, settings or ConnectionSettings(), nursery)

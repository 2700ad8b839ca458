"""Stopping without cutting: the drain SIGTERM asks of ``serve_http``.

A rolling deploy stops a server with SIGTERM and starts another. Asked to
drain (:class:`Drain`, begun by ``yieldmcp serve`` on SIGTERM), the server:

1. **stops accepting connections**: its listening socket closes, so the
   kernel refuses new ones (with ``--workers``, each worker closes its own);
2. **refuses new work on connections already open** with ``503``,
   ``Retry-After`` and ``Connection: close`` (:func:`is_new_work`): a
   JSON-RPC request (a new call, the next round of a 2026-07-28 call, a task
   request) or a GET opening the standalone stream. What carries on the
   work in flight still goes through: a client's answer to a question (a
   JSON-RPC response), a notification (a cancellation), a GET resuming a
   call's stream (``Last-Event-ID``), a DELETE ending a session;
3. **waits for what is in flight**, at most ``HttpLimits.drain_seconds``
   (:func:`drain`): the 2026-07-28 requests being answered (not a
   ``subscriptions/listen`` stream, which only waits for changes) and the
   2025-11-25 calls its sessions hold. With a store, a 2025-11-25 call
   waiting on its client is not waited for: it is written down, and the
   process the client reaches next takes it on. Without one, it is waited
   for like the rest (its answer may still come on an open connection);
4. then **cuts what is left** (the server's nursery is cancelled: calls'
   ``finally`` run) and ``serve_http`` returns.

Tasks of the tasks extension are not waited for: with a store, another
process resumes them once this one's lease runs out.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Final, Protocol, final

import trio

from bridge.jsonrpc.messages import Message, Request

from . import asgi as _asgi
from .asgi import Send
from .serving import Listener

__all__ = ["RETRY_AFTER", "Drain", "Draining", "drain", "is_new_work", "refuse"]

log = logging.getLogger("yieldmcp.http")

RETRY_AFTER: Final = "1"
"""Seconds a client refused during a drain is told to wait (another process
is usually there by then)."""
_LOOK_EVERY: Final = 0.05


@final
class Drain:
    """A request to drain, shared by who asks (a signal's handler) and
    ``serve_http(drain=...)``, which drains once it is begun."""

    def __init__(self) -> None:
        self.asked = trio.Event()

    def begin(self) -> None:
        """Ask for the drain (again: nothing more)."""
        self.asked.set()


class Draining(Protocol):
    """What a drain needs of the app (:class:`~.app.McpHttpApp`)."""

    draining: bool

    def in_flight(self) -> int:
        """What the drain waits for (see the module doc), now."""
        ...


def is_new_work(
    method: str, headers: Mapping[str, str], message: Message | None
) -> bool:
    """Whether a request starts work, to be refused while draining (see the
    module doc); ``message`` is a POST's (None until it is read)."""
    if method == "POST":
        return isinstance(message, Request)
    if method == "GET":
        return "last-event-id" not in headers
    return False


async def refuse(send: Send) -> None:
    """The 503 of a request refused while draining."""
    text = b"Service Unavailable: the server is shutting down; try again\n"
    await _asgi.respond(
        send, 503, text, content_type="text/plain",
        headers=[("retry-after", RETRY_AFTER), ("connection", "close")],
    )  # fmt: skip


async def drain(app: Draining, listener: Listener, seconds: float) -> None:
    """Stop accepting, refuse new work, and wait (at most ``seconds``) for
    the work in flight; the caller then cuts what is left."""
    listener.stop_accepting()
    app.draining = True
    log.info("draining: up to %g s for %d calls in flight", seconds, app.in_flight())
    with trio.move_on_after(seconds):
        while app.in_flight():
            await trio.sleep(_LOOK_EVERY)
    left = app.in_flight()
    if left:
        log.warning("drained for %g s; cutting %d calls still in flight", seconds, left)
    else:
        log.info("drained: nothing in flight")

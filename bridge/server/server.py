"""The MCP server: what it offers, served over any transport in both eras.

:class:`Server` holds the tools, resources, resource templates and prompts
(:class:`~bridge.server.offer.Offer`) and serves connections. It speaks both
protocol eras on one connection:

* **2025-11-25 and older (handshake era):** ``initialize`` negotiates a version
  and the client's capabilities for the connection; ``tools/call`` runs the tool
  live, sending ``sampling/createMessage`` and ``elicitation/create`` to the
  client mid-call (:mod:`bridge.server.calls.live`).
* **2026-07-28 (modern era):** a request whose ``_meta`` carries
  ``io.modelcontextprotocol/protocolVersion`` is self-contained; it is answered
  by :mod:`bridge.server.modern`.

Per-connection state (negotiated version, capabilities, log level,
subscriptions, URL elicitations awaiting completion) lives in
:class:`~bridge.server.connection.Connection`, one per stdio process or HTTP
session. Transports create connections; the server keeps only a weak set of
them, to find the one a :meth:`Server.complete_elicitation` is for.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import weakref
from collections.abc import AsyncGenerator
from typing import final

import trio

from bridge import telemetry
from bridge.jsonrpc.session import Session, Transport

from .connection import HANDSHAKE_VERSIONS as HANDSHAKE_VERSIONS
from .connection import LATEST_HANDSHAKE as LATEST_HANDSHAKE
from .connection import Connection as Connection
from .offer import Offer
from .tasks import tasks_of

_log = logging.getLogger("yieldmcp")
_STALL_WARNINGS_APART = 60.0  # seconds: one line a minute at most

__all__ = ["HANDSHAKE_VERSIONS", "LATEST_HANDSHAKE", "Connection", "Server"]


telemetry.install()  # sessions get a tap when OpenTelemetry is configured


@final
class Server(Offer):
    """Tools, resources and prompts, served over MCP.

    Args:
        items: the tools, resources, resource templates and prompts to offer.
        name, version, title: the server's ``serverInfo``.
        instructions: optional usage hints for the client's model.
        sampling_timeout: seconds to wait for a client's sampling answer
            (60; ``None``: until the call is cancelled). When it passes, the
            request is withdrawn (``notifications/cancelled``) and the tool's
            ``yield`` raises :class:`~runtime.errors.RequestTimeout`.
        elicitation_timeout: the same for elicitation (10 minutes: a person
            answers it).
        state_keys: keys sealing 2026-07-28 ``requestState`` (the first seals,
            all open); default ``YIELDMCP_STATE_KEY`` or a random key. Workers
            that share a key can resume each other's calls.
        state_ttl: seconds a sealed ``requestState`` stays valid (10 minutes:
            long enough for a person to answer a form).
        auth: make the HTTP endpoint an OAuth 2.1 resource server
            (:class:`~bridge.server.auth.Auth`): every request needs an access
            token for it, ``ctx.principal`` says whose, and tools may require
            scopes. Not used over stdio (credentials come from the
            environment there).
        limits: what one client may make the server hold
            (:class:`~bridge.server.limits.ServerLimits`).
        debug: tell clients what an unexpected exception in a tool said (for
            development only: by default they get a generic message and an
            error id, and the traceback is logged under that id).
        sampler: the server's own model (a ``bridge.providers`` adapter, e.g.
            ``provider_from_spec("openai:gpt-4o-mini")``), answering a tool's
            samples when a client cannot (both eras): it did not declare
            ``sampling`` (or ``sampling.tools`` for a sample offering tools)
            (:mod:`bridge.server.fallback`). No elicitation fallback.
        sample_always: with a ``sampler``, answer every sample with it, even
            for clients that can sample.
        store: a durable store (:mod:`bridge.stores`: ``open_store("sqlite:PATH")``,
            Redis, Postgres) for journals, tasks and sessions, so that calls
            outlive the process and several processes share them
            (``docs/durable.md``). None: everything in memory.
    """

    @functools.cached_property
    def _connections(self) -> weakref.WeakSet[Connection]:
        return weakref.WeakSet()

    def connection(self) -> Connection:
        """A fresh per-connection handler for a :class:`Session`."""
        connection = Connection(self)
        self._connections.add(connection)
        return connection

    async def complete_elicitation(self, elicitation_id: str) -> bool:
        """Tell the client that URL elicitation ``elicitation_id`` has completed.

        A URL elicitation (``ctx.elicit_url``, 2025-11-25) happens out of band:
        the client's ``accept`` means only that the user agreed to open the URL.
        The flow ends at the server's own page (an OAuth redirect, a payment
        callback), which the host serves; when it does, call this to send
        ``notifications/elicitation/complete`` to the one client that was sent
        that ``elicitationId``, whether by ``elicitation/create`` or in a
        ``-32042`` error, so that it can update its UI or retry the call.

        Each id is completed once, and ids must be unique (``ctx.elicit_url``
        mints a fresh one unless given one). Returns whether a notification was
        sent: False for an id never sent, already completed, or whose client
        has gone (its ids are forgotten when its connection closes). Delivery
        is best effort, as the spec allows: over HTTP the notification travels
        on the client's GET stream.
        """
        for connection in list(self._connections):
            if connection.awaits_completion(elicitation_id):
                return await connection.complete_elicitation(elicitation_id)
        return False

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncGenerator[Server]:
        """The server's run scope: its background work (tasks; the recovery
        service, which sweeps what expired and resumes tasks whose process
        died: :class:`bridge.durable.recovery.Recovery`; and the alarm that
        wakes sleeping tasks: :meth:`bridge.server.tasks.Tasks.alarm`)
        lives here, and is cancelled when the block ends.

        :meth:`serve` and ``serve_http`` enter it when it is not entered
        already; several connections served at once should share one, around
        them all. Entered while running, it does nothing.
        """
        if self.run_nursery is not None:
            yield self
            return
        async with trio.open_nursery() as nursery:
            self.run_nursery = nursery
            try:
                tasks = tasks_of(self)
                nursery.start_soon(tasks.recovery().run)
                nursery.start_soon(tasks.alarm)  # wakes sleeping tasks
                nursery.start_soon(self._watch_the_loop)
                yield self
            finally:
                self.run_nursery = None
                nursery.cancel_scope.cancel()

    async def _watch_the_loop(self) -> None:
        """Warn when the event loop did not run for ``loop_stall_warning``
        seconds: one timer, so a server pays nothing per call for it."""
        bound = self.limits.loop_stall_warning
        tick = min(0.5, bound / 2)
        warned_at = -math.inf
        while True:
            before = trio.current_time()
            await trio.sleep(tick)
            held = trio.current_time() - before - tick
            if held >= bound and before - warned_at >= _STALL_WARNINGS_APART:
                warned_at = before
                _log.warning(
                    "the event loop did not run for %.1f s, and every call "
                    "waited: code blocked it, most often a plain tool's body or "
                    "a tool's code between yields doing blocking I/O; put that "
                    "in ctx.step(...) or write the tool async def "
                    "(docs/steps.md), or the process got no CPU",
                    held,
                )

    async def serve(self, transport: Transport) -> None:
        """Serve one connection until its transport ends (announcing list
        changes and resource updates to it: :meth:`notify_resource_updated`)."""
        connection = self.connection()
        session = Session(transport, connection)
        async with self.running(), trio.open_nursery() as nursery:
            await nursery.start(connection.forward_changes, session)
            await session.run()
            nursery.cancel_scope.cancel()

    async def serve_stdio(self) -> None:
        """Serve this process's stdin/stdout until stdin closes."""
        from bridge.transports.stdio import stdio_transport

        await self.serve(stdio_transport(max_queued=self.limits.stdio_output_bytes))

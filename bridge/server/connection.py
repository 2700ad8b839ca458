"""One client's connection in the handshake era, and its methods.

A :class:`Connection` is the session handler for one stdio process or HTTP
session: it answers ``initialize``, keeps what was negotiated (version,
capabilities, log level, subscriptions, URL elicitations awaiting completion)
and answers the handshake era's methods (the table at the end). A request whose
``_meta`` carries ``io.modelcontextprotocol/protocolVersion`` is answered in the
2026-07-28 era instead (:mod:`bridge.server.modern`), on the same connection.

Logging (2025-11-25): until the client sends ``logging/setLevel``, every level
is sent; after it, only that level and above. ``logging/setLevel`` is applied
as it arrives, so it governs every call the client sends after it, even one
sent before the reply.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final, cast, final

import trio

from bridge.durable.live import Home, Revived
from bridge.jsonrpc.errors import error_data
from bridge.jsonrpc.messages import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    Notification,
    Request,
)
from bridge.jsonrpc.session import Session
from runtime.effects import LOG_LEVELS
from runtime.errors import BrokenSessionError, ClosedSessionError, RequestError
from runtime.principal import Principal

from . import changes as _changes
from . import methods as _methods
from . import modern as _modern
from . import tasks as _tasks
from .calls import live as _live
from .limits import busy, check_size
from .offer import Offer
from .questions import CallScope

__all__ = ["HANDSHAKE_VERSIONS", "LATEST_HANDSHAKE", "Connection"]

HANDSHAKE_VERSIONS: Final = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST_HANDSHAKE: Final = "2025-11-25"
PROTOCOL_VERSION_META = "io.modelcontextprotocol/protocolVersion"
LISTEN: Final = "subscriptions/listen"


@final
class Connection:
    """One client's connection: its negotiated era, capabilities and settings."""

    mcp_role: Final = "server"  # for telemetry: which side of MCP this is

    def __init__(self, server: Offer) -> None:
        self.server = server
        self.protocol_version: str | None = None
        self.client_capabilities: Mapping[str, Any] = {}
        self.client_info: Mapping[str, Any] | None = None
        self.initialized = False
        self.log_level: str | None = None
        self.subscriptions: set[str] = set()
        # Who the latest request acts for, when the transport checks tokens
        # (set by the HTTP endpoint before it delivers each request).
        self.principal: Principal | None = None
        self.closed_event = trio.Event()
        # A durable session's transport (HTTP with a store): its calls are
        # written down and can be taken on again (:mod:`bridge.durable.live`).
        self.home: Home | None = None
        self._session: Session | None = None
        self._url_flows: set[str] = set()  # elicitationIds sent, not completed

    # --- Handler protocol ------------------------------------------------------------

    def begin_request(self, request: Request, session: Session) -> bool:
        """Take on, with no task, what needs no waiting: the handshake, live
        ``tools/call`` and ``prompts/get`` (driven from the session:
        :mod:`bridge.server.calls.live`) and
        every 2026-07-28 request (which never waits on the client)."""
        if _is_modern(request):
            if request.method == LISTEN:
                return False  # it lasts: a task relays what it opted in to
            if self.server.sampler is not None and request.method in _ROUNDS:
                return False  # the server's own model may answer: that waits
            if _tasks.owns(self.server, request):
                return False  # the tasks extension's: the store may wait
            notify = functools.partial(session.notify_nowait, related=request.id)
            result = _modern.respond_now(
                self.server, request, notify, principal=self.principal
            )
            if isinstance(result, _modern.Pending):  # it waits: go on in a task
                _go_on(request, session, result)
            else:
                session.respond_nowait(request.id, result)
            return True
        self._session = session
        method = request.method
        params = request.params or {}
        if self.protocol_version is not None:
            if method == "tools/call":
                scope = self.scope(request)
                _live.begin(self.server, request, session, scope, self.home)
                return True
            if method == "prompts/get":
                _live.begin_prompt(self.server, request, session, self.scope(request))
                return True
            if method == "logging/setLevel":  # before any call that follows it
                session.respond_nowait(request.id, self.set_level(params))
                return True
        if method not in _IMMEDIATE:
            return False
        result = self._initialize(params) if method == "initialize" else {}
        session.respond_nowait(request.id, result)
        return True

    async def handle_request(self, request: Request, session: Session) -> Any:
        params = request.params or {}
        if _is_modern(request):
            if request.method == LISTEN:
                return await self._relay_listen(request, session)
            notify = functools.partial(session.notify, related=request.id)
            return await _tasks.respond(
                self.server, request, notify, principal=self.principal
            )
        self._session = session
        if request.method == "initialize":
            return self._initialize(params)
        if request.method == "ping":
            return {}
        if self.protocol_version is None:
            raise RequestError(
                INVALID_REQUEST,
                f"{request.method} before initialize: send initialize first",
            )
        handler = _LEGACY.get(request.method)
        if handler is None:
            raise RequestError(METHOD_NOT_FOUND, f"Method not found: {request.method}")
        return await handler(self, request, session)

    async def handle_notification(
        self, notification: Notification, session: Session
    ) -> None:
        if notification.method == "notifications/initialized":
            self.initialized = True

    def closed(self, session: Session) -> None:
        self._url_flows.clear()
        self.closed_event.set()

    # --- announcements: list changes and resource updates ---------------------------

    async def forward_changes(
        self,
        session: Session,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Relay the server's announcements to this client, in the handshake
        era, for as long as the session lasts: once it is initialized, every
        list change, and the updates of the resources it subscribed to.
        Started (``nursery.start``) once it listens, so nothing is missed."""
        with self.server.listen() as changes:
            task_status.started()
            async for change in changes:
                note = _changes.legacy_notification(change, self.subscriptions)
                if note is None or not self.initialized:
                    continue
                try:
                    await session.notify(*note)
                except (BrokenSessionError, ClosedSessionError):
                    return  # the client left

    async def _relay_listen(self, request: Request, session: Session) -> Any:
        """A 2026-07-28 ``subscriptions/listen`` on this session (stdio):
        acknowledged, then what it opted in to, until the client cancels it
        (``notifications/cancelled``) or leaves."""
        _modern.check_envelope(request)
        listen = _changes.Listen.from_request(request, self.server.limits)
        with self.server.listen() as changes:
            try:
                await session.notify(*listen.acknowledged(), related=request.id)
                async with trio.open_nursery() as nursery:
                    # Nothing else ends this task when the client leaves (the
                    # session only notes it, then waits for its requests to
                    # finish). It used to look four times a second: a
                    # thousand listens kept a quarter of a core busy.
                    nursery.start_soon(
                        _cancel_after, session.until_peer_gone, nursery.cancel_scope
                    )
                    async for change in changes:
                        note = _changes.modern_notification(change, listen)
                        if note is not None:
                            await session.notify(*note, related=request.id)
                    nursery.cancel_scope.cancel()  # the server stopped announcing
            except (BrokenSessionError, ClosedSessionError):
                pass  # the client left: nobody to answer
        return {"_meta": listen.tag, "resultType": "complete"}

    # --- URL elicitation completion (2025-11-25) -------------------------------------

    def expect_completion(self, elicitation_id: str) -> None:
        """URL elicitation ``elicitation_id`` was sent to this client."""
        if not self.closed_event.is_set():
            self._url_flows.add(elicitation_id)

    def awaits_completion(self, elicitation_id: str) -> bool:
        """Whether this client was sent ``elicitation_id``, not yet completed."""
        return elicitation_id in self._url_flows

    async def complete_elicitation(self, elicitation_id: str) -> bool:
        """Send ``notifications/elicitation/complete`` for ``elicitation_id``
        (once; False if it is not awaited here or the client has gone)."""
        if elicitation_id not in self._url_flows:
            return False
        self._url_flows.discard(elicitation_id)
        session = self._session
        if session is None or session.closed or session.peer_gone:
            return False
        try:
            await session.notify(
                "notifications/elicitation/complete", {"elicitationId": elicitation_id}
            )
        except (BrokenSessionError, ClosedSessionError):
            return False
        return True

    # --- lifecycle -------------------------------------------------------------------

    def _initialize(self, params: Mapping[str, Any]) -> dict[str, Any]:
        requested: Any = params.get("protocolVersion")
        capabilities: Any = params.get("capabilities", {})
        if not isinstance(requested, str) or not isinstance(capabilities, dict):
            raise RequestError(
                INVALID_PARAMS, "initialize needs protocolVersion and capabilities"
            )
        info: Any = params.get("clientInfo")
        limits = self.server.limits
        # Checked before anything is kept: a refused initialize leaves the
        # connection as it was (not initialized, and not holding the value).
        check_size("clientInfo", info, limits)
        check_size("capabilities", cast("dict[str, Any]", capabilities), limits)
        version = requested if requested in HANDSHAKE_VERSIONS else LATEST_HANDSHAKE
        self.protocol_version = version
        self.client_capabilities = cast("dict[str, Any]", capabilities)
        self.client_info = (
            cast("dict[str, Any]", info) if isinstance(info, dict) else None
        )
        result: dict[str, Any] = {
            "protocolVersion": version,
            "capabilities": self.server.capabilities(),
            "serverInfo": self.server.server_info(),
        }
        if self.server.instructions:
            result["instructions"] = self.server.instructions
        return result

    def set_level(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """``logging/setLevel``: the minimum level for calls from now on."""
        level = params.get("level")
        if level not in LOG_LEVELS:
            raise RequestError(
                INVALID_PARAMS,
                f"unknown log level {level!r}; use one of {list(LOG_LEVELS)}",
            )
        self.log_level = level
        return {}

    def restore(self, state: Mapping[str, Any]) -> None:
        """Take on a session negotiated by another process (:meth:`state`)."""
        self.protocol_version = state["version"]
        self.client_capabilities = state.get("capabilities") or {}
        self.client_info = state.get("info")
        self.log_level = state.get("level")
        self.initialized = True

    def state(self) -> dict[str, Any]:
        """What another process needs to go on with this session."""
        return {
            "version": self.protocol_version,
            "capabilities": dict(self.client_capabilities),
            "info": self.client_info,
            "level": self.log_level,
        }

    def revive_call(
        self,
        session: Session,
        doc: Mapping[str, Any],
        records: Sequence[Mapping[str, Any]],
        revived: Revived,
    ) -> None:
        """Take on again a call of this session another process began."""
        assert self.home is not None
        self._session = session
        request = Request(doc["request"], "tools/call", doc["params"])
        scope = self.scope(request)
        _live.revive(self.server, session, scope, self.home, doc, records, revived)

    def scope(self, request: Request) -> CallScope:
        """The call scope of a legacy request on this connection."""
        return CallScope(
            era="2025-11-25",
            request_id=request.id,
            client_capabilities=self.client_capabilities,
            progress_token=_methods.progress_token(request.params),
            log_level=self.log_level,
            track_url=self.expect_completion,
            principal=self.principal,
            # A caller, for what callers share: the principal, or else this
            # session (its connection).
            caller=(
                f"session:{id(self)}"
                if self.principal is None
                else f"principal:{self.principal.identity}"
            ),
        )


@final
class _GoingOn:
    """The session's handle on a modern request that went on in a task: the
    client's ``notifications/cancelled``, or its leaving, cancels it."""

    __slots__ = ("scope",)

    def __init__(self) -> None:
        self.scope = trio.CancelScope()

    def cancel(self) -> None:
        self.scope.cancel()


def _go_on(request: Request, session: Session, pending: _modern.Pending) -> None:
    """Answer ``request`` from ``pending`` in a task of the session."""
    handle = _GoingOn()
    session.adopt(request.id, handle)
    session.start_soon(_rest, request, session, pending, handle)


async def _rest(
    request: Request, session: Session, pending: _modern.Pending, handle: _GoingOn
) -> None:
    try:
        with handle.scope:
            try:
                result = await pending.rest()
            except Exception as exc:
                session.respond_nowait(request.id, error=error_data(exc))
            else:
                session.respond_nowait(request.id, result)
    finally:
        session.release(request.id, handle)


def _is_modern(request: Request) -> bool:
    """A 2026-07-28 request (self-contained: the envelope is in ``_meta``)."""
    meta = (request.params or {}).get("_meta")
    return request.method == "server/discover" or (
        # ``None`` first: most legacy requests have no _meta, and isinstance
        # against the Mapping ABC is the slow path.
        meta is not None
        and (type(meta) is dict or isinstance(meta, Mapping))
        and PROTOCOL_VERSION_META in meta
    )


_IMMEDIATE = frozenset({"initialize", "ping"})
_ROUNDS = frozenset({"tools/call", "prompts/get"})


# --- legacy-only methods ------------------------------------------------------------


async def _set_level(conn: Connection, request: Request, session: Session) -> Any:
    return conn.set_level(request.params or {})


async def _subscribe(conn: Connection, request: Request, session: Session) -> Any:
    uri = _methods.uri_param(request.params)
    limits = conn.server.limits
    check_size("the uri", uri, limits)
    if uri not in conn.subscriptions and (
        len(conn.subscriptions) >= limits.max_subscriptions
    ):
        raise busy("too many subscriptions on this session", limits.max_subscriptions)
    conn.subscriptions.add(uri)
    return {}


async def _unsubscribe(conn: Connection, request: Request, session: Session) -> Any:
    conn.subscriptions.discard(_methods.uri_param(request.params))
    return {}


Handler = Callable[[Connection, Request, Session], Awaitable[Any]]


def _static(
    method: Callable[[Offer, Mapping[str, Any], str], Any],
) -> Handler:
    async def handle(conn: Connection, request: Request, session: Session) -> Any:
        return method(conn.server, request.params or {}, "2025-11-25")

    return handle


_LEGACY: dict[str, Handler] = {
    "tools/list": _static(_methods.list_tools),
    "resources/list": _static(_methods.list_resources),
    "resources/templates/list": _static(_methods.list_templates),
    "resources/read": _static(_methods.read_resource),
    "resources/subscribe": _subscribe,
    "resources/unsubscribe": _unsubscribe,
    "prompts/list": _static(_methods.list_prompts),
    "completion/complete": _static(_methods.complete),
    "logging/setLevel": _set_level,
}


async def _cancel_after(
    event: Callable[[], Awaitable[None]], scope: trio.CancelScope
) -> None:
    """Cancel ``scope`` once ``event()`` returns."""
    await event()
    scope.cancel()

"""The MCP server: what it offers, and how each request is answered.

:class:`Server` holds the tools, resources, resource templates and prompts and
answers MCP requests for them. It speaks both protocol eras on one connection:

* **2025-11-25 and older (handshake era):** ``initialize`` negotiates a version
  and the client's capabilities for the connection; ``tools/call`` runs the tool
  live, sending ``sampling/createMessage`` and ``elicitation/create`` to the
  client mid-call (:mod:`bridge._live`).
* **2026-07-28 (modern era):** a request whose ``_meta`` carries
  ``io.modelcontextprotocol/protocolVersion`` is self-contained; it is answered
  by :mod:`bridge._modern`.

Per-connection state (negotiated version, capabilities, log level,
subscriptions, URL elicitations awaiting completion) lives in
:class:`Connection`, one per stdio process or HTTP session. Transports create
connections; the server keeps only a weak set of them, to find the one a
:meth:`Server.complete_elicitation` is for.

Logging (2025-11-25): until the client sends ``logging/setLevel``, every level
is sent; after it, only that level and above. ``logging/setLevel`` is applied
as it arrives, so it governs every call the client sends after it, even one
sent before the reply.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.metadata
import weakref
from collections.abc import Awaitable, Callable, Generator, Iterable, Mapping, Sequence
from typing import Any, Final, Literal, cast, final

import trio

from bridge.jsonrpc.messages import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    Notification,
    Request,
)
from bridge.jsonrpc.session import Session, Transport
from runtime import Tool
from runtime.effects import LOG_LEVELS
from runtime.errors import BrokenSessionError, ClosedSessionError, RequestError

from . import live_calls as _live_calls
from . import methods as _methods
from . import modern as _modern
from .catalog import Prompt, Resource, ResourceTemplate
from .live import CallScope
from .state_token import Sealer

__all__ = ["HANDSHAKE_VERSIONS", "LATEST_HANDSHAKE", "Connection", "Server"]

HANDSHAKE_VERSIONS: Final = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST_HANDSHAKE: Final = "2025-11-25"
MODERN_VERSION: Final = "2026-07-28"
PROTOCOL_VERSION_META = "io.modelcontextprotocol/protocolVersion"


def _package_version() -> str:
    try:
        return importlib.metadata.version("yieldmcp")
    except importlib.metadata.PackageNotFoundError:
        return "0.0.0"


@final
class Server:
    """Tools, resources and prompts, served over MCP.

    Args:
        name, version, title: the server's ``serverInfo``.
        instructions: optional usage hints for the client's model.
        sampling_timeout: seconds to wait for a client's sampling answer
            (``None``: until the call is cancelled).
        elicitation_timeout: the same for elicitation (people are slow).
        state_keys: keys sealing 2026-07-28 ``requestState`` (the first seals,
            all open); default ``YIELDMCP_STATE_KEY`` or a random key. Workers
            that share a key can resume each other's calls.
        state_ttl: seconds a sealed ``requestState`` stays valid.
    """

    def __init__(
        self,
        items: Iterable[Any] = (),
        *,
        name: str = "yieldmcp",
        version: str | None = None,
        title: str | None = None,
        instructions: str | None = None,
        sampling_timeout: float | None = None,
        elicitation_timeout: float | None = None,
        state_keys: Sequence[bytes] | None = None,
        state_ttl: float = 3600.0,
    ) -> None:
        self.name = name
        self.version = version or _package_version()
        self.title = title
        self.instructions = instructions
        self.sampling_timeout = sampling_timeout
        self.elicitation_timeout = elicitation_timeout
        self.sealer = Sealer(state_keys, ttl=state_ttl)
        self.tools: dict[str, Tool[Any, Any]] = {}
        self.resources: dict[str, Resource] = {}
        self.templates: list[ResourceTemplate] = []
        self.prompts: dict[str, Prompt] = {}
        self._listeners: set[trio.MemorySendChannel[ListKind]] = set()
        self._connections: weakref.WeakSet[Connection] = weakref.WeakSet()
        self.add(*items)

    def add(self, *items: Any) -> None:
        """Offer tools, resources, resource templates and prompts.

        Listeners (see :meth:`listen`) hear which lists changed.
        """
        for item in items:
            match item:
                case Tool():
                    self._unique(self.tools, item.name, "tool")[item.name] = item
                case Resource():
                    self._unique(self.resources, item.uri, "resource")[item.uri] = item
                case ResourceTemplate():
                    self.templates.append(item)
                case Prompt():
                    self._unique(self.prompts, item.name, "prompt")[item.name] = item
                case _:
                    raise TypeError(
                        f"a Server offers Tool, Resource, ResourceTemplate and Prompt "
                        f"values, got {item!r}"
                    )
            self._changed(_kind_of(item))

    def remove(self, *items: Any) -> None:
        """Stop offering these items; listeners hear which lists changed."""
        for item in items:
            match item:
                case Tool():
                    self.tools.pop(item.name, None)
                case Resource():
                    self.resources.pop(item.uri, None)
                case ResourceTemplate():
                    self.templates = [t for t in self.templates if t is not item]
                case Prompt():
                    self.prompts.pop(item.name, None)
                case _:
                    raise TypeError(f"cannot remove {item!r}")
            self._changed(_kind_of(item))

    @contextlib.contextmanager
    def listen(self) -> Generator[trio.MemoryReceiveChannel[ListKind]]:
        """Within the block, a channel of list changes (``"tools"``, ...).

        Changes are dropped, not queued without bound, for a listener that has
        fallen 64 behind.
        """
        send, receive = trio.open_memory_channel[ListKind](64)
        self._listeners.add(send)
        try:
            yield receive
        finally:
            self._listeners.discard(send)
            send.close()

    def _changed(self, kind: ListKind) -> None:
        for listener in list(self._listeners):
            with contextlib.suppress(trio.WouldBlock, trio.BrokenResourceError):
                listener.send_nowait(kind)

    @staticmethod
    def _unique(table: dict[str, Any], key: str, kind: str) -> dict[str, Any]:
        if key in table:
            raise ValueError(f"two {kind}s are named {key!r}")
        return table

    def server_info(self) -> dict[str, Any]:
        info: dict[str, Any] = {"name": self.name, "version": self.version}
        if self.title is not None:
            info["title"] = self.title
        return info

    def capabilities(self) -> dict[str, Any]:
        caps: dict[str, Any] = {"logging": {}, "completions": {}}
        caps["tools"] = {"listChanged": True}
        caps["resources"] = {"subscribe": True, "listChanged": True}
        caps["prompts"] = {"listChanged": True}
        return caps

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

    async def serve(self, transport: Transport) -> None:
        """Serve one connection until its transport ends."""
        await Session(transport, self.connection()).run()

    async def serve_stdio(self) -> None:
        """Serve this process's stdin/stdout until stdin closes."""
        from bridge.transports.stdio import stdio_transport

        await self.serve(stdio_transport())


Handler = Callable[["Connection", Request, Session], Awaitable[Any]]
ListKind = Literal["tools", "prompts", "resources"]


def _kind_of(item: Any) -> ListKind:
    if isinstance(item, Tool):
        return "tools"
    return "prompts" if isinstance(item, Prompt) else "resources"


@final
class Connection:
    """One client's connection: its negotiated era, capabilities and settings."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.protocol_version: str | None = None
        self.client_capabilities: Mapping[str, Any] = {}
        self.client_info: Mapping[str, Any] | None = None
        self.initialized = False
        self.log_level: str | None = None
        self.subscriptions: set[str] = set()
        self.closed_event = trio.Event()
        self._session: Session | None = None
        self._url_flows: set[str] = set()  # elicitationIds sent, not completed

    # --- Handler protocol ------------------------------------------------------------

    def begin_request(self, request: Request, session: Session) -> bool:
        """Take on, with no task, what needs no waiting: the handshake, live
        ``tools/call`` (driven from the session: :mod:`bridge._live_calls`) and
        every 2026-07-28 request (which never waits on the client)."""
        if _is_modern(request):
            notify = functools.partial(session.notify_nowait, related=request.id)
            result = _modern.respond_now(self.server, request, notify)
            session.respond_nowait(request.id, result)
            return True
        self._session = session
        method = request.method
        params = request.params or {}
        if self.protocol_version is not None:
            if method == "tools/call":
                _live_calls.begin(self.server, request, session, self.scope(request))
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
            notify = functools.partial(session.notify, related=request.id)
            return await _modern.respond(self.server, request, notify)
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
        version = requested if requested in HANDSHAKE_VERSIONS else LATEST_HANDSHAKE
        self.protocol_version = version
        self.client_capabilities = cast("dict[str, Any]", capabilities)
        info: Any = params.get("clientInfo")
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

    def scope(self, request: Request) -> CallScope:
        """The call scope of a legacy request on this connection."""
        return CallScope(
            era="2025-11-25",
            request_id=request.id,
            client_capabilities=self.client_capabilities,
            progress_token=_methods.progress_token(request.params),
            log_level=self.log_level,
            track_url=self.expect_completion,
        )


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


# --- legacy-only methods ------------------------------------------------------------


async def _set_level(conn: Connection, request: Request, session: Session) -> Any:
    return conn.set_level(request.params or {})


async def _subscribe(conn: Connection, request: Request, session: Session) -> Any:
    conn.subscriptions.add(_methods.uri_param(request.params))
    return {}


async def _unsubscribe(conn: Connection, request: Request, session: Session) -> Any:
    conn.subscriptions.discard(_methods.uri_param(request.params))
    return {}


async def _call_tool(conn: Connection, request: Request, session: Session) -> Any:
    return await _methods.call_tool_live(
        conn.server, request, session, conn.scope(request)
    )


async def _get_prompt(conn: Connection, request: Request, session: Session) -> Any:
    return await _methods.get_prompt_live(
        conn.server, request, session, conn.scope(request)
    )


def _static(
    method: Callable[[Server, Mapping[str, Any], str], Any],
) -> Handler:
    async def handle(conn: Connection, request: Request, session: Session) -> Any:
        return method(conn.server, request.params or {}, "2025-11-25")

    return handle


_LEGACY: dict[str, Handler] = {
    "tools/list": _static(_methods.list_tools),
    "tools/call": _call_tool,
    "resources/list": _static(_methods.list_resources),
    "resources/templates/list": _static(_methods.list_templates),
    "resources/read": _static(_methods.read_resource),
    "resources/subscribe": _subscribe,
    "resources/unsubscribe": _unsubscribe,
    "prompts/list": _static(_methods.list_prompts),
    "prompts/get": _get_prompt,
    "completion/complete": _static(_methods.complete),
    "logging/setLevel": _set_level,
}

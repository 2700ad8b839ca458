"""Streamable HTTP: a server's MCP endpoint at ``/mcp``, served on h11 and trio.

:func:`~.serve.serve_http` is the entry point (``yieldmcp serve FILE --http
HOST:PORT`` calls it; :mod:`.serving` is its HTTP/1.1 server);
:class:`McpHttpApp` is the ASGI application it serves, also usable with any
trio ASGI server (hypercorn: :func:`hypercorn_config`). Both protocol eras
share the endpoint, routed by the ``MCP-Protocol-Version`` header
(:func:`header_era`):

* a modern version (2026-07-28) → the 2026-07-28 path (``_modern_routes``):
  stateless POSTs, header ladder, GET/DELETE → 405;
* a handshake version (2024-11-05 … 2025-11-25), or no header → the
  2025-11-25 path (``_legacy_routes``): sessions, SSE streams, resumption,
  DELETE;
* any other value → **400**, UnsupportedProtocolVersion (-32022) naming every
  version the endpoint speaks in ``data.supported``, as the 2026 ladder names
  its own. One exception: a POSTed request carrying the 2026 ``_meta``
  envelope goes to the modern path, whose ladder tells a header that
  disagrees with the envelope (-32020) from an unsupported version (-32022).

On the 2025-11-25 path any supported handshake-era version is accepted in a
session, whatever it negotiated (PROTOCOL.md §5.2 refuses only "an invalid or
unsupported value"; the official conformance suite sends 2025-03-26 inside
2025-11-25 sessions, as the SDK's server accepts), and the request is served
as that version speaks. Without the header, a session's negotiated version
applies, and without a session 2025-03-26.

Before any of this, every request passes the same checks: Host and Origin (DNS
rebinding, ``_guard``), and for a POST ``Content-Type: application/json``, an
acceptable ``Accept``, a body of at most ``HttpLimits.max_body`` bytes, and
JSON-RPC syntax (400 with the JSON-RPC error, echoing the id when readable).
On a server with ``auth`` (:mod:`.protect`), the protected resource metadata is
served at its well-known paths, every request to ``/mcp`` needs an access
token (401 before the body is read) and the scopes its message needs (403),
and a 2025-11-25 session belongs to the caller who opened it (404 for anyone
else, as for an unknown session).

While it drains (:attr:`McpHttpApp.draining`: SIGTERM in ``yieldmcp
serve``), it refuses new work with 503; :mod:`.drain` says what, and what
it waits for (:meth:`McpHttpApp.in_flight`).

Request bodies are never logged. This module owns routing; the server's
lifetime is :mod:`.serve`'s. It does not answer MCP methods.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, final

import trio

from bridge.jsonrpc.messages import (
    ErrorResponse,
    Ignored,
    Invalid,
    Message,
    Notification,
    Request,
    RequestId,
    Response,
    parse,
)

from . import asgi as _asgi
from . import drain as _drain
from . import modern as _modern_routes
from . import protect as _protect
from . import serving as _serving
from .asgi import Receive, Scope, Send
from .config import HttpLimits
from .eras import (
    SUPPORTED_VERSIONS,
    VERSION_HEADER,
    Era,
    header_era,
    sessions_refused,
    unsupported_version,
)
from .eras import refuse_version as _refuse_version
from .guard import Guard, accepts, cors_headers, json_content_type
from .legacy import DEFAULT_VERSION, LegacyEndpoint
from .mount import hypercorn_config as hypercorn_config
from .mount import lifespan

if TYPE_CHECKING:
    from bridge.server.server import Server
    from runtime.principal import Principal

__all__ = [
    "ENDPOINT",
    "SUPPORTED_VERSIONS",
    "HttpLimits",
    "McpHttpApp",
    "header_era",
]

log = logging.getLogger("yieldmcp.http")

ENDPOINT = "/mcp"
_LISTEN = "subscriptions/listen"  # waits for changes: no work a drain waits for


async def _plain(send: Send, status: int, text: str, **headers: str) -> None:
    extra = [(k.replace("_", "-"), v) for k, v in headers.items()]
    await _asgi.respond(
        send, status, text.encode(), content_type="text/plain", headers=extra
    )


def _with_headers(send: Send, extra: list[tuple[str, str]]) -> Send:
    """``send``, adding ``extra`` to the response's head."""
    encoded = [(name.encode(), value.encode("latin-1")) for name, value in extra]

    async def sending(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", ()), *encoded]}
        await send(message)

    return sending


@final
class McpHttpApp:
    """The ASGI application serving ``server`` at ``/mcp``.

    Args:
        server: what to serve.
        nursery: where 2025-11-25 sessions run (they outlive the requests that
            start them); cancelling it ends them all. The server's own
            background work (tasks) runs in its run scope: enter
            ``server.running()`` around the app's life too.
        guard: the Host/Origin policy.
        limits: bounds on bodies, sessions, queues and stores.
        sessions: serve the 2025-11-25 era; False refuses its requests with
            :func:`.eras.sessions_refused` (several workers on one port, whose
            sessions no one process could hold).
    """

    def __init__(
        self,
        server: Server,
        nursery: trio.Nursery,
        *,
        guard: Guard | None = None,
        limits: HttpLimits | None = None,
        sessions: bool = True,
    ) -> None:
        self.server = server
        self.sessions = sessions
        self.guard = guard or Guard()
        self.limits = limits or HttpLimits()
        self._bodies = _asgi.BodyBudget(self.limits.body_budget)
        self._memory = _asgi.BodyBudget(self.limits.requests_memory)
        self.legacy = LegacyEndpoint(server, self.limits, nursery)
        self._nursery = nursery
        self._attended: object = None  # the verifier given the nursery
        self.draining = False  # refusing new work (see .drain)
        self._rounds = 0  # 2026-07-28 requests being answered, but listens

    def in_flight(self) -> int:
        """What a drain waits for (:mod:`.drain`): with a store, not the
        2025-11-25 calls waiting on their client."""
        parked = self.server.store is None
        return self._rounds + self.legacy.calls_in_flight(parked=parked)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await lifespan(receive, send)
        elif scope["type"] == "http":
            await self._http(scope, receive, send)

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = _asgi.header_map(scope)
        rejection = self.guard.check(headers)
        if rejection is not None:
            await _plain(send, rejection.status, rejection.reason)
            return
        origin = self.guard.cross_origin(headers)
        if origin is not None:
            if scope["method"] == "OPTIONS":  # a browser's preflight
                preflight = cors_headers(origin, preflight=True)
                await _asgi.respond(send, 204, b"", headers=preflight)
                return
            send = _with_headers(send, cors_headers(origin))
        auth = self.server.auth
        if _protect.is_metadata(auth, scope["path"]):
            assert auth is not None
            await _protect.serve_metadata(auth, scope["method"], send)
            return
        if scope["path"] != ENDPOINT:
            await _plain(send, 404, f"Not Found: the MCP endpoint is {ENDPOINT}")
            return
        principal: Principal | None = None
        if auth is not None:
            if auth.verifier is not self._attended:
                self._attended = auth.verifier
                _protect.attend(auth, self._nursery)
            principal = await _protect.check(auth, headers, send)
            if principal is None:
                return
        method = scope["method"]
        era = header_era(headers)
        if self.draining and _drain.is_new_work(method, headers, None):
            await _drain.refuse(send)  # (a POST is decided once it is read)
            return
        if method == "POST":
            await self._post(scope, headers, era, principal, receive, send)
        elif method in ("GET", "DELETE"):
            await self._get_or_delete(method, headers, era, principal, receive, send)
        else:
            await _plain(send, 405, "Method Not Allowed", allow="GET, POST, DELETE")

    async def _get_or_delete(
        self,
        method: str,
        headers: Mapping[str, str],
        era: Era | None,
        principal: Principal | None,
        receive: Receive,
        send: Send,
    ) -> None:
        if era is None:
            error = unsupported_version(headers[VERSION_HEADER], SUPPORTED_VERSIONS)
            await _refuse_version(send, None, error)
            return
        if era == "modern":
            await _plain(send, 405, "Method Not Allowed in 2026-07-28", allow="POST")
            return
        if not self.sessions:
            requested = headers.get(VERSION_HEADER)
            await _refuse_version(send, None, sessions_refused(requested))
            return
        version = await self._legacy_version(headers, None, send)
        if version is None:
            return
        if method == "GET":
            await self.legacy.get(headers, version, principal, receive, send)
        else:
            await self.legacy.delete(headers, principal, send)

    async def _post(
        self,
        scope: Scope,
        headers: Mapping[str, str],
        era: Era | None,
        principal: Principal | None,
        receive: Receive,
        send: Send,
    ) -> None:
        parsed = await self._read_message(scope, headers, receive, send)
        if parsed is None:
            return
        message, data, held = parsed
        if isinstance(message, Ignored):
            if era != "modern" and self.sessions:
                await self.legacy.unreadable_reply(headers, message, data, principal)
            await _plain(send, 400, "Bad Request: unusable JSON-RPC response")
            return
        try:
            await self._answer_post(
                headers, era, principal, message, data, receive, send
            )
        finally:
            self._memory.give(held)

    async def _answer_post(
        self,
        headers: Mapping[str, str],
        era: Era | None,
        principal: Principal | None,
        message: Message,
        data: bytes,
        receive: Receive,
        send: Send,
    ) -> None:
        if principal is not None and not await _protect.check_scopes(
            self.server, principal, message, send
        ):
            return
        if self.draining and _drain.is_new_work("POST", headers, message):
            await _drain.refuse(send)
            return
        if era is None and _modern_routes.has_envelope(message):
            era = "modern"  # the ladder says how the header and envelope disagree
        request_id = message.id if isinstance(message, Request) else None
        if era is None:
            error = unsupported_version(headers[VERSION_HEADER], SUPPORTED_VERSIONS)
            await _refuse_version(send, request_id, error)
        elif era == "modern":
            listens = isinstance(message, Request) and message.method == _LISTEN
            work = 0 if listens else 1
            self._rounds += work
            try:
                await _modern_routes.post(
                    self.server, headers, message, receive, send, self.limits,
                    principal=principal,
                )  # fmt: skip
            finally:
                self._rounds -= work
        elif not self.sessions:
            requested = headers.get(VERSION_HEADER) or _offered_version(message)
            await _refuse_version(send, request_id, sessions_refused(requested))
        else:
            version = await self._legacy_version(headers, request_id, send)
            if version is not None:
                await self.legacy.post(
                    headers, message, data, version, principal, receive, send
                )

    async def _legacy_version(
        self, headers: Mapping[str, str], request_id: RequestId | None, send: Send
    ) -> str | None:
        """The version a 2025-11-25-path request speaks: the header if any
        (unsupported values were refused before), else the session's
        negotiated version (PROTOCOL.md §5.2)."""
        sent = headers.get(VERSION_HEADER)
        return sent or self.legacy.negotiated(headers) or DEFAULT_VERSION

    async def _read_message(
        self, scope: Scope, headers: Mapping[str, str], receive: Receive, send: Send
    ) -> tuple[Message | Ignored, bytes, int] | None:
        """The POSTed JSON-RPC message, and the memory it holds of
        ``requests_memory`` (given back by the caller once it is answered),
        or None after answering an error. :class:`Ignored` only for a reply
        that cannot be read but names the question it answers."""
        if not json_content_type(headers):
            await _plain(send, 415, "Unsupported Media Type: use application/json")
            return None
        if not (
            accepts(headers, "application/json")
            or accepts(headers, "text/event-stream")
        ):
            await _plain(send, 406, "Not Acceptable: accept JSON or an event stream")
            return None
        limits = self.limits
        timeout = limits.body_timeout
        if _serving.times_body(scope, timeout):
            timeout = math.inf  # the server's clock times it: no timer per request
        try:
            data = await _asgi.read_body(
                receive, headers, limits.max_body, timeout, self._bodies
            )
        except _asgi.BodyTooLarge:
            await _plain(send, 413, "Payload Too Large")
            return None
        except _asgi.BodiesBusy:
            await _plain(
                send,
                503,
                "Service Unavailable: too many request bodies arriving at once",
                retry_after="1",
            )
            return None
        except _asgi.BodyTimeout:
            await _plain(send, 408, "Request Timeout: the body was too slow")
            return None
        except _asgi.Disconnected:
            return None
        held = _asgi.estimated_memory(data)  # reckoned before it is read
        if held > self._memory.limit:
            await _plain(
                send,
                413,
                f"Payload Too Large: read, this request would take about "
                f"{held / 2**20:.0f} MiB of memory, more than the server's "
                f"requests_memory ({self._memory.limit / 2**20:.0f} MiB)",
            )
            return None
        try:
            self._memory.take(held)
        except _asgi.BodiesBusy:
            await _plain(
                send,
                503,
                "Service Unavailable: the requests being answered take the "
                "memory set for them",
                retry_after="1",
            )
            return None
        message = parse(data)
        if isinstance(message, Request | Notification | Response | ErrorResponse):
            return message, data, held
        self._memory.give(held)
        if isinstance(message, Invalid):
            body = _asgi.error_body(message.id, message.error)
            await _asgi.respond(send, 400, body, content_type=_asgi.JSON)
        elif message.answers is not None:  # a reply we cannot use, to a question
            return message, data, 0
        else:  # a response we cannot use (parse says: do not answer it in JSON-RPC)
            await _plain(send, 400, "Bad Request: unusable JSON-RPC response")
        return None


def _offered_version(message: Message) -> str | None:
    """The ``protocolVersion`` an ``initialize`` request offers, if any."""
    params = message.params if isinstance(message, Request) else None
    offered = params.get("protocolVersion") if params is not None else None
    return offered if isinstance(offered, str) else None

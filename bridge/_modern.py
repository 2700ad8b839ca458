"""The 2026-07-28 era: every request is self-contained; no session state.

A modern request carries, in ``params._meta``, the protocol version and the
client's capabilities (and optionally its info, a log level and a progress
token). This module validates that envelope, answers ``server/discover``, and
answers the other methods with ``resultType`` (and the cache hints the list
and read results need). Calls that need the client run as multi-round calls
(:mod:`bridge._rounds`): they return ``input_required`` instead of sending
requests. Methods removed in 2026-07-28 (``initialize``, ``ping``,
``logging/setLevel``, ``resources/subscribe``...) are unknown here.

Errors: a missing envelope is ``-32602``; an unsupported version ``-32022``
(with ``supported`` and ``requested``); an unknown method ``-32601``; a tool
that needs a capability the client did not declare, and does not handle the
refusal itself, fails the request with ``-32021`` (``requiredCapabilities``).

It does no I/O of its own: the notifications a call sends (progress, logs) go
through the ``notify`` its caller passes (a session's, or an HTTP response's
stream), and the result is returned for the caller to send.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, cast

from encoders import mcp as mcp_encode
from runtime import Notice
from runtime.errors import CapabilityError, RequestError, UrlElicitationRequired

from . import _methods
from ._live import CallScope, notice_notification, question_request, url_required
from ._rounds import Complete, run_round
from .jsonrpc import INVALID_PARAMS, METHOD_NOT_FOUND, Request

if TYPE_CHECKING:
    from .server import Server

__all__ = ["MODERN_VERSIONS", "handle"]

MODERN_VERSIONS: Final = ("2026-07-28",)
UNSUPPORTED_PROTOCOL_VERSION: Final = -32022
MISSING_CLIENT_CAPABILITY: Final = -32021
PROTOCOL_VERSION: Final = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES: Final = "io.modelcontextprotocol/clientCapabilities"
LOG_LEVEL: Final = "io.modelcontextprotocol/logLevel"
SERVER_INFO: Final = "io.modelcontextprotocol/serverInfo"
_ERA: Final = "2026-07-28"

log = logging.getLogger("yieldmcp")

Notify = Callable[[str, Mapping[str, Any] | None], Awaitable[None]]
"""Sends a notification (method, params) to the client, related to the request."""

Method = Callable[["Server", Request, Notify, CallScope], Awaitable[dict[str, Any]]]


async def handle(server: Server, request: Request, notify: Notify) -> Any:
    """The result of a modern ``request`` (raises RequestError for errors)."""
    scope = _envelope(request)
    method = _METHODS.get(request.method)
    if method is None:
        raise RequestError(METHOD_NOT_FOUND, "Method not found", request.method)
    result = await method(server, request, notify, scope)
    result.setdefault("resultType", "complete")
    meta = result.setdefault("_meta", {})
    meta[SERVER_INFO] = server.server_info()
    return result


def _envelope(request: Request) -> CallScope:
    meta: Any = (request.params or {}).get("_meta")
    meta = cast("dict[str, Any]", meta) if isinstance(meta, dict) else {}
    missing = [k for k in (PROTOCOL_VERSION, CLIENT_CAPABILITIES) if k not in meta]
    if missing:
        keys = ", ".join(missing)
        raise RequestError(
            INVALID_PARAMS,
            f"params._meta is missing the required envelope key(s): {keys}",
        )
    version: Any = meta[PROTOCOL_VERSION]
    if version not in MODERN_VERSIONS:
        raise RequestError(
            UNSUPPORTED_PROTOCOL_VERSION,
            "Unsupported protocol version",
            {"supported": list(MODERN_VERSIONS), "requested": str(version)},
        )
    capabilities: Any = meta[CLIENT_CAPABILITIES]
    if not isinstance(capabilities, dict):
        raise RequestError(INVALID_PARAMS, f"{CLIENT_CAPABILITIES} must be an object")
    level: Any = meta.get(LOG_LEVEL)
    return CallScope(
        era=_ERA,
        request_id=request.id,
        client_capabilities=cast("dict[str, Any]", capabilities),
        progress_token=_methods.progress_token(request.params),
        log_level=level if isinstance(level, str) else None,
        logging=isinstance(level, str),
    )


# --- methods -------------------------------------------------------------------------


async def _discover(
    server: Server, request: Request, notify: Notify, scope: CallScope
) -> dict[str, Any]:
    result: dict[str, Any] = {
        "supportedVersions": list(MODERN_VERSIONS),
        "capabilities": server.capabilities(),
        **_cache_hints(),
    }
    if server.instructions:
        result["instructions"] = server.instructions
    return result


def _cache_hints() -> dict[str, Any]:
    # Lists may change (add/remove), so nothing is cached across calls.
    return {"ttlMs": 0, "cacheScope": "private"}


def _listing(
    body: Callable[[Server, Mapping[str, Any], str], dict[str, Any]],
    *,
    cacheable: bool,
) -> Method:
    async def method(
        server: Server, request: Request, notify: Notify, scope: CallScope
    ) -> dict[str, Any]:
        result = body(server, request.params or {}, _ERA)
        if cacheable:
            result.update(_cache_hints())
        return result

    return method


def _notices(notify: Notify, scope: CallScope) -> Callable[[Notice], Awaitable[None]]:
    async def send(notice: Notice) -> None:
        notification = notice_notification(notice, scope)
        if notification is not None:
            await notify(*notification)

    return send


async def _call_tool(
    server: Server, request: Request, notify: Notify, scope: CallScope
) -> dict[str, Any]:
    params = request.params or {}
    tool, arguments = _methods.resolve_tool(server, params)
    try:
        outcome = await run_round(
            tool, arguments, params, purpose="tools/call", scope=scope,
            sealer=server.sealer, notify=_notices(notify, scope),
        )  # fmt: skip
    except RequestError:
        raise
    except UrlElicitationRequired as exc:
        return _url_flows_required(exc, scope)
    except CapabilityError as exc:
        raise _missing_capability(exc) from None
    except Exception as exc:
        log.info("tool %s failed", tool.name, exc_info=exc)
        return mcp_encode.tool_error(_methods.describe_failure(exc), era=_ERA)
    if isinstance(outcome, Complete):
        return mcp_encode.tool_result(outcome.value, tool, era=_ERA)
    return _input_required(outcome.input_requests, outcome.request_state)


def _url_flows_required(
    exc: UrlElicitationRequired, scope: CallScope
) -> dict[str, Any]:
    """A tool's ``UrlElicitationRequired``, the 2026-07-28 way.

    ``-32042`` is retired: the URL elicitations go out as ``inputRequests``
    (``url``, ``url@2``, ...) with no ``requestState``, so the client's retry,
    once the user has been to the URLs, runs the call afresh, and the tool
    learns from its own state whether the flows completed, as it would have
    after ``-32042``. A client without ``elicitation.url`` gets ``-32021``.
    """
    checked = url_required(exc, scope)
    if isinstance(checked, CapabilityError):
        raise _missing_capability(checked) from None
    if not isinstance(checked, UrlElicitationRequired):
        log.info("a tool raised a malformed UrlElicitationRequired: %s", checked)
        return mcp_encode.tool_error(_methods.describe_failure(checked), era=_ERA)
    requests: dict[str, Any] = {}
    for number, flow in enumerate(checked.elicitations, start=1):
        method, params = question_request(flow, scope)
        key = "url" if number == 1 else f"url@{number}"
        requests[key] = {"method": method, "params": params}
    return {"resultType": "input_required", "inputRequests": requests}


async def _get_prompt(
    server: Server, request: Request, notify: Notify, scope: CallScope
) -> dict[str, Any]:
    params = request.params or {}
    name: Any = params.get("name")
    prompt = server.prompts.get(name) if isinstance(name, str) else None
    if prompt is None:
        raise RequestError(INVALID_PARAMS, f"Unknown prompt: {name}", {"name": name})
    arguments = prompt.program.parse_arguments(_methods.arguments(params))
    try:
        outcome = await run_round(
            prompt.program, arguments, params, purpose="prompts/get", scope=scope,
            sealer=server.sealer, notify=_notices(notify, scope),
        )  # fmt: skip
    except CapabilityError as exc:
        raise _missing_capability(exc) from None
    if isinstance(outcome, Complete):
        return _methods.prompt_result(outcome.value, prompt.description)
    return _input_required(outcome.input_requests, outcome.request_state)


def _input_required(requests: dict[str, Any], state: str) -> dict[str, Any]:
    return {
        "resultType": "input_required",
        "inputRequests": requests,
        "requestState": state,
    }


def _missing_capability(exc: CapabilityError) -> RequestError:
    return RequestError(
        MISSING_CLIENT_CAPABILITY, str(exc), {"requiredCapabilities": exc.required}
    )


_METHODS: dict[str, Method] = {
    "server/discover": _discover,
    "tools/list": _listing(_methods.list_tools, cacheable=True),
    "tools/call": _call_tool,
    "resources/list": _listing(_methods.list_resources, cacheable=True),
    "resources/templates/list": _listing(_methods.list_templates, cacheable=True),
    "resources/read": _listing(_methods.read_resource, cacheable=True),
    "prompts/list": _listing(_methods.list_prompts, cacheable=True),
    "prompts/get": _get_prompt,
    "completion/complete": _listing(_methods.complete, cacheable=False),
}

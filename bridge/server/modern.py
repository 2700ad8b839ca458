"""The 2026-07-28 era: every request is self-contained; no session state.

A modern request carries, in ``params._meta``, the protocol version and the
client's capabilities (and optionally its info, a log level and a progress
token). This module validates that envelope, answers ``server/discover``, and
answers the other methods with ``resultType`` (and the cache hints the list
and read results need). Calls that need the client run as multi-round calls
(:mod:`bridge.server.calls.rounds`): they return ``input_required`` instead of sending
requests. Methods removed in 2026-07-28 (``initialize``, ``ping``,
``logging/setLevel``, ``resources/subscribe``...) are unknown here.

Errors: a missing envelope is ``-32602``; an unsupported version ``-32022``
(with ``supported`` and ``requested``); an unknown method ``-32601``; a tool
that needs a capability the client did not declare, and does not handle the
refusal itself, fails the request with ``-32021`` (``requiredCapabilities``).

A request never waits on the client in this era, so one that needs no I/O
is answered in the task that delivered it, with no task of its own
(:func:`respond_now`); one that runs a step or writes to a store goes on in a
task (:class:`Pending`). :func:`respond` answers with waiting allowed, and
lets the server's own model answer the samples the client cannot.
"""

from __future__ import annotations

import copy
import functools
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, TypeAlias, cast, final

from bridge.durable import StoreError
from bridge.jsonrpc.messages import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    Request,
)
from encoders import mcp as mcp_encode
from runtime.codec import naming_server_models, with_model_names
from runtime.errors import (
    CapabilityError,
    InvalidArguments,
    LocalProtocolError,
    RequestError,
    UrlElicitationRequired,
)
from runtime.principal import Principal
from runtime.tools import Tool

from . import methods as _methods
from .calls import rounds as _rounds
from .calls.rounds import Complete, InputRequired, NotifyLater, NotifyNow
from .failures import describe_failure, tool_failure
from .fallback import follow_up, needs_follow_up, round_capabilities
from .questions import CallScope, question_request, url_required

if TYPE_CHECKING:
    from .offer import Offer

__all__ = [
    "MODERN_VERSIONS",
    "Pending",
    "answer",
    "finished",
    "respond",
    "respond_now",
    "tool_result",
]

MODERN_VERSIONS: Final = ("2026-07-28",)
mcp_role: Final = "server"  # for telemetry (bridge.jsonrpc.tap)
UNSUPPORTED_PROTOCOL_VERSION: Final = -32022
MISSING_CLIENT_CAPABILITY: Final = -32021
PROTOCOL_VERSION: Final = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES: Final = "io.modelcontextprotocol/clientCapabilities"
LOG_LEVEL: Final = "io.modelcontextprotocol/logLevel"
SERVER_INFO: Final = "io.modelcontextprotocol/serverInfo"
_ERA: Final = "2026-07-28"
_TASKS: Final = "io.modelcontextprotocol/tasks"

log = logging.getLogger("yieldmcp")

Plain: TypeAlias = Callable[["Offer", Mapping[str, Any], CallScope], dict[str, Any]]
"""A method that sends nothing but its result."""

Got: TypeAlias = "Complete | InputRequired | BaseException"
"""How a round ended: its outcome, or what it raised."""


@final
class Pending:
    """A request whose round must wait (a step, the store, a notification
    that waits): :meth:`now` goes as far as it can at once, :meth:`rest`
    goes on to the result."""

    __slots__ = ("_finish", "_round")

    def __init__(
        self, round_: _rounds.Round, finish: Callable[[Got], dict[str, Any]]
    ) -> None:
        self._round = round_
        self._finish = finish

    def now(self) -> dict[str, Any] | None:
        """The result if the round ends without waiting, else None."""
        try:
            got = self._round.now()
        except Exception as exc:
            return self._finish(exc)
        if got is None:
            return None
        assert not isinstance(got, _rounds.ReachedStep)
        return self._finish(got)

    async def rest(self) -> dict[str, Any]:
        """The result, waiting as needed (raises RequestError for errors)."""
        try:
            got = await self._round.rest()
        except Exception as exc:
            return self._finish(exc)
        assert isinstance(got, Complete | InputRequired)
        return self._finish(got)


def answer(
    server: Offer,
    request: Request,
    principal: Principal | None = None,
    *,
    server_samples: bool = False,
    notify_now: NotifyNow | None = None,
    notify: NotifyLater | None = None,
) -> dict[str, Any] | Pending:
    """The result of a modern ``request`` made by ``principal``, or the
    round still answering it. Notifications go to ``notify_now`` (sends at
    once) or else ``notify`` (waits). ``server_samples``: the caller answers
    the samples the client cannot (:func:`bridge.server.fallback.follow_up`).

    Raises:
        RequestError: the request's error (also from :class:`Pending`).
    """
    scope = envelope(request)
    scope.principal = principal
    if principal is not None:
        scope.caller = f"principal:{principal.identity}"
    if server_samples:
        scope.client_capabilities = round_capabilities(scope.client_capabilities)
    params = request.params or {}
    plain = _PLAIN.get(request.method)
    if plain is not None:
        return finished(server, plain(server, params, scope))
    starter = _ROUNDS.get(request.method)
    if starter is None:
        raise RequestError(METHOD_NOT_FOUND, "Method not found", request.method)
    started = starter(server, params, scope, notify_now, notify)
    if isinstance(started, dict):
        return finished(server, started)
    round_, finish = started
    return Pending(round_, lambda got: finished(server, finish(got)))


def finished(server: Offer, result: dict[str, Any]) -> dict[str, Any]:
    result.setdefault("resultType", "complete")
    meta = result.setdefault("_meta", {})
    meta[SERVER_INFO] = server.server_info()
    return result


async def respond(
    server: Offer,
    request: Request,
    notify: NotifyLater,
    *,
    principal: Principal | None = None,
) -> dict[str, Any]:
    """The result of a modern ``request``, its notifications sent with
    ``notify`` first and its steps run.

    A server with its own model answers the samples the client cannot and
    retries the round itself (:mod:`bridge.server.fallback`)."""
    server_samples = server.sampler is not None
    models: tuple[str, ...] = ()  # the server's, that answered
    most = server.limits.max_model_rounds
    rounds = 0  # answered by the server's model
    while True:
        got = answer(
            server, request, principal, server_samples=server_samples, notify=notify
        )
        result = got if isinstance(got, dict) else await got.rest()
        client = (request.params or {})["_meta"][CLIENT_CAPABILITIES]
        if rounds == most and needs_follow_up(
            result, client, sampler=server.sampler, always=server.sample_always
        ):
            raise RequestError(
                INTERNAL_ERROR,
                f"the server's model answered {most} rounds of this request, the "
                f"most it may (max_model_rounds; yieldmcp serve --max-model-rounds)",
            )
        retry, answered = await follow_up(
            request,
            result,
            client,
            sampler=server.sampler,
            always=server.sample_always,
            timeout=server.sampling_timeout,
        )
        if retry is None:
            return naming_server_models(result, models)
        models = with_model_names(models, answered)
        request = retry
        rounds += 1


def respond_now(
    server: Offer,
    request: Request,
    notify: NotifyNow,
    *,
    principal: Principal | None = None,
) -> dict[str, Any] | Pending:
    """:func:`respond` for a caller that sends at once and never waits (a
    session taking a request on in its receive path): the result, or the
    request still being answered, to go on with in a task
    (:meth:`Pending.rest`)."""
    got = answer(server, request, principal, notify_now=notify)
    if isinstance(got, dict):
        return got
    result = got.now()
    return got if result is None else result


def check_envelope(request: Request) -> None:
    """Raise the RequestError a modern ``request`` without a valid envelope
    (protocol version, client capabilities) gets, before its own params are
    looked at: the same order for every method."""
    envelope(request)


def envelope(request: Request) -> CallScope:
    """The call scope a modern ``request``'s envelope gives (raises
    RequestError for a missing or bad one)."""
    params = request.params or {}
    meta: Any = params.get("_meta")
    if (
        not isinstance(meta, dict)
        or PROTOCOL_VERSION not in meta
        or CLIENT_CAPABILITIES not in meta
    ):
        raise _missing_envelope(params)
    envelope = cast("dict[str, Any]", meta)
    version: Any = envelope[PROTOCOL_VERSION]
    if version not in MODERN_VERSIONS:
        raise RequestError(
            UNSUPPORTED_PROTOCOL_VERSION,
            "Unsupported protocol version",
            {"supported": list(MODERN_VERSIONS), "requested": str(version)},
        )
    capabilities: Any = envelope[CLIENT_CAPABILITIES]
    if not isinstance(capabilities, dict):
        raise RequestError(INVALID_PARAMS, f"{CLIENT_CAPABILITIES} must be an object")
    level: Any = envelope.get(LOG_LEVEL)
    has_level = isinstance(level, str)
    return CallScope(
        era=_ERA,
        request_id=request.id,
        client_capabilities=cast("dict[str, Any]", capabilities),
        progress_token=_methods.progress_token(params),
        log_level=level if has_level else None,
        logging=has_level,
    )


def _missing_envelope(params: Mapping[str, Any]) -> RequestError:
    meta: Any = params.get("_meta")
    present = cast("dict[str, Any]", meta) if isinstance(meta, dict) else {}
    missing = [k for k in (PROTOCOL_VERSION, CLIENT_CAPABILITIES) if k not in present]
    return RequestError(
        INVALID_PARAMS,
        "params._meta is missing the required envelope key(s): " + ", ".join(missing),
    )


# --- methods -------------------------------------------------------------------------


def _discover(
    server: Offer, params: Mapping[str, Any], scope: CallScope
) -> dict[str, Any]:
    result: dict[str, Any] = {
        "supportedVersions": list(MODERN_VERSIONS),
        # The tasks extension is served by bridge.server.tasks.
        "capabilities": {**server.capabilities(), "extensions": {_TASKS: {}}},
        **_cache_hints(),
    }
    if server.instructions:
        result["instructions"] = server.instructions
    return result


def _cache_hints() -> dict[str, Any]:
    # Lists may change (add/remove), so nothing is cached across calls.
    return {"ttlMs": 0, "cacheScope": "private"}


def _listing(
    body: Callable[[Offer, Mapping[str, Any], str], dict[str, Any]],
    *,
    cacheable: bool,
) -> Plain:
    def method(
        server: Offer, params: Mapping[str, Any], scope: CallScope
    ) -> dict[str, Any]:
        result = body(server, params, _ERA)
        if cacheable:
            result.update(_cache_hints())
        return result

    return method


Started: TypeAlias = (
    "dict[str, Any] | tuple[_rounds.Round, Callable[[Got], dict[str, Any]]]"
)


def _call_tool(
    server: Offer,
    params: Mapping[str, Any],
    scope: CallScope,
    notify_now: NotifyNow | None,
    notify: NotifyLater | None,
) -> Started:
    tool = _methods.resolve_tool(server, params)
    try:
        arguments = tool.check_arguments(_methods.arguments(params))
    except InvalidArguments as exc:
        text = tool_failure(tool.name, exc, debug=server.debug)
        return mcp_encode.tool_error(text, era=_ERA)
    result = functools.partial(tool_result, server, tool, scope)
    round_ = _rounds.begin(
        server, tool, arguments, params, purpose="tools/call", scope=scope,
        store=server.store, notify_now=notify_now, notify=notify, encode=result,
    )  # fmt: skip
    return round_, result


def tool_result(
    server: Offer, tool: Tool[Any, Any], scope: CallScope, got: Got
) -> dict[str, Any]:
    """The result of a ``tools/call`` whose round ended with ``got``.

    Raises:
        RequestError: the request's own error (JSON-RPC), or -32021.
        StoreError: the store failed (-32603).
    """
    if isinstance(got, Complete):
        if got.wire is not None:  # made already (kept for a lost reply)
            return copy.deepcopy(dict(got.wire))
        try:
            return mcp_encode.tool_result(got.value, tool, era=_ERA)
        except LocalProtocolError as exc:
            # A value it cannot send is the tool's failure, told as one (as in
            # 2025-11-25), not the request's bare -32603.
            text = tool_failure(tool.name, exc, debug=server.debug)
            return mcp_encode.tool_error(text, era=_ERA)
    if isinstance(got, InputRequired):
        return _input_required(got.input_requests, got.request_state)
    if isinstance(got, RequestError | StoreError):
        raise got  # the request's fault, or the server's: not the tool's
    if isinstance(got, UrlElicitationRequired):
        return _url_flows_required(got, scope)
    if isinstance(got, CapabilityError):
        raise _missing_capability(got) from None
    if not isinstance(got, Exception):
        raise got
    text = tool_failure(tool.name, got, debug=server.debug)
    return mcp_encode.tool_error(text, era=_ERA)


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
        return mcp_encode.tool_error(describe_failure(checked), era=_ERA)
    requests: dict[str, Any] = {}
    for number, flow in enumerate(checked.elicitations, start=1):
        method, params = question_request(flow, scope)
        key = "url" if number == 1 else f"url@{number}"
        requests[key] = {"method": method, "params": params}
    return {"resultType": "input_required", "inputRequests": requests}


def _get_prompt(
    server: Offer,
    params: Mapping[str, Any],
    scope: CallScope,
    notify_now: NotifyNow | None,
    notify: NotifyLater | None,
) -> Started:
    prompt = _methods.resolve_prompt(server, params)
    arguments = prompt.program.parse_arguments(_methods.arguments(params))
    result = functools.partial(_prompt_result, prompt.description)
    round_ = _rounds.begin(
        server, prompt.program, arguments, params, purpose="prompts/get",
        scope=scope, store=server.store, notify_now=notify_now, notify=notify,
        encode=result,
    )  # fmt: skip
    return round_, result


def _prompt_result(description: str | None, got: Got) -> dict[str, Any]:
    if isinstance(got, Complete):
        if got.wire is not None:  # made already (kept for a lost reply)
            return copy.deepcopy(dict(got.wire))
        return _methods.prompt_result(got.value, description)
    if isinstance(got, InputRequired):
        return _input_required(got.input_requests, got.request_state)
    if isinstance(got, CapabilityError):
        raise _missing_capability(got) from None
    raise got


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


_PLAIN: dict[str, Plain] = {
    "server/discover": _discover,
    "tools/list": _listing(_methods.list_tools, cacheable=True),
    "resources/list": _listing(_methods.list_resources, cacheable=True),
    "resources/templates/list": _listing(_methods.list_templates, cacheable=True),
    "resources/read": _listing(_methods.read_resource, cacheable=True),
    "prompts/list": _listing(_methods.list_prompts, cacheable=True),
    "completion/complete": _listing(_methods.complete, cacheable=False),
}
Starter: TypeAlias = Callable[
    ["Offer", Mapping[str, Any], CallScope, NotifyNow | None, NotifyLater | None],
    Started,
]
_ROUNDS: dict[str, Starter] = {
    "tools/call": _call_tool,
    "prompts/get": _get_prompt,
}

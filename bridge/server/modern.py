"""The 2026-07-28 era: every request is self-contained; no session state.

A modern request carries, in ``params._meta``, the protocol version and the
client's capabilities (and optionally its info, a log level and a progress
token). This module validates that envelope, answers ``server/discover``, and
answers the other methods with ``resultType`` (and the cache hints the list
and read results need). Calls that need the client run as multi-round calls
(:mod:`bridge.server.rounds`): they return ``input_required`` instead of sending
requests. Methods removed in 2026-07-28 (``initialize``, ``ping``,
``logging/setLevel``, ``resources/subscribe``...) are unknown here.

Errors: a missing envelope is ``-32602``; an unsupported version ``-32022``
(with ``supported`` and ``requested``); an unknown method ``-32601``; a tool
that needs a capability the client did not declare, and does not handle the
refusal itself, fails the request with ``-32021`` (``requiredCapabilities``).

It does no I/O of its own: :func:`handle` yields the notifications a request
sends (progress, logs) and the steps it runs (:class:`~bridge.server.rounds.RunSteps`),
and returns its result. :func:`respond` sends the notifications through an
async ``notify`` as they come (an HTTP response's stream, a session) and runs
the steps, :func:`respond_now` sends them through one that sends at once (a
session whose transport never waits): a request never waits on the client in
this era, so that one is answered in the task that delivered it, with no task
of its own, until it reaches a step; the rest is :func:`respond_rest`'s, in a
task.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Generator, Mapping
from typing import TYPE_CHECKING, Any, Final, TypeAlias, cast

from bridge.jsonrpc.messages import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    Request,
)
from bridge.stores import StoreError
from encoders import mcp as mcp_encode
from runtime.errors import (
    CapabilityError,
    InvalidArguments,
    RequestError,
    UrlElicitationRequired,
)
from runtime.principal import Principal

from . import methods as _methods
from .failures import describe_failure, tool_failure
from .fallback import MAX_FOLLOW_UPS, follow_up, round_capabilities
from .questions import CallScope, question_request, url_required
from .rounds import Complete, RunSteps, Wait, Yielded, run_round, wait_on

if TYPE_CHECKING:
    from .offer import Offer

__all__ = ["MODERN_VERSIONS", "handle"]

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

Steps: TypeAlias = Generator[Yielded, Any, dict[str, Any]]
"""A request being answered: yields notifications to send and steps to run
(and is sent their replies), returns the result."""

Plain: TypeAlias = Callable[["Offer", Mapping[str, Any], CallScope], dict[str, Any]]
"""A method that sends nothing but its result."""


def handle(
    server: Offer,
    request: Request,
    principal: Principal | None = None,
    *,
    server_samples: bool = False,
    journal_in_state: bool = False,
) -> Steps:
    """Answer a modern ``request`` made by ``principal``: yield each
    notification it sends, in order, and return its result (raises
    RequestError for errors). ``server_samples``: the caller answers the
    samples the client cannot (:func:`bridge.server.fallback.follow_up`).
    ``journal_in_state``: rounds keep their journal in ``requestState``, not
    in the server's store (:attr:`CallScope.journal_in_state`)."""
    scope = _envelope(request)
    scope.principal = principal
    scope.journal_in_state = journal_in_state
    if server_samples:
        scope.client_capabilities = round_capabilities(scope.client_capabilities)
    plain = _PLAIN.get(request.method)
    if plain is not None:
        result = plain(server, request.params or {}, scope)
    else:
        rounds = _ROUNDS.get(request.method)
        if rounds is None:
            raise RequestError(METHOD_NOT_FOUND, "Method not found", request.method)
        result = yield from rounds(server, request.params or {}, scope)
    result.setdefault("resultType", "complete")
    meta = result.setdefault("_meta", {})
    meta[SERVER_INFO] = server.server_info()
    return result


async def respond(
    server: Offer,
    request: Request,
    notify: Callable[[str, dict[str, Any]], Awaitable[None]],
    *,
    principal: Principal | None = None,
) -> dict[str, Any]:
    """:func:`handle`'s result, its notifications sent with ``notify`` first
    and its steps run.

    A server with its own model answers the samples the client cannot and
    retries the round itself (:mod:`bridge.server.fallback`)."""
    server_samples = server.sampler is not None
    for _ in range(MAX_FOLLOW_UPS):
        steps = handle(server, request, principal, server_samples=server_samples)
        result = await respond_rest(server, steps, None, notify)
        client = (request.params or {})["_meta"][CLIENT_CAPABILITIES]
        retry = await follow_up(
            request,
            result,
            client,
            sampler=server.sampler,
            always=server.sample_always,
            timeout=server.sampling_timeout,
        )
        if retry is None:
            return result
        request = retry
    raise RequestError(INTERNAL_ERROR, "the server's model answered too many rounds")


async def respond_rest(
    server: Offer,
    steps: Steps,
    batch: RunSteps | Wait | None,
    notify: Callable[[str, dict[str, Any]], Awaitable[None]],
) -> dict[str, Any]:
    """The result of ``steps``, going on from ``batch`` (steps or store I/O it
    yielded and waits on; None: from its start), sending its notifications
    with ``notify``."""
    try:
        sent: Any = None
        error: Exception | None = None
        if batch is not None:
            sent, error = await wait_on(batch, server.step_limiter)
        while True:
            try:
                item = steps.send(sent) if error is None else steps.throw(error)
            except StopIteration as done:
                return done.value
            sent, error = None, None
            if isinstance(item, RunSteps | Wait):
                sent, error = await wait_on(item, server.step_limiter)
            else:
                await notify(*item)
    finally:
        steps.close()


def respond_now(
    server: Offer,
    request: Request,
    notify: Callable[[str, dict[str, Any]], None],
    *,
    principal: Principal | None = None,
) -> dict[str, Any] | tuple[Steps, RunSteps | Wait]:
    """:func:`respond` with a ``notify`` that sends at once, without waiting;
    or, at the first step to run (or store I/O to wait on), the request still
    being answered and what it waits on, to go on with in a task
    (:func:`respond_rest`)."""
    steps = handle(server, request, principal)
    try:
        while True:
            try:
                item = next(steps)
            except StopIteration as done:
                return done.value
            if isinstance(item, RunSteps | Wait):
                handed_over, steps = (steps, item), None
                return handed_over
            notify(*item)
    finally:
        if steps is not None:
            steps.close()


def check_envelope(request: Request) -> None:
    """Raise the RequestError a modern ``request`` without a valid envelope
    (protocol version, client capabilities) gets, before its own params are
    looked at: the same order for every method."""
    _envelope(request)


def _envelope(request: Request) -> CallScope:
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


def _call_tool(server: Offer, params: Mapping[str, Any], scope: CallScope) -> Steps:
    tool = _methods.resolve_tool(server, params)
    try:
        arguments = tool.check_arguments(_methods.arguments(params))
    except InvalidArguments as exc:
        text = tool_failure(tool.name, exc, debug=server.debug)
        return mcp_encode.tool_error(text, era=_ERA)
    try:
        outcome = yield from run_round(
            tool, arguments, params, purpose="tools/call", scope=scope,
            sealer=server.sealer, max_journal_bytes=server.limits.max_journal_bytes,
            store=None if scope.journal_in_state else server.store,
            claim_seconds=server.limits.round_claim_seconds,
        )  # fmt: skip
    except (RequestError, StoreError):
        raise  # the request's fault, or the server's: not the tool's
    except UrlElicitationRequired as exc:
        return _url_flows_required(exc, scope)
    except CapabilityError as exc:
        raise _missing_capability(exc) from None
    except Exception as exc:
        text = tool_failure(tool.name, exc, debug=server.debug)
        return mcp_encode.tool_error(text, era=_ERA)
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
        return mcp_encode.tool_error(describe_failure(checked), era=_ERA)
    requests: dict[str, Any] = {}
    for number, flow in enumerate(checked.elicitations, start=1):
        method, params = question_request(flow, scope)
        key = "url" if number == 1 else f"url@{number}"
        requests[key] = {"method": method, "params": params}
    return {"resultType": "input_required", "inputRequests": requests}


def _get_prompt(server: Offer, params: Mapping[str, Any], scope: CallScope) -> Steps:
    name: Any = params.get("name")
    prompt = server.prompts.get(name) if isinstance(name, str) else None
    if prompt is None:
        raise RequestError(INVALID_PARAMS, f"Unknown prompt: {name}", {"name": name})
    arguments = prompt.program.parse_arguments(_methods.arguments(params))
    try:
        outcome = yield from run_round(
            prompt.program, arguments, params, purpose="prompts/get", scope=scope,
            sealer=server.sealer, max_journal_bytes=server.limits.max_journal_bytes,
            store=server.store, claim_seconds=server.limits.round_claim_seconds,
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


_PLAIN: dict[str, Plain] = {
    "server/discover": _discover,
    "tools/list": _listing(_methods.list_tools, cacheable=True),
    "resources/list": _listing(_methods.list_resources, cacheable=True),
    "resources/templates/list": _listing(_methods.list_templates, cacheable=True),
    "resources/read": _listing(_methods.read_resource, cacheable=True),
    "prompts/list": _listing(_methods.list_prompts, cacheable=True),
    "completion/complete": _listing(_methods.complete, cacheable=False),
}
_ROUNDS: dict[str, Callable[[Offer, Mapping[str, Any], CallScope], Steps]] = {
    "tools/call": _call_tool,
    "prompts/get": _get_prompt,
}

"""Questions as MCP requests: capability checks, encoding, and live delivery.

Both eras ask the client the same questions with the same payloads; only the
delivery differs. This module owns what they share — which capability each
question needs (:func:`check_capabilities`), the request it becomes
(:func:`question_request`), how its answer is decoded (:func:`decode_answer`),
and how notices become notifications (:func:`notice_notification`) — plus the
2025-11-25 delivery: the live call (:mod:`bridge.server.calls.live`) sends
server→client requests in the middle of a ``tools/call``, each *related* to
the call so that over HTTP it travels on the call's response stream.

Capability rules: no sampling request to a client that did not declare
``sampling``; no tools in sampling without ``sampling.tools``; no form
elicitation without ``elicitation`` (form); no URL elicitation without
``elicitation.url``; no ``roots/list`` without ``roots``. A refusal is a
:class:`~runtime.errors.CapabilityError` raised into the tool, at the yield.
A tool that raises :class:`~runtime.errors.UrlElicitationRequired` (JSON-RPC
error ``-32042``, which the spec makes equivalent to sending those URL
elicitations) is held to the same rule: see :func:`url_required`.

URL elicitations complete out of band, so the client's ``accept`` means only
that the user agreed to go. Each ``elicitationId`` sent to a 2025-11-25 client,
by a request or in a ``-32042`` error, is reported to ``CallScope.track_url``
so that the server can later send that client (and only that client)
``notifications/elicitation/complete``
(:meth:`bridge.server.Server.complete_elicitation`).

Structured output degrades gracefully: a client that samples but did not
declare ``sampling.tools`` gets the schema as an instruction in the system
prompt, and the answer is read back from JSON text.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from typing import Any, cast, final

import attrs
from pydantic_core import to_jsonable_python

from bridge.jsonrpc.messages import RequestId
from bridge.telemetry.attributes import EFFECT_META
from decoders import mcp as mcp_decode
from encoders import mcp as mcp_encode
from runtime.codec import roots_reply_from_json
from runtime.effects import LOG_LEVELS
from runtime.errors import CapabilityError, UrlElicitationRequired
from runtime.lowlevel import (
    Elicit,
    ElicitUrl,
    ListRoots,
    Log,
    Notice,
    PeerQuestion,
    Progress,
    Sample,
)
from runtime.messages import ToolResult, ToolUse
from runtime.principal import Principal
from runtime.requests import SamplingRequest

__all__ = [
    "CallScope",
    "ask",
    "check_capabilities",
    "decode_answer",
    "notice_notification",
    "question_request",
    "url_required",
    "uses_tools",
]


@final
@attrs.define(kw_only=True)
class CallScope:
    """What a call knows about its caller: era, capabilities, progress, logging.

    ``log_level`` is the minimum level to send; ``None`` (a 2025-11-25 client
    that has not sent ``logging/setLevel``) sends every level. ``logging``
    False sends none (a 2026-07-28 request that did not opt in).
    ``track_url``, when set, hears the ``elicitationId`` of every URL
    elicitation sent to the client (2025-11-25 only: later eras have no
    completion notification). ``principal`` is who the call acts for, on a
    server that checks access tokens. ``caller`` tells callers apart for
    what they share (step threads): the principal, or a 2025-11-25 session.
    """

    era: mcp_encode.Era
    request_id: RequestId
    client_capabilities: Mapping[str, Any]
    progress_token: str | int | None = None
    log_level: str | None = None
    logging: bool = True
    track_url: Callable[[str], None] | None = None
    principal: Principal | None = None
    caller: str | None = None

    def capability(self, *path: str) -> bool:
        node: Any = self.client_capabilities
        try:
            for part in path:
                node = node[part]
        except (KeyError, TypeError):  # absent, or under a value that is no object
            return False
        return node is not None


# --- what each question needs and becomes ------------------------------------------


def check_capabilities(question: PeerQuestion[Any], scope: CallScope) -> None:
    """Raise CapabilityError if the client cannot be asked ``question``."""
    _checked(question, scope)


def ask(
    question: PeerQuestion[Any], scope: CallScope, key: str | None = None
) -> tuple[str, dict[str, Any] | None]:
    """:func:`check_capabilities`, then :func:`question_request` (a sampling
    request is built and fitted to the client once for both). A URL
    elicitation's id goes to ``scope.track_url``."""
    method, params = _request(question, scope, _checked(question, scope))
    if scope.track_url is not None and isinstance(question, ElicitUrl):
        scope.track_url(question.elicitation_id)
    return method, _stamped(params, key, scope)


def _stamped(
    params: dict[str, Any] | None, key: str | None, scope: CallScope
) -> dict[str, Any] | None:
    """``params`` with the effect key in ``_meta`` (``io.yieldmcp/effect``),
    for a client that declared the experimental capability of that name (to
    show which branch asked: ``yieldmcp call --trace``)."""
    if key is None or not scope.capability("experimental", EFFECT_META):
        return params
    stamped = dict(params or {})
    meta: Any = stamped.get("_meta")
    stamped["_meta"] = {**(meta if isinstance(meta, dict) else {}), EFFECT_META: key}
    return stamped


def url_required(exc: UrlElicitationRequired, scope: CallScope) -> Exception:
    """What a tool's ``UrlElicitationRequired`` is answered with.

    ``-32042`` hands the client URL elicitations, so a client that did not
    declare ``elicitation.url`` gets a :class:`~runtime.errors.CapabilityError`
    instead (a tool error, as for a yielded ``ElicitUrl``). Otherwise ``exc``
    itself, its ids reported to ``scope.track_url``. Anything listed that is
    not an ``ElicitUrl`` (``ctx.elicit_url(...)``) is a TypeError: the spec
    requires URL elicitations with an ``elicitationId``.
    """
    flows: list[Any] = list(exc.elicitations)
    strays = [type(f).__name__ for f in flows if not isinstance(f, ElicitUrl)]
    if strays or not flows:
        return TypeError(
            "UrlElicitationRequired lists ElicitUrl effects (ctx.elicit_url(...)); "
            f"got {strays or 'none'}"
        )
    if not scope.capability("elicitation", "url"):
        return CapabilityError(
            "the client did not declare URL-mode elicitation (elicitation.url), "
            "so this tool cannot send the user to a URL",
            required={"elicitation": {"url": {}}},
        )
    if scope.track_url is not None:
        for flow in cast("list[ElicitUrl]", flows):
            scope.track_url(flow.elicitation_id)
    return exc


def _checked(question: PeerQuestion[Any], scope: CallScope) -> SamplingRequest | None:
    """The checks; for a sample, its request as fitted to the client."""
    if isinstance(question, Sample):
        if not scope.capability("sampling"):
            raise CapabilityError(
                "the client did not declare the sampling capability, so this tool "
                "cannot ask its model; connect with a client that supports sampling",
                required={"sampling": {}},
            )
        return _fit_to_client(cast("Sample[Any]", question).request(), scope)
    if isinstance(question, ElicitUrl):
        if not scope.capability("elicitation", "url"):
            raise CapabilityError(
                "the client did not declare URL-mode elicitation (elicitation.url), "
                "so this tool cannot send the user to a URL",
                required={"elicitation": {"url": {}}},
            )
    elif isinstance(question, Elicit):
        if not scope.capability("elicitation"):
            raise CapabilityError(
                "the client did not declare the elicitation capability, so this "
                "tool cannot ask the user; connect with a client that supports "
                "elicitation",
                required={"elicitation": {}},
            )
        if not _supports_forms(scope):
            raise CapabilityError(
                "the client did not declare form-mode elicitation "
                "(elicitation.form), so this tool cannot ask the user with a form",
                required={"elicitation": {"form": {}}},
            )
    elif isinstance(question, ListRoots) and not scope.capability("roots"):
        raise CapabilityError(
            "the client did not declare the roots capability", required={"roots": {}}
        )
    return None


def question_request(
    question: PeerQuestion[Any], scope: CallScope, key: str | None = None
) -> tuple[str, dict[str, Any] | None]:
    """The MCP method and params that ask ``question`` (after the checks),
    asked at effect ``key``."""
    method, params = _request(question, scope, None)
    return method, _stamped(params, key, scope)


def _request(
    question: PeerQuestion[Any], scope: CallScope, fitted: SamplingRequest | None
) -> tuple[str, dict[str, Any] | None]:
    if isinstance(question, Sample):
        request = fitted or _fit_to_client(
            cast("Sample[Any]", question).request(), scope
        )
        return "sampling/createMessage", mcp_encode.sampling_params(
            request, era=scope.era
        )
    if isinstance(question, Elicit | ElicitUrl):
        elicit = cast("Elicit[Any] | ElicitUrl", question)
        return "elicitation/create", mcp_encode.elicitation_params(
            elicit.request(), era=scope.era
        )
    if isinstance(question, ListRoots):
        return "roots/list", None
    raise CapabilityError(
        f"an MCP client cannot answer {type(question).__name__}", required={}
    )


def decode_answer(question: PeerQuestion[Any], result: Any) -> Any:
    """The runtime reply for the client's ``result`` (RemoteProtocolError if bad)."""
    if isinstance(question, Sample):
        return mcp_decode.sample_reply(result)
    if isinstance(question, Elicit):
        form = cast("Elicit[Any]", question)
        return mcp_decode.form_reply(result, form.requested_schema)
    if isinstance(question, ElicitUrl):
        return mcp_decode.elicit_reply(result, question.request())
    if not isinstance(result, dict):
        from runtime.errors import RemoteProtocolError

        raise RemoteProtocolError("a roots/list result must be an object")
    return roots_reply_from_json(cast("dict[str, Any]", result))


def _fit_to_client(request: SamplingRequest, scope: CallScope) -> SamplingRequest:
    if request.include_context not in (None, "none") and not scope.capability(
        "sampling", "context"
    ):
        raise CapabilityError(
            "include_context needs the client's sampling.context capability",
            required={"sampling": {"context": {}}},
        )
    if not uses_tools(request) or scope.capability("sampling", "tools"):
        return request
    schema_tool = request.schema_tool
    if schema_tool is not None and not _has_tool_blocks(request):
        instruction = (
            "Respond with only a JSON object that matches this JSON Schema, "
            f"and nothing else:\n{json.dumps(dict(schema_tool.input_schema))}"
        )
        system = (
            f"{request.system_prompt}\n\n{instruction}"
            if request.system_prompt
            else instruction
        )
        return attrs.evolve(request, tools=(), tool_choice=None, system_prompt=system)
    raise CapabilityError(
        "the client did not declare sampling.tools, so this tool cannot offer "
        "tools to its model",
        required={"sampling": {"tools": {}}},
    )


def _supports_forms(scope: CallScope) -> bool:
    if not scope.capability("elicitation"):
        return False
    declared: Any = scope.client_capabilities["elicitation"]
    # {} means form (back-compat); otherwise form must be listed.
    return not declared or scope.capability("elicitation", "form")


def uses_tools(request: SamplingRequest) -> bool:
    """Whether ``request`` needs ``sampling.tools`` (tools, a choice, tool blocks)."""
    return (
        bool(request.tools)
        or request.tool_choice is not None
        or _has_tool_blocks(request)
    )


def _has_tool_blocks(request: SamplingRequest) -> bool:
    return any(
        isinstance(block, ToolUse | ToolResult)
        for message in request.messages
        for block in message.content
    )


# --- notices ----------------------------------------------------------------------


def notice_notification(
    notice: Notice, scope: CallScope, key: str | None = None
) -> tuple[str, dict[str, Any]] | None:
    """The notification a notice (at effect ``key``) becomes for this caller,
    or None to send none."""
    found = _notification(notice, scope)
    if found is None or key is None:
        return found
    params = _stamped(found[1], key, scope)
    assert params is not None
    return found[0], params


def _notification(
    notice: Notice, scope: CallScope
) -> tuple[str, dict[str, Any]] | None:
    if isinstance(notice, Log):
        if not scope.logging or not _level_allowed(notice.level, scope.log_level):
            return None
        params: dict[str, Any] = {"level": notice.level, "data": _sendable(notice.data)}
        if notice.logger is not None:
            params["logger"] = _sendable(notice.logger)
        return "notifications/message", params
    if isinstance(notice, Progress) and scope.progress_token is not None:
        params = {"progressToken": scope.progress_token, "progress": notice.progress}
        if notice.total is not None:
            params["total"] = notice.total
        if notice.message is not None:
            params["message"] = _sendable(notice.message)
        return "notifications/progress", params
    return None


def _sendable(value: Any) -> Any:
    """A log's data or a progress message as JSON the wire can carry.

    A log is for a person, and logging must not fail the call: what JSON has
    no form for (an exception, an object) is sent as its ``repr`` (a date,
    a path, a model or a dataclass as pydantic writes it), a number JSON has
    no form for (NaN, an infinity) as its ``repr`` too (``"nan"``: written
    as it is, a strict client cannot read the notification), and a lone
    surrogate (text decoded with ``errors="surrogateescape"``, which UTF-8
    cannot carry) as its escape, ``\\udce9``.
    """
    return _escaped(to_jsonable_python(value, fallback=repr))


def _escaped(value: Any) -> Any:
    if isinstance(value, str):
        return mcp_encode.escaped(value)
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, list):
        return [_escaped(item) for item in cast("list[Any]", value)]
    if isinstance(value, dict):
        pairs = cast("dict[Any, Any]", value).items()
        return {_escaped(key): _escaped(item) for key, item in pairs}
    return value


def _level_allowed(level: str, threshold: str | None) -> bool:
    if threshold not in LOG_LEVELS:
        return True
    return LOG_LEVELS.index(level) >= LOG_LEVELS.index(threshold)

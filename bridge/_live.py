"""The live executor: a tool's questions become server→client MCP requests.

Used for the 2025-11-25 era (and earlier handshake versions), where a server
may send ``sampling/createMessage`` and ``elicitation/create`` to the client in
the middle of a ``tools/call``. Every request and notification is *related* to
the call's request id, so over HTTP it travels on that call's response stream.

Capability checks happen here, before anything is sent: no sampling request to
a client that did not declare ``sampling``, no tools in sampling without
``sampling.tools``, no form elicitation without ``elicitation`` (form), no URL
elicitation without ``elicitation.url``. Each refusal is a
:class:`~runtime.errors.CapabilityError` raised into the tool, which fails the
call with a clear message unless the tool handles it.

Structured output degrades gracefully: a client that samples but did not
declare ``sampling.tools`` gets the schema as an instruction in the system
prompt and the answer is read back from JSON text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, cast, final

import attrs

from decoders import mcp as mcp_decode
from encoders import mcp as mcp_encode
from runtime import Elicit, ElicitUrl, Log, Notice, PeerQuestion, Progress, Sample
from runtime.effects import LOG_LEVELS
from runtime.errors import CapabilityError
from runtime.messages import ToolResult, ToolUse
from runtime.requests import SamplingRequest

from .jsonrpc import RequestId
from .session import Session

__all__ = ["CallScope", "LiveExecutor", "log_allowed"]


@final
@attrs.define(kw_only=True)
class CallScope:
    """What a call knows about its caller: era, capabilities, progress, logging."""

    era: mcp_encode.Era
    request_id: RequestId
    client_capabilities: Mapping[str, Any]
    progress_token: str | int | None = None
    log_level: str | None = None

    def capability(self, *path: str) -> bool:
        node: Any = self.client_capabilities
        for part in path:
            if not isinstance(node, Mapping):
                return False
            mapping = cast(Mapping[str, Any], node)
            if part not in mapping:
                return False
            node = mapping[part]
        return node is not None


def log_allowed(level: str, threshold: str | None) -> bool:
    """Whether a message at ``level`` passes the client's chosen ``threshold``."""
    if threshold is None:
        return True
    return LOG_LEVELS.index(level) >= LOG_LEVELS.index(threshold)  # type: ignore[arg-type]


@final
class LiveExecutor:
    """Answers a tool's questions by asking the client over ``session``."""

    def __init__(
        self,
        session: Session,
        scope: CallScope,
        *,
        sampling_timeout: float | None = None,
        elicitation_timeout: float | None = None,
    ) -> None:
        self.session = session
        self.scope = scope
        self.sampling_timeout = sampling_timeout
        self.elicitation_timeout = elicitation_timeout
        self._last_progress: float | None = None

    async def perform(self, key: str, question: PeerQuestion[Any]) -> Any:
        if isinstance(question, Sample):
            return await self._sample(cast(Sample[Any], question))
        if isinstance(question, Elicit | ElicitUrl):
            return await self._elicit(cast(Elicit[Any] | ElicitUrl, question))
        raise CapabilityError(
            f"an MCP client cannot answer {type(question).__name__}", required={}
        )

    async def _sample(self, sample: Sample[Any]) -> Any:
        scope = self.scope
        if not scope.capability("sampling"):
            raise CapabilityError(
                "the client did not declare the sampling capability, so this tool "
                "cannot ask its model; connect with a client that supports sampling",
                required={"sampling": {}},
            )
        request = self._fit_to_client(sample.request())
        params = mcp_encode.sampling_params(request, era=scope.era)
        result = await self.session.request(
            "sampling/createMessage",
            params,
            related=scope.request_id,
            timeout=self.sampling_timeout,
        )
        return mcp_decode.sample_reply(result)

    def _fit_to_client(self, request: SamplingRequest) -> SamplingRequest:
        if request.include_context not in (None, "none") and not self.scope.capability(
            "sampling", "context"
        ):
            raise CapabilityError(
                "include_context needs the client's sampling.context capability",
                required={"sampling": {"context": {}}},
            )
        if not _uses_tools(request) or self.scope.capability("sampling", "tools"):
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
            return attrs.evolve(
                request, tools=(), tool_choice=None, system_prompt=system
            )
        raise CapabilityError(
            "the client did not declare sampling.tools, so this tool cannot offer "
            "tools to its model",
            required={"sampling": {"tools": {}}},
        )

    async def _elicit(self, question: Elicit[Any] | ElicitUrl) -> Any:
        scope = self.scope
        request = question.request()
        if request.mode == "url" and not scope.capability("elicitation", "url"):
            raise CapabilityError(
                "the client did not declare URL-mode elicitation (elicitation.url)",
                required={"elicitation": {"url": {}}},
            )
        if request.mode == "form" and not _supports_forms(scope):
            raise CapabilityError(
                "the client did not declare the elicitation capability, so this tool "
                "cannot ask the user; connect with a client that supports elicitation",
                required={"elicitation": {}},
            )
        params = mcp_encode.elicitation_params(request, era=scope.era)
        result = await self.session.request(
            "elicitation/create",
            params,
            related=scope.request_id,
            timeout=self.elicitation_timeout,
        )
        return mcp_decode.elicit_reply(result, request)

    async def notify(self, key: str, notice: Notice) -> None:
        scope = self.scope
        if isinstance(notice, Log):
            if log_allowed(notice.level, scope.log_level):
                await self.session.notify(
                    "notifications/message",
                    _log_params(notice),
                    related=scope.request_id,
                )
        elif isinstance(notice, Progress) and scope.progress_token is not None:
            await self.session.notify(
                "notifications/progress",
                _progress_params(notice, scope.progress_token),
                related=scope.request_id,
            )


def _supports_forms(scope: CallScope) -> bool:
    if not scope.capability("elicitation"):
        return False
    declared: Any = scope.client_capabilities["elicitation"]
    # {} means form (back-compat); otherwise form must be listed.
    return not declared or scope.capability("elicitation", "form")


def _uses_tools(request: SamplingRequest) -> bool:
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


def _log_params(notice: Log) -> dict[str, Any]:
    params: dict[str, Any] = {"level": notice.level, "data": notice.data}
    if notice.logger is not None:
        params["logger"] = notice.logger
    return params


def _progress_params(notice: Progress, token: str | int) -> dict[str, Any]:
    params: dict[str, Any] = {"progressToken": token, "progress": notice.progress}
    if notice.total is not None:
        params["total"] = notice.total
    if notice.message is not None:
        params["message"] = notice.message
    return params

"""In-process hosting: a tool's questions answered by a provider and a UI.

Owns the host side of a call with no JSON-RPC in between. :class:`HostExecutor`
is a runtime ``Executor``: a ``Sample`` becomes ``question.request()`` for the
provider (whose own encoders and decoders speak to the model), an ``Elicit`` or
``ElicitUrl`` becomes ``question.request()`` for the elicitation handler,
``ListRoots`` is answered from configured roots, and notices (log, progress)
go to callbacks. :func:`run_in_process` runs one tool that way.

With ``wire="2025-11-25"`` (or ``"2026-07-28"``) every request and reply also
makes the round trip through the MCP encoders and decoders a JSON-RPC peer
would use, so in-process behaviour matches the wire exactly (useful in tests).

It does not speak JSON-RPC, open transports or choose providers
(``bridge.providers.provider_from_spec`` does).
"""

from __future__ import annotations

import inspect
import random
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, TypeVar, cast, final

import attrs

import decoders.mcp
import encoders.mcp
from bridge import telemetry
from bridge.elicit import ElicitationHandler
from bridge.providers import Provider
from encoders.mcp import Era
from runtime.effects import (
    Elicit,
    ElicitUrl,
    ListRoots,
    Log,
    Notice,
    PeerQuestion,
    Progress,
    Sample,
)
from runtime.errors import CapabilityError, LocalProtocolError
from runtime.lowlevel import Journal, run
from runtime.replies import ElicitReply, Root, RootsReply, SampleReply
from runtime.requests import ElicitationRequest
from runtime.tools import Tool

__all__ = ["HostExecutor", "HostStatistics", "run_in_process"]

R = TypeVar("R")
N = TypeVar("N", bound=Notice)

OnNotice = Callable[[N], Awaitable[None] | None]
"""A callback for a notice; it may be a plain or an async function."""


@final
@attrs.frozen(kw_only=True)
class HostStatistics:
    """What a :class:`HostExecutor` has answered so far."""

    samples: int
    elicitations: int
    input_tokens: int
    output_tokens: int


@final
class HostExecutor:
    """Answers a tool's questions in-process (a runtime ``Executor``).

    Args:
        provider: answers samples; None refuses them with ``CapabilityError``.
        elicitation: answers forms and URL requests; None refuses them with
            ``CapabilityError``.
        roots: what ``ctx.list_roots()`` returns (``Root`` values or URIs).
        on_log: called with each ``Log`` notice, in order.
        on_progress: called with each ``Progress`` notice, in order.
        wire: an MCP era to round-trip every request and reply through its
            encoders and decoders; None hands them over as they are.
    """

    def __init__(
        self,
        provider: Provider | None,
        elicitation: ElicitationHandler | None = None,
        *,
        roots: Iterable[Root | str] = (),
        on_log: OnNotice[Log] | None = None,
        on_progress: OnNotice[Progress] | None = None,
        wire: Era | None = None,
    ) -> None:
        self._provider = provider
        self._elicitation = elicitation
        self._roots = tuple(r if isinstance(r, Root) else Root(r) for r in roots)
        self._on_log = on_log
        self._on_progress = on_progress
        self._wire: Era | None = wire
        self._samples = self._elicitations = 0
        self._input_tokens = self._output_tokens = 0

    def statistics(self) -> HostStatistics:
        """Counts of answered samples and elicitations, and reported tokens."""
        return HostStatistics(
            samples=self._samples,
            elicitations=self._elicitations,
            input_tokens=self._input_tokens,
            output_tokens=self._output_tokens,
        )

    async def perform(self, key: str, question: PeerQuestion[Any]) -> Any:
        """The reply to ``question``: from the provider, the handler or the roots.

        Raises:
            CapabilityError: no provider (for a sample) or no elicitation
                handler (for an elicitation) was given.
            LocalProtocolError: a question this host does not know.
            Exception: whatever the provider or the handler raises.
        """
        if isinstance(question, Sample):
            return await self._sample(cast(Sample[Any], question))
        if isinstance(question, Elicit | ElicitUrl):
            return await self._elicit(question.request())
        if isinstance(question, ListRoots):
            return RootsReply(self._roots)
        raise LocalProtocolError(
            f"the in-process host cannot answer {type(question).__name__} "
            f"(asked at key {key!r})"
        )

    async def notify(self, key: str, notice: Notice) -> None:
        """Hand a log or progress notice to its callback; ignore the rest."""
        if isinstance(notice, Log) and self._on_log is not None:
            await _call(self._on_log, notice)
        elif isinstance(notice, Progress) and self._on_progress is not None:
            await _call(self._on_progress, notice)

    async def _sample(self, sample: Sample[Any]) -> SampleReply:
        if self._provider is None:
            raise CapabilityError(
                "the tool samples, but this host has no provider; pass one",
                required={"sampling": {}},
            )
        request = sample.request()
        if self._wire is not None:
            params = encoders.mcp.sampling_params(request, era=self._wire)
            request = decoders.mcp.sampling_request(params)
        reply = await telemetry.traced_completion(self._provider, request)
        if self._wire is not None:
            result = encoders.mcp.sample_result(reply, era=self._wire)
            reply = decoders.mcp.sample_reply(result)
        self._count_sample(reply)
        return reply

    def _count_sample(self, reply: SampleReply) -> None:
        self._samples += 1
        if reply.usage is not None:
            self._input_tokens += reply.usage.input_tokens
            self._output_tokens += reply.usage.output_tokens

    async def _elicit(self, request: ElicitationRequest) -> ElicitReply:
        if self._elicitation is None:
            raise CapabilityError(
                f"the tool elicits ({request.mode} mode), but this host has no "
                f"elicitation handler; pass one",
                required={"elicitation": {request.mode: {}}},
            )
        if self._wire is not None:
            params = encoders.mcp.elicitation_params(request, era=self._wire)
            request = decoders.mcp.elicitation_request(params)
        reply = await self._elicitation.handle(request)
        if self._wire is not None:
            reply = decoders.mcp.elicit_reply(
                encoders.mcp.elicit_result(reply, era=self._wire), request
            )
        self._elicitations += 1
        return reply


async def _call(callback: OnNotice[N], notice: N) -> None:
    result = callback(notice)
    if inspect.isawaitable(result):
        await result


async def run_in_process(
    tool: Tool[Any, R],
    arguments: Mapping[str, Any] | Any,
    *,
    provider: Provider | None = None,
    elicitation: ElicitationHandler | None = None,
    roots: Iterable[Root | str] = (),
    on_log: OnNotice[Log] | None = None,
    on_progress: OnNotice[Progress] | None = None,
    wire: Era | None = None,
    journal: Journal | None = None,
    clock: Callable[[], float] = time.time,
    rng: random.Random | None = None,
) -> R:
    """Run ``tool`` here, answering it with ``provider`` and ``elicitation``.

    Args:
        tool: the tool to run.
        arguments: its arguments (a mapping, or its params model).
        provider: answers samples (e.g. ``OfflineModel()`` or
            ``provider_from_spec("openai:gpt-4o-mini")``).
        elicitation: answers elicitations (e.g. ``TerminalForm()``).
        roots, on_log, on_progress, wire: as for :class:`HostExecutor`.
        journal: records every answer (recorded answers are replayed).
        clock, rng: sources of ``ctx.now()`` and ``ctx.random()``.

    Returns:
        The tool's result.

    Raises:
        pydantic.ValidationError: ``arguments`` do not match the tool's params.
        CapabilityError: the tool needs a provider or handler that is missing.
        Exception: whatever the tool raises (``ToolError``,
            ``SampleValidationError``, ...).
    """
    executor = HostExecutor(
        provider,
        elicitation,
        roots=roots,
        on_log=on_log,
        on_progress=on_progress,
        wire=wire,
    )
    return await run(tool, arguments, executor, journal=journal, clock=clock, rng=rng)

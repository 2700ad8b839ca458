"""What our client answers: the server's questions, and its notifications.

:class:`Answers` is the session handler of a :class:`~bridge.client.Client`.
It answers ``sampling/createMessage`` through a :class:`Sampler` (a provider),
``elicitation/create`` through an :class:`ElicitationHandler`, ``roots/list``
from a fixed list, and ``ping``, in either era (live requests in 2025-11-25,
``inputRequests`` entries in 2026-07-28); and it passes progress and log
notifications to the caller's callbacks. What it can answer is what the client
declares (:attr:`Answers.capabilities`): nothing more.

It does not connect, negotiate or call tools (:mod:`bridge.client.client`).
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final, Protocol, final

import attrs

from bridge import telemetry
from bridge.jsonrpc.messages import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    Notification,
    Request,
)
from bridge.jsonrpc.session import Session
from decoders import mcp as mcp_decode
from encoders import mcp as mcp_encode
from runtime.codec import roots_reply_to_json
from runtime.errors import (
    ProviderError,
    ProviderTimeout,
    RemoteProtocolError,
    RequestError,
)
from runtime.replies import ElicitReply, Root, RootsReply
from runtime.requests import ElicitationRequest, SamplingRequest

__all__ = [
    "LEGACY",
    "MODERN",
    "Answers",
    "ElicitationHandler",
    "LogCallback",
    "ProgressCallback",
    "Sampler",
]

MODERN: Final = "2026-07-28"
LEGACY: Final = "2025-11-25"

ProgressCallback = Callable[[float, float | None, str | None], Awaitable[None] | None]
LogCallback = Callable[[str, Any, str | None], Awaitable[None] | None]


class Sampler(Protocol):
    """Answers sampling: a provider (``bridge.providers``) or anything alike.

    A sampler that can answer requests offering tools says so with a true
    ``supports_tools`` attribute (every ``bridge.providers`` adapter does);
    only then does the client declare ``sampling.tools``, so a server never
    sends tools to a sampler that would ignore them.
    """

    async def complete(self, request: SamplingRequest) -> Any: ...


class ElicitationHandler(Protocol):
    """Answers elicitation: a terminal form, keyed handlers, scripted answers."""

    async def handle(self, request: ElicitationRequest) -> ElicitReply: ...


async def _maybe(value: Awaitable[None] | None) -> None:
    if value is not None:
        await value


MAX_QUESTIONS: Final = 64
"""The most questions of one 2026-07-28 round, and the most 2025-11-25
questions open at once, a client answers by default."""

_BUSY: Final = -32000
"""The code of a question refused for being one too many, as a busy server
refuses a request (the implementation-defined range of JSON-RPC)."""


@final
class Answers:
    """Answers a server's requests with what the client was given.

    Args:
        sampler: answers sampling (a provider); ``None`` declares no sampling.
        elicitation: answers elicitation; ``None`` declares no elicitation.
        roots: the roots to expose; ``None`` declares no roots.
        on_log: called with (level, data, logger) for server log messages.
        max_questions: the most questions of one 2026-07-28 round (its
            ``inputRequests``, a call's or a task's) answered at all.
    """

    def __init__(
        self,
        *,
        sampler: Sampler | None,
        elicitation: ElicitationHandler | None,
        roots: Sequence[Root] | None,
        on_log: LogCallback | None,
        max_questions: int = MAX_QUESTIONS,
    ) -> None:
        self.sampler = sampler
        self.elicitation = elicitation
        self.roots = roots
        self.on_log = on_log
        self.max_questions = max_questions
        self._open = 0  # live questions being answered now
        self.progress: dict[str | int, ProgressCallback] = {}
        self.on_tools_changed: Callable[[], None] | None = None

    @property
    def capabilities(self) -> dict[str, Any]:
        """What this client can answer, as MCP client capabilities."""
        caps: dict[str, Any] = {}
        if self.sampler is not None:
            tools = getattr(self.sampler, "supports_tools", False) is True
            caps["sampling"] = {"tools": {}} if tools else {}
        if self.elicitation is not None:
            caps["elicitation"] = {"form": {}, "url": {}}
        if self.roots is not None:
            caps["roots"] = {"listChanged": False}
        return caps

    async def handle_request(self, request: Request, session: Session) -> Any:
        if request.method == "ping":
            return {}
        # A 2025-11-25 server asks live, as many at once as it likes: past
        # max_questions open at once, a question is refused, not queued (each
        # may be a model call the user pays for).
        if self._open >= self.max_questions:
            raise RequestError(
                _BUSY,
                f"Client busy: it answers at most {self.max_questions} "
                f"questions at once (max_questions); try again later",
            )
        self._open += 1
        try:
            return await self.answer(request.method, request.params or {}, LEGACY)
        finally:
            self._open -= 1

    async def handle_notification(
        self, notification: Notification, session: Session
    ) -> None:
        await self.notified(notification.method, notification.params or {})

    def closed(self, session: Session) -> None:
        pass

    async def answer(
        self,
        method: str,
        params: Mapping[str, Any],
        era: str,
        *,
        key: str | None = None,
    ) -> Any:
        """The answer to a server request (live, or an ``inputRequests`` entry).

        ``key`` names an elicitation that carries no yieldmcp key of its own
        (the ``inputRequests`` key a foreign 2026 server chose).

        Raises:
            RequestError: ``-32602`` for params that are not an object or
                not what ``method`` takes, ``-32601`` for a method the client
                does not answer, ``-32603`` when the model failed.
        """
        wire: mcp_encode.Era = MODERN if era == MODERN else LEGACY
        if not isinstance(params, Mapping):  # as a JSON-RPC request's must be
            raise RequestError(INVALID_PARAMS, "params must be an object")
        try:
            if method == "sampling/createMessage":
                return await self._sample(params, wire)
            if method == "elicitation/create":
                return await self._elicit(params, wire, key)
            if method == "roots/list" and self.roots is not None:
                return roots_reply_to_json(RootsReply(tuple(self.roots)))
        except RemoteProtocolError as exc:
            raise RequestError(INVALID_PARAMS, str(exc)) from None
        except (ProviderError, ProviderTimeout) as exc:
            # The model failed, not the request: -32603. The cause stays
            # attached: a 2026 round re-raises it here.
            raise RequestError(INTERNAL_ERROR, str(exc)) from exc
        raise RequestError(METHOD_NOT_FOUND, f"this client does not answer {method}")

    async def _sample(self, params: Mapping[str, Any], era: mcp_encode.Era) -> Any:
        if self.sampler is None:
            raise RequestError(METHOD_NOT_FOUND, "this client does not sample")
        request = mcp_decode.sampling_request(dict(params))
        reply = await telemetry.traced_completion(self.sampler, request)
        return mcp_encode.sample_result(reply, era=era)

    async def _elicit(
        self, params: Mapping[str, Any], era: mcp_encode.Era, key: str | None
    ) -> Any:
        if self.elicitation is None:
            raise RequestError(METHOD_NOT_FOUND, "this client does not elicit")
        request = mcp_decode.elicitation_request(dict(params))
        if request.key is None and key is not None:
            request = attrs.evolve(request, key=key)
        reply = await self.elicitation.handle(request)
        return mcp_encode.elicit_result(reply, era=era)

    async def notified(self, method: str, params: Mapping[str, Any]) -> None:
        if method == "notifications/tools/list_changed":
            if self.on_tools_changed is not None:
                self.on_tools_changed()
        elif method == "notifications/progress":
            token: Any = params.get("progressToken")
            if not isinstance(token, str | int):
                return  # not a token we gave (a list is not even hashable)
            callback = self.progress.get(token)
            if callback is not None and (shown := _progress(params)) is not None:
                await _maybe(callback(*shown))
        elif method == "notifications/message" and self.on_log is not None:
            level: Any = params.get("level", "info")
            logger: Any = params.get("logger")
            if not isinstance(level, str) or not isinstance(logger, str | None):
                return  # not the spec's notice: not shown (as for progress)
            await _maybe(self.on_log(level, params.get("data"), logger))


def _progress(
    params: Mapping[str, Any],
) -> tuple[float, float | None, str | None] | None:
    """A progress notice's ``(progress, total, message)``, or None when they
    are not what the spec says (numbers a float can hold, a string): a
    peer's notice is then not shown, rather than failing the call."""
    progress = _number(params.get("progress", 0))
    given: Any = params.get("total")
    total = None if given is None else _number(given)
    message: Any = params.get("message")
    if progress is None or (given is not None and total is None):
        return None
    if message is not None and not isinstance(message, str):
        return None
    return progress, total, message


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer past a float's range
        return None
    return number if math.isfinite(number) else None

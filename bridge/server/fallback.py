"""Sampling answered by the server's own model, for clients that cannot sample.

Most hosts do not implement sampling, and 2026-07-28 deprecates it. A server
given a sampler (``Server(sampler=...)``, ``yieldmcp serve --model
PROVIDER:MODEL``) answers a tool's ``Sample`` itself when the client cannot:
it did not declare ``sampling``, or the sample offers tools (structured output
included) and it did not declare ``sampling.tools``. With
``sample_always=True`` the server answers every sample. The tool's code does
not change; the reply's ``model`` names the server's model. The sampler is
anything with ``async complete(SamplingRequest) -> SampleReply``: the adapters
in ``bridge.providers``, whose keys come from the server's environment.

Elicitation has no such fallback: it needs the user.

In 2025-11-25 the live call asks the sampler instead of the client
(:mod:`bridge.server.calls.live`, :func:`answer_here`). In
2026-07-28 the rounds are run as if the client could sample with tools
(:func:`round_capabilities`); the ``sampling/createMessage`` input requests the
client cannot answer are answered here and the round is retried with them, as
the client would have (:func:`follow_up`), until the call completes or only
the client's own questions remain. A task's rounds run the same way: its
runner answers those of a round's questions with :func:`answer_requests`
before the task waits on its client (:mod:`bridge.server.tasks.runner`).
All wait on the model within the server's sampling timeout.

The client sees no request for a sample answered here, so the result names
the models that answered (:func:`runtime.codec.naming_server_models`: the
``model`` each reply reported, in ``_meta["io.yieldmcp/server-models"]``,
first answer first, each once, bounded by :data:`runtime.codec.MAX_SERVER_MODELS` and
:data:`runtime.codec.MAX_MODEL_NAME_CHARS`). A durable live call taken on by
another process names those its journal records (a sample no client was
asked was answered here). In 2026-07-28 a response names those that answered
while it was made (an ``input_required`` one too); a client gathers them over
the call's rounds; a task keeps them in its document.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final, Protocol, cast

import trio

from bridge.jsonrpc.messages import INTERNAL_ERROR, Request
from decoders import mcp as mcp_decode
from encoders import mcp as mcp_encode
from runtime.codec import with_model_name
from runtime.errors import RequestError, RequestTimeout, YieldMCPError
from runtime.lowlevel import PeerQuestion, Sample
from runtime.replies import SampleReply
from runtime.requests import SamplingRequest

from .failures import describe_failure
from .questions import CallScope, uses_tools

__all__ = [
    "Sampler",
    "answer_here",
    "answer_requests",
    "follow_up",
    "needs_follow_up",
    "round_capabilities",
    "sample_here",
]

_SAMPLING: Final = "sampling/createMessage"


class Sampler(Protocol):
    """Answers a sampling request with a model's reply (a provider)."""

    async def complete(self, request: SamplingRequest) -> SampleReply: ...


def answer_here(
    question: PeerQuestion[Any],
    scope: CallScope,
    sampler: Sampler | None,
    *,
    always: bool = False,
) -> bool:
    """Whether the server's ``sampler`` answers ``question`` instead of the client."""
    if sampler is None or not isinstance(question, Sample):
        return False
    if always or not scope.capability("sampling"):
        return True
    request = cast("Sample[Any]", question).request()
    return uses_tools(request) and not scope.capability("sampling", "tools")


async def sample_here(
    question: PeerQuestion[Any], sampler: Sampler, timeout: float | None
) -> SampleReply:
    """The server's model's reply to sample ``question``.

    Raises:
        RequestTimeout: no reply within ``timeout`` seconds.
    """
    return await _complete(sampler, cast("Sample[Any]", question).request(), timeout)


async def _complete(
    sampler: Sampler, request: SamplingRequest, timeout: float | None
) -> SampleReply:
    with trio.move_on_after(timeout if timeout is not None else float("inf")) as late:
        return await sampler.complete(request)
    assert late.cancelled_caught
    raise RequestTimeout(f"the server's model gave no reply within {timeout} s")


# --- 2026-07-28: rounds --------------------------------------------------------------


def round_capabilities(client: Mapping[str, Any]) -> dict[str, Any]:
    """The capabilities a round runs under when the server can sample: the
    client's, with sampling (and tools), since what the client cannot answer
    the server does."""
    out = dict(client)
    declared: Any = out.get("sampling")
    sampling = (
        dict(cast("Mapping[str, Any]", declared))
        if isinstance(declared, Mapping)
        else {}
    )
    sampling.setdefault("tools", {})
    out["sampling"] = sampling
    return out


def needs_follow_up(
    result: Mapping[str, Any],
    client: Mapping[str, Any],
    *,
    sampler: Sampler | None,
    always: bool = False,
) -> bool:
    """Whether :func:`follow_up` would answer some of ``result``'s input
    requests with ``sampler`` (before asking it anything)."""
    entries: Any = result.get("inputRequests")
    if sampler is None or result.get("resultType") != "input_required":
        return False
    ours = _answered_here(cast("Mapping[str, Any]", entries or {}), client, always)
    return next(ours, None) is not None


async def follow_up(
    request: Request,
    result: Mapping[str, Any],
    client: Mapping[str, Any],
    *,
    sampler: Sampler | None,
    always: bool = False,
    timeout: float | None = None,
) -> tuple[Request | None, tuple[str, ...]]:
    """The retry of ``request`` with ``sampler``'s answers to the input
    requests of ``result`` that client ``client`` (its capabilities) cannot
    answer (``always``: all its samples), or None when there are none (the
    result goes to the client); and the models that answered, in order.

    Raises:
        RequestError: -32603 when the server's model fails.
    """
    entries: Any = result.get("inputRequests")
    if sampler is None or result.get("resultType") != "input_required":
        return None, ()
    answers, models = await answer_requests(
        cast("Mapping[str, Any]", entries or {}),
        client,
        sampler=sampler,
        always=always,
        timeout=timeout,
    )
    if not answers:
        return None, ()
    params = dict(request.params or {})
    params["requestState"] = result.get("requestState")
    params["inputResponses"] = answers
    return Request(request.id, request.method, params), models


def _answered_here(
    entries: Mapping[str, Any], client: Mapping[str, Any], always: bool
) -> Iterator[tuple[str, SamplingRequest]]:
    """The keys and requests of the samples among ``inputRequests`` entries
    that the server's model answers: those client ``client`` (its
    capabilities) cannot, or all of them (``always``)."""
    # Only its capabilities are read: what the client can answer.
    scope = CallScope(era="2026-07-28", request_id=0, client_capabilities=client)
    for key, entry in entries.items():
        if entry.get("method") != _SAMPLING:
            continue
        wanted = mcp_decode.sampling_request(entry.get("params"))
        if always or _client_cannot(wanted, scope):
            yield key, wanted


async def answer_requests(
    entries: Mapping[str, Any],
    client: Mapping[str, Any],
    *,
    sampler: Sampler,
    always: bool = False,
    timeout: float | None = None,
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """``sampler``'s answers (``inputResponses`` entries, by key) to the
    ``inputRequests`` ``entries`` that client ``client`` (its capabilities)
    cannot answer (``always``: all the samples), and the models that
    answered, in order (for a round's retry, or a task's next round).

    Raises:
        RequestError: -32603 when the server's model fails.
    """
    answers: dict[str, Any] = {}
    models: tuple[str, ...] = ()
    for key, wanted in _answered_here(entries, client, always):
        try:
            reply = await _complete(sampler, wanted, timeout)
        except YieldMCPError as exc:
            raise RequestError(INTERNAL_ERROR, describe_failure(exc)) from None
        answers[key] = mcp_encode.sample_result(reply, era="2026-07-28")
        models = with_model_name(models, reply.model)
    return answers, models


def _client_cannot(request: SamplingRequest, scope: CallScope) -> bool:
    if not scope.capability("sampling"):
        return True
    return uses_tools(request) and not scope.capability("sampling", "tools")

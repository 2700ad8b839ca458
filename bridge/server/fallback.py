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

Answers here are only for 2025-11-25 live calls (the task path,
:class:`~bridge.server.live.LiveExecutor`), under the server's sampling
timeout.
"""

from __future__ import annotations

from typing import Any, Protocol, cast

import trio

from runtime import PeerQuestion, Sample
from runtime.errors import RequestTimeout
from runtime.replies import SampleReply
from runtime.requests import SamplingRequest

from .questions import CallScope, uses_tools

__all__ = ["Sampler", "answer_here", "sample_here"]


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
    request = cast("Sample[Any]", question).request()
    with trio.move_on_after(timeout if timeout is not None else float("inf")) as late:
        return await sampler.complete(request)
    assert late.cancelled_caught
    raise RequestTimeout(f"the server's model gave no reply within {timeout} s")

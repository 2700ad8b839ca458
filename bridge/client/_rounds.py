"""The client's half of a 2026-07-28 round: answer ``inputRequests``, retry.

A call that returns ``input_required`` is answered here, one entry at a time,
and retried with the answers and the ``requestState`` echoed. Two things can
go wrong while a person or a model answers:

* the server goes away (a stdio server that exits): the answer can never be
  delivered, so the wait is abandoned at once, as ``BrokenSessionError``;
* answering fails here (the model cannot be reached): the cause is raised as
  itself (a ``ProviderError``), not as the JSON-RPC error a 2025-11-25 server
  would have been sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import trio

from runtime.errors import (
    BrokenSessionError,
    ProviderError,
    RemoteProtocolError,
    RequestError,
)

from .answers import MODERN, Answers

__all__ = ["retry_params"]


async def retry_params(
    answers: Answers,
    params: Mapping[str, Any],
    result: Mapping[str, Any],
    *,
    gone: trio.Event,
) -> dict[str, Any]:
    """The retry of ``params`` answering ``result``'s ``inputRequests``."""
    requests: Any = result.get("inputRequests") or {}
    if not isinstance(requests, dict):
        raise RemoteProtocolError("inputRequests must be an object")
    responses: dict[str, Any] = {}
    for key, entry in cast(dict[str, Any], requests).items():
        item = cast(dict[str, Any], entry) if isinstance(entry, dict) else {}
        if not isinstance(item.get("method"), str):
            raise RemoteProtocolError(f"inputRequests[{key!r}] is malformed")
        responses[key] = await _answer(answers, key, item, gone)
    retry = {
        k: v for k, v in params.items() if k not in ("inputResponses", "requestState")
    }
    retry["inputResponses"] = responses
    if "requestState" in result:
        retry["requestState"] = result["requestState"]
    return retry


async def _answer(
    answers: Answers, key: str, item: dict[str, Any], gone: trio.Event
) -> Any:
    answered: list[Any] = []
    failure: Exception | None = None
    async with trio.open_nursery() as nursery:

        async def abandon_if_gone() -> None:
            await gone.wait()
            nursery.cancel_scope.cancel()

        nursery.start_soon(abandon_if_gone)
        try:
            # The entry's key names the question for scripted answers when the
            # server gives it no name of its own (a server not built on yieldmcp).
            answered.append(
                await answers.answer(
                    item["method"], item.get("params") or {}, MODERN, key=key
                )
            )
        except RequestError as exc:
            cause = exc.__cause__
            failure = cause if isinstance(cause, ProviderError) else exc
        except Exception as exc:
            failure = exc  # raised as itself, not in the nursery's group
        nursery.cancel_scope.cancel()
    if failure is not None:
        raise failure
    if not answered:
        raise BrokenSessionError("the connection ended while its question was open")
    return answered[0]

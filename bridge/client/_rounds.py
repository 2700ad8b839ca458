"""The client's half of a 2026-07-28 round: answer ``inputRequests``, retry.

A call that returns ``input_required`` is answered here, one entry at a time,
and retried with the answers and the ``requestState`` echoed. Two things can
go wrong while a person or a model answers:

* the server goes away (a stdio server that exits): the answer can never be
  delivered, so the wait is abandoned at once, as ``BrokenSessionError``;
* answering fails here (the model cannot be reached): the cause is raised as
  itself (a ``ProviderError``), not as the JSON-RPC error a 2025-11-25 server
  would have been sent.

A yieldmcp server names, in each response, the models of its own that
answered samples while it made it (``_meta["io.yieldmcp/server-models"]``):
a sample answered in an early round is named in that round's
``input_required``. :func:`gather_server_models` collects the names over
the rounds, and :func:`with_server_models` puts them all in the final
result, so its ``meta`` names every model of the server that answered.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import trio

from runtime.codec import naming_server_models, server_models, with_model_names
from runtime.errors import (
    BrokenSessionError,
    ProviderError,
    ProviderTimeout,
    RemoteProtocolError,
    RequestError,
)

from .answers import MODERN, Answers

__all__ = ["gather_server_models", "retry_params", "with_server_models"]


def gather_server_models(named: tuple[str, ...], result: Any) -> tuple[str, ...]:
    """``named`` and, after them, the server's models ``result`` names."""
    meta: Any = (
        cast(dict[str, Any], result).get("_meta") if isinstance(result, dict) else None
    )
    return with_model_names(
        named,
        server_models(cast(dict[str, Any], meta) if isinstance(meta, dict) else None),
    )


def with_server_models(result: Any, named: tuple[str, ...]) -> Any:
    """The final ``result`` naming all of ``named`` (as it is without any)."""
    if isinstance(result, dict):
        return naming_server_models(cast(dict[str, Any], result), named)
    return result


async def retry_params(
    answers: Answers,
    params: Mapping[str, Any],
    result: Mapping[str, Any],
    *,
    gone: trio.Event,
) -> dict[str, Any]:
    """The retry of ``params`` answering ``result``'s ``inputRequests``.

    Raises:
        RemoteProtocolError: a malformed round (an entry with no method, or
            whose params are not an object), or one asking more than
            ``max_questions`` (each may cost a model call or the user's time:
            none is answered): ``answers.max_questions``, named as the
            caller sets it. Every entry is checked before any is answered.
    """
    requests: Any = result.get("inputRequests") or {}
    if not isinstance(requests, dict):
        raise RemoteProtocolError("inputRequests must be an object")
    asked = len(cast(dict[str, Any], requests))
    if asked > answers.max_questions:
        raise RemoteProtocolError(
            f"the server asked {asked} questions in one round; the client "
            f"answers at most {answers.max_questions} (--max-questions, or "
            f"connect(max_questions=))"
        )
    asking = [
        _question(key, entry) for key, entry in cast(dict[str, Any], requests).items()
    ]
    responses: dict[str, Any] = {}
    for key, method, asked_params in asking:
        responses[key] = await _answer(answers, key, method, asked_params, gone)
    retry = {
        k: v for k, v in params.items() if k not in ("inputResponses", "requestState")
    }
    retry["inputResponses"] = responses
    if "requestState" in result:
        retry["requestState"] = result["requestState"]
    return retry


def _question(key: str, entry: Any) -> tuple[str, str, dict[str, Any]]:
    """An ``inputRequests`` entry's key, method and params (none: ``{}``),
    checked as a JSON-RPC request's are.

    Raises:
        RemoteProtocolError: it is not an object with a method, or its
            params are not an object.
    """
    item = cast(dict[str, Any], entry) if isinstance(entry, dict) else {}
    method: Any = item.get("method")
    if not isinstance(method, str):
        raise RemoteProtocolError(
            f"inputRequests[{key!r}] is malformed: it names no method"
        )
    params: Any = item.get("params")
    if params is None:
        return key, method, {}
    if not isinstance(params, dict):
        raise RemoteProtocolError(
            f"inputRequests[{key!r}] is malformed: params must be an object"
        )
    return key, method, cast(dict[str, Any], params)


async def _answer(
    answers: Answers,
    key: str,
    method: str,
    params: dict[str, Any],
    gone: trio.Event,
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
            answered.append(await answers.answer(method, params, MODERN, key=key))
        except RequestError as exc:
            cause = exc.__cause__
            failure = (
                cause if isinstance(cause, ProviderError | ProviderTimeout) else exc
            )
        except Exception as exc:
            failure = exc  # raised as itself, not in the nursery's group
        nursery.cancel_scope.cancel()
    if failure is not None:
        raise failure
    if not answered:
        raise BrokenSessionError("the connection ended while its question was open")
    return answered[0]

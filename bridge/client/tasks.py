"""The client's half of the tasks extension (2026-07-28, SEP-2663): follow a task.

A call made with ``task=True`` declares ``io.modelcontextprotocol/tasks`` in
that request's capabilities (:func:`with_tasks`); a server that makes a task
answers ``resultType: "task"``, and :func:`follow` takes it from there:

* it polls ``tasks/get`` every ``pollIntervalMs`` (kept between 50 ms and
  5 s), telling ``on_status`` each new status or ``statusMessage``;
* at ``input_required`` it answers the ``inputRequests`` with the same
  answerers a round uses (:func:`~bridge.client._rounds.retry_params`) and
  delivers them with ``tasks/update``;
* ``completed`` gives the inlined result; ``failed`` raises
  :class:`~runtime.errors.PeerError` with the task's error; ``cancelled``
  raises :class:`~runtime.errors.TaskCancelled`;
* cancelling the caller (Ctrl-C) sends ``tasks/cancel`` first (bounded, so a
  server that is gone does not hold the exit up).
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, cast

import httpx
import trio

from runtime.errors import (
    PeerError,
    RemoteProtocolError,
    TaskCancelled,
    YieldMCPError,
)

from ._rounds import retry_params
from .answers import Answers

__all__ = ["TASKS_EXTENSION", "StatusCallback", "follow", "with_tasks"]

TASKS_EXTENSION: Final = "io.modelcontextprotocol/tasks"
MIN_POLL: Final = 0.05
MAX_POLL: Final = 5.0
CANCEL_TIMEOUT: Final = 5.0

StatusCallback = Callable[[str, "str | None"], "Awaitable[None] | None"]
"""Told ``(status, statusMessage)`` whenever either changes."""

Request = Callable[[str, Mapping[str, Any]], Awaitable[Any]]
"""Sends a task method with its params; returns the result."""


def with_tasks(capabilities: Mapping[str, Any]) -> dict[str, Any]:
    """``capabilities`` declaring the tasks extension too."""
    extensions: Any = capabilities.get("extensions")
    known = cast("dict[str, Any]", extensions) if isinstance(extensions, dict) else {}
    return {**capabilities, "extensions": {**known, TASKS_EXTENSION: {}}}


async def follow(
    request: Request,
    answers: Answers,
    created: Mapping[str, Any],
    *,
    gone: trio.Event,
    on_status: StatusCallback | None = None,
) -> dict[str, Any]:
    """The result of the task ``created`` describes (see the module doc).

    Raises:
        PeerError: the task failed (its error), or a task method was refused.
        TaskCancelled: the task was cancelled (by someone else).
        RemoteProtocolError: the server's answers are malformed.
    """
    task_id: Any = created.get("taskId")
    if not isinstance(task_id, str):
        raise RemoteProtocolError("a CreateTaskResult must carry a string taskId")
    try:
        return await _poll(request, answers, task_id, created, gone, on_status)
    except trio.Cancelled:
        # gone, or refused: the task ends by its TTL then
        with (
            trio.CancelScope(shield=True),
            trio.move_on_after(CANCEL_TIMEOUT),
            contextlib.suppress(
                YieldMCPError, OSError, httpx.HTTPError, trio.BrokenResourceError
            ),
        ):
            # Best effort: a server that is gone or refuses lets the task end
            # by its TTL.
            await request("tasks/cancel", {"taskId": task_id})
        raise


async def _poll(
    request: Request,
    answers: Answers,
    task_id: str,
    task: Mapping[str, Any],
    gone: trio.Event,
    on_status: StatusCallback | None,
) -> dict[str, Any]:
    shown: tuple[Any, Any] | None = None
    while True:
        status: Any = task.get("status")
        now = (status, task.get("statusMessage"))
        if now != shown and on_status is not None:
            told = on_status(str(status), _text(now[1]))
            if inspect.isawaitable(told):
                await told
        shown = now
        if status == "completed":
            return _result(task)
        if status == "failed":
            raise _failure(task)
        if status == "cancelled":
            raise TaskCancelled(f"task {task_id} was cancelled")
        if status == "input_required" and task.get("inputRequests"):
            answered = await retry_params(answers, {}, task, gone=gone)
            responses = answered["inputResponses"]
            await request(
                "tasks/update", {"taskId": task_id, "inputResponses": responses}
            )
        else:
            await trio.sleep(_interval(task))
        task = _task(await request("tasks/get", {"taskId": task_id}))


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _task(value: Any) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise RemoteProtocolError("tasks/get must answer with an object")
    return cast("dict[str, Any]", value)


def _interval(task: Mapping[str, Any]) -> float:
    poll: Any = task.get("pollIntervalMs")
    seconds = poll / 1000 if isinstance(poll, int | float) and poll > 0 else 0.5
    return min(max(seconds, MIN_POLL), MAX_POLL)


def _result(task: Mapping[str, Any]) -> dict[str, Any]:
    result: Any = task.get("result")
    if not isinstance(result, dict):
        raise RemoteProtocolError("a completed task must carry its result")
    return cast("dict[str, Any]", result)


def _failure(task: Mapping[str, Any]) -> PeerError:
    error: Any = task.get("error")
    if not isinstance(error, dict):
        return PeerError(-32603, "the task failed without an error")
    found = cast("dict[str, Any]", error)
    code: Any = found.get("code")
    message: Any = found.get("message")
    return PeerError(
        code if isinstance(code, int) else -32603,
        message if isinstance(message, str) else "the task failed",
        found.get("data"),
    )

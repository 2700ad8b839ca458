"""The client's half of the tasks extension (2026-07-28, SEP-2663): follow a task.

A call made with ``task=True`` declares ``io.modelcontextprotocol/tasks`` in
that request's capabilities (:func:`with_tasks`); a server that makes a task
answers ``resultType: "task"``, and :func:`follow` takes it from there:

* it polls ``tasks/get`` every ``pollIntervalMs`` (kept between 50 ms and
  5 s), telling ``on_status`` each new status or ``statusMessage``;
* at ``input_required`` it answers the ``inputRequests`` with the same
  answerers a round uses (:func:`~bridge.client._rounds.retry_params`) and
  delivers them with ``tasks/update``; questions asked again after they
  were answered are answered again after the poll interval, not at once;
* ``completed`` gives the inlined result; ``failed`` raises
  :class:`~runtime.errors.PeerError` with the task's error; ``cancelled``
  raises :class:`~runtime.errors.TaskCancelled`;
* cancelling the caller (Ctrl-C) sends ``tasks/cancel`` first (bounded, so a
  server that is gone does not hold the exit up), unless the caller only
  follows a task it came back to (``cancel_on_exit=False``);
* a server that cannot be reached (it restarts, the connection dropped) is
  asked again, backing off from 0.1 s to 2 s, for as long as the task may
  live: its ``ttlMs`` since it was last read (``on_unreachable`` is told
  once each time it becomes unreachable). A task without a ``ttlMs``, or a
  connection that has ended for good (a spawned server that exited), is not
  asked again;
* a server that answers ``-32603`` (its store is away a while: the task goes
  on where the store is) is asked again the same way, for up to
  ``internal_patience`` seconds in a row (:data:`INTERNAL_PATIENCE` by
  default; ``Client(internal_patience=)``, ``yieldmcp call
  --internal-patience``), and then the error is raised.

:func:`follow_id` follows a task by its id alone (one this client did not
start: ``yieldmcp tasks wait``), and :func:`task_info` reads a ``tasks/get``
result as a typed :class:`TaskInfo`.
"""

from __future__ import annotations

import contextlib
import inspect
import math
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, cast, final

import attrs
import httpx
import trio

from bridge.jsonrpc.messages import INTERNAL_ERROR
from decoders import mcp as mcp_decode
from runtime.errors import (
    BrokenSessionError,
    PeerError,
    RemoteProtocolError,
    TaskCancelled,
    YieldMCPError,
)

from ._rounds import retry_params
from .answers import Answers

__all__ = [
    "TASKS_EXTENSION",
    "ENDED",
    "INTERNAL_PATIENCE",
    "MAX_ROUNDS",
    "StatusCallback",
    "TaskInfo",
    "UnreachableCallback",
    "follow",
    "follow_id",
    "task_info",
    "with_tasks",
]

TASKS_EXTENSION: Final = "io.modelcontextprotocol/tasks"
MIN_POLL: Final = 0.05
MAX_POLL: Final = 5.0
MAX_ROUNDS: Final = 100
"""Rounds of questions answered for one call or task (``Client(max_rounds=)``)."""
CANCEL_TIMEOUT: Final = 5.0
FIRST_BACKOFF: Final = 0.1
MAX_BACKOFF: Final = 2.0
INTERNAL_PATIENCE: Final = 60.0
"""Seconds in a row a followed task's server may answer ``-32603`` (an
internal error: its store away, say) before the client gives up, by default
(``Client(internal_patience=)``, ``yieldmcp call --internal-patience``)."""
ENDED: Final = frozenset({"completed", "failed", "cancelled"})
"""The statuses a task never leaves."""

StatusCallback = Callable[[str, "str | None"], "Awaitable[None] | None"]
"""Told ``(status, statusMessage)`` whenever either changes."""

UnreachableCallback = Callable[[str, BrokenSessionError], "Awaitable[None] | None"]
"""Told ``(taskId, error)`` when the server cannot be reached, once for each
outage (it is asked again, backing off)."""

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
    on_unreachable: UnreachableCallback | None = None,
    cancel_on_exit: bool = True,
    max_rounds: int = MAX_ROUNDS,
    internal_patience: float = INTERNAL_PATIENCE,
) -> dict[str, Any]:
    """The result of the task ``created`` describes (see the module doc).
    At most ``max_rounds`` rounds of its questions are answered, as for a
    call: each may be model calls the user pays for. A server answering
    ``-32603`` is asked again for ``internal_patience`` seconds in a row
    (0: not at all).

    Raises:
        PeerError: the task failed (its error), or a task method was refused
            (``-32602``: the server does not know the task; ``-32603`` for
            longer than ``internal_patience``).
        TaskCancelled: the task was cancelled (by someone else).
        RemoteProtocolError: the server's answers are malformed, or the
            task asked more than ``max_rounds`` rounds.
        BrokenSessionError: the server could not be reached for the task's
            TTL, or the connection ended for good.
    """
    task_id: Any = created.get("taskId")
    if not isinstance(task_id, str):
        raise RemoteProtocolError("a CreateTaskResult must carry a string taskId")
    poll = _Poll(
        request, answers, task_id, gone, on_status, on_unreachable,
        max_rounds, internal_patience,
    )  # fmt: skip
    try:
        return await poll.run(created)
    except trio.Cancelled:
        if not cancel_on_exit:
            raise
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


async def follow_id(
    request: Request,
    answers: Answers,
    task_id: str,
    *,
    gone: trio.Event,
    on_status: StatusCallback | None = None,
    on_unreachable: UnreachableCallback | None = None,
    cancel_on_exit: bool = False,
    max_rounds: int = MAX_ROUNDS,
    internal_patience: float = INTERNAL_PATIENCE,
) -> dict[str, Any]:
    """The result of task ``task_id``, read first with ``tasks/get``, then
    followed as :func:`follow` does (the same errors). Leaving early leaves
    the task running unless ``cancel_on_exit``."""
    first = _task(await request("tasks/get", {"taskId": task_id}))
    return await follow(
        request, answers, {**first, "taskId": task_id}, gone=gone,
        on_status=on_status, on_unreachable=on_unreachable,
        cancel_on_exit=cancel_on_exit, max_rounds=max_rounds,
        internal_patience=internal_patience,
    )  # fmt: skip


@final
class _Poll:
    """Following one task: polling, answering, and asking again while the
    server cannot be reached."""

    def __init__(
        self,
        request: Request,
        answers: Answers,
        task_id: str,
        gone: trio.Event,
        on_status: StatusCallback | None,
        on_unreachable: UnreachableCallback | None,
        max_rounds: int,
        internal_patience: float = INTERNAL_PATIENCE,
    ) -> None:
        self.request = request
        self.answers = answers
        self.task_id = task_id
        self.gone = gone
        self.on_status = on_status
        self.on_unreachable = on_unreachable
        self.patience = 0.0  # seconds the task may live unseen: its ttlMs
        self.answered: set[str] = set()  # the last round's question keys
        self.rounds = 0  # rounds of questions answered
        self.max_rounds = max_rounds
        self.internal_patience = internal_patience

    async def run(self, task: Mapping[str, Any]) -> dict[str, Any]:
        shown: tuple[Any, Any] | None = None
        while True:
            ttl = _seconds(task.get("ttlMs"))
            if ttl is not None:
                self.patience = ttl
            status: Any = task.get("status")
            now = (status, task.get("statusMessage"))
            if now != shown and self.on_status is not None:
                await _told(self.on_status(str(status), _text(now[1])))
            shown = now
            if status == "completed":
                return _result(task)
            if status == "failed":
                raise _failure(task)
            if status == "cancelled":
                raise TaskCancelled(f"task {self.task_id} was cancelled")
            if status == "input_required" and task.get("inputRequests"):
                update = {
                    "taskId": self.task_id,
                    "inputResponses": await self.answer(task),
                }
                await self.reaching("tasks/update", update)
            else:
                await trio.sleep(_interval(task))
            task = _task(await self.reaching("tasks/get", {"taskId": self.task_id}))

    async def answer(self, task: Mapping[str, Any]) -> dict[str, Any]:
        """The responses to ``task``'s ``inputRequests``. Questions asked
        again after they were answered (a yieldmcp server asks a round again
        when an answer was not valid; another server may not have taken the
        update yet, or lie) are answered again only after the poll interval:
        never a busy loop of asking."""
        requests: Any = task.get("inputRequests")
        if not isinstance(requests, dict):
            raise RemoteProtocolError("inputRequests must be an object")
        asked = cast("dict[str, Any]", requests)
        if self.rounds >= self.max_rounds:
            raise RemoteProtocolError(
                f"task {self.task_id} still needed input after {self.max_rounds} "
                f"rounds (the client's max_rounds)"
            )
        self.rounds += 1
        if self.answered.issuperset(asked):
            await trio.sleep(_interval(task))
        self.answered = set(asked)  # one round's keys: not every round's
        answered = await retry_params(self.answers, {}, task, gone=self.gone)
        return answered["inputResponses"]

    async def reaching(self, method: str, params: Mapping[str, Any]) -> Any:
        """``method``'s result, asked again while the server cannot be
        reached, for as long as the task may live (its TTL). Sending
        ``tasks/update`` twice is harmless: answered keys are ignored."""
        give_up = trio.current_time() + self.patience
        internal_until = trio.current_time() + self.internal_patience
        pause = FIRST_BACKOFF
        while True:
            try:
                return await self.request(method, params)
            except BrokenSessionError as exc:
                if self.gone.is_set() or trio.current_time() + pause > give_up:
                    raise
                if self.on_unreachable is not None and pause == FIRST_BACKOFF:
                    await _told(self.on_unreachable(self.task_id, exc))  # once
            except PeerError as exc:
                # The server is there but cannot answer now (a store outage:
                # the task itself goes on): asked again, for a while.
                if exc.code != INTERNAL_ERROR or (
                    trio.current_time() + pause > internal_until
                ):
                    raise
            await trio.sleep(pause)
            pause = min(pause * 2, MAX_BACKOFF)


async def _told(value: Awaitable[None] | None) -> None:
    if inspect.isawaitable(value):
        await value


@final
@attrs.frozen(kw_only=True, eq=False)
class TaskInfo:
    """A task as ``tasks/get`` shows it (:func:`task_info`).

    Attributes:
        task_id: the task's id.
        status: ``working``, ``input_required``, ``completed``, ``failed``
            or ``cancelled``.
        status_message: what the server says of it, if anything.
        created_at, last_updated_at: ISO 8601 times, as the server sent them.
        ttl_ms: how long the server keeps it after its last change.
        poll_interval_ms: how often the server asks to be polled.
        questions: the keys of the questions it waits on (``input_required``),
            as the server keys its ``inputRequests``.
        result: its result once ``completed`` (``is_error`` for a tool error).
        error: its error once ``failed``.
        wire: the ``tasks/get`` result exactly as the server sent it.
    """

    task_id: str
    status: str
    status_message: str | None = None
    created_at: str | None = None
    last_updated_at: str | None = None
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None
    questions: tuple[str, ...] = ()
    result: mcp_decode.ToolCallResult | None = None
    error: PeerError | None = None
    wire: Mapping[str, Any] = attrs.field(factory=dict[str, Any])

    @property
    def ended(self) -> bool:
        """Whether the task has ended (completed, failed or cancelled)."""
        return self.status in ENDED


def task_info(task_id: str, value: Any) -> TaskInfo:
    """A ``tasks/get`` result read as a :class:`TaskInfo`.

    Raises:
        RemoteProtocolError: it is malformed.
    """
    task = _task(value)
    status: Any = task.get("status")
    if not isinstance(status, str):
        raise RemoteProtocolError("a task must carry a string status")
    requests: Any = task.get("inputRequests")
    return TaskInfo(
        task_id=task_id,
        status=status,
        status_message=_text(task.get("statusMessage")),
        created_at=_text(task.get("createdAt")),
        last_updated_at=_text(task.get("lastUpdatedAt")),
        ttl_ms=_whole(task.get("ttlMs")),
        poll_interval_ms=_whole(task.get("pollIntervalMs")),
        questions=tuple(cast("dict[str, Any]", requests))
        if isinstance(requests, dict)
        else (),
        result=mcp_decode.call_tool_result(_result(task))
        if status == "completed"
        else None,
        error=_failure(task) if status == "failed" else None,
        wire=dict(task),
    )


def _whole(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _task(value: Any) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise RemoteProtocolError("tasks/get must answer with an object")
    return cast("dict[str, Any]", value)


def _seconds(milliseconds: Any) -> float | None:
    """A server's positive count of milliseconds as seconds, else None.

    The server chooses the number: an integer no float holds is infinite
    here (dividing it would raise ``OverflowError``), and NaN, zero, a
    negative or a non-number is none at all.
    """
    if isinstance(milliseconds, bool) or not isinstance(milliseconds, int | float):
        return None
    try:
        seconds = milliseconds / 1000
    except OverflowError:
        seconds = math.inf
    return seconds if seconds > 0 else None  # NaN > 0 is False


def _interval(task: Mapping[str, Any]) -> float:
    seconds = _seconds(task.get("pollIntervalMs"))
    return min(max(seconds or 0.5, MIN_POLL), MAX_POLL)


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

"""The tasks extension's requests: task creation, ``tasks/get``, ``update``, ``cancel``.

:func:`respond` is :func:`bridge.server.modern.respond` with the requests the
extension owns answered here (:func:`owns` says which, without I/O):

* ``tools/call`` of a tool with ``task="optional"`` or ``"required"`` from a
  client that declares ``io.modelcontextprotocol/tasks`` in its capabilities
  (per request, in ``_meta``) makes a task: stored (``put`` with
  ``expect=0``) before the ``CreateTaskResult`` (``resultType: "task"``) is
  sent, then run in the background (:mod:`.runner`). A tool with
  ``task_from="step"`` first runs as ordinary rounds in the request, so its
  questions are asked as ``input_required``; the round that reaches its first
  step makes the task instead, seeded with that round's journal and answers.
  Without the extension, an ``optional`` tool runs as an ordinary call and a
  ``required`` one is refused with ``-32021``.
* ``tasks/get`` returns the task (its result or error once terminal, its
  ``inputRequests`` while it waits); ``tasks/update`` keeps the answers in the
  task before acknowledging them; ``tasks/cancel`` is acknowledged, and
  idempotent (an ended task stays as it ended). An unknown task is ``-32602``;
  the three need the extension (``-32021``).

Errors are RequestErrors, mapped to JSON-RPC by the one mapping
(:mod:`bridge.jsonrpc.errors`).
"""

from __future__ import annotations

import functools
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, cast

from bridge.durable import StoreConflict
from bridge.durable.rounds import RoundBecameTask, RoundHold, RoundUsed
from bridge.durable.tasks import TaskDoc
from bridge.jsonrpc.messages import INVALID_PARAMS, Request
from bridge.server import modern as _modern
from bridge.server.auth.binding import principal_binding
from bridge.server.calls import rounds as _rounds
from bridge.server.limits import busy
from bridge.server.round_state import parse_responses
from bridge.server.state_token import used_state
from runtime.errors import InvalidArguments, RequestError
from runtime.tools import Tool

from . import document as _doc
from .runner import tasks_of
from .service import Tasks

if TYPE_CHECKING:
    from bridge.server.offer import Offer
    from runtime.principal import Principal

__all__ = ["TASKS_EXTENSION", "owns", "respond"]

TASKS_EXTENSION: Final = "io.modelcontextprotocol/tasks"
_METHODS: Final = frozenset({"tasks/get", "tasks/update", "tasks/cancel"})
_PURPOSE: Final = "tools/call"

Notify = Callable[[str, dict[str, Any]], Awaitable[None]]


def owns(server: Offer, request: Request) -> bool:
    """Whether ``request`` may be the extension's to answer (no I/O)."""
    if request.method in _METHODS:
        return True
    if request.method != "tools/call":
        return False
    name: Any = (request.params or {}).get("name")
    tool = server.tools.get(name) if isinstance(name, str) else None
    return tool is not None and tool.task != "forbidden"


async def respond(
    server: Offer,
    request: Request,
    notify: Notify,
    *,
    principal: Principal | None = None,
) -> dict[str, Any]:
    """The result of a modern ``request``, the extension's answered here."""
    if owns(server, request):
        result = await _answer(server, request, notify, principal)
        if result is not None:
            meta = result.setdefault("_meta", {})
            meta[_modern.SERVER_INFO] = server.server_info()
            return result
    return await _modern.respond(server, request, notify, principal=principal)


def missing_extension() -> RequestError:
    """The ``-32021`` of a client without the extension."""
    return RequestError(
        _modern.MISSING_CLIENT_CAPABILITY,
        f"this needs the {TASKS_EXTENSION} extension: declare it in the client's "
        f"capabilities (extensions)",
        {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}},
    )


def declares_tasks(capabilities: Mapping[str, Any]) -> bool:
    extensions: Any = capabilities.get("extensions")
    return isinstance(extensions, dict) and TASKS_EXTENSION in extensions


async def _answer(
    server: Offer, request: Request, notify: Notify, principal: Principal | None
) -> dict[str, Any] | None:
    _modern.check_envelope(request)
    params = request.params or {}
    capabilities = cast("dict[str, Any]", params["_meta"][_modern.CLIENT_CAPABILITIES])
    if request.method in _METHODS:
        if not declares_tasks(capabilities):
            raise missing_extension()
        return await _task_method(server, request.method, params, principal)
    tool = server.tools[params["name"]]
    if not declares_tasks(capabilities):
        if tool.task == "required":
            raise missing_extension()
        return None  # an ordinary call
    try:
        tool.check_arguments(_arguments(params))
    except InvalidArguments:
        return None  # answered as an ordinary call: a tool error
    if tool.task_from == "step":
        return await _rounds_then_task(server, request, tool, notify, principal)
    return await _create(server, tool, params, principal)


def _arguments(params: Mapping[str, Any]) -> dict[str, Any]:
    raw: Any = params.get("arguments")
    return cast("dict[str, Any]", raw) if isinstance(raw, dict) else {}


async def _rounds_then_task(
    server: Offer,
    request: Request,
    tool: Tool[Any, Any],
    notify: Notify,
    principal: Principal | None,
) -> dict[str, Any]:
    """Rounds in the request until the call reaches a step; a task from there.

    The rounds keep the journal in the tasks' store (the server's, or its
    memory store), so their states are one-time on every server: the round
    that reaches the step uses its state up as it makes the task, and a
    replay of that state makes no second task. The same request again (same
    state, caller and answers: its reply was lost) is told of the task it
    made; another is refused (``request_state_used``). So is a call that
    ends in its rounds: the same request again gets its kept result.
    """
    tasks = tasks_of(server)
    params = request.params or {}
    scope = _modern.envelope(request)
    scope.principal = principal
    if principal is not None:
        scope.caller = f"principal:{principal.identity}"
    arguments = tool.check_arguments(_arguments(params))
    result = functools.partial(_modern.tool_result, server, tool, scope)
    round_ = _rounds.begin(
        server, tool, arguments, params, purpose=_PURPOSE, scope=scope,
        store=tasks.store, notify=notify, until_step=True, encode=result,
    )  # fmt: skip
    try:
        got: Any = await round_.rest()
    except RoundBecameTask as made:
        return await _made_before(tasks, made.task_id, principal)
    except Exception as exc:
        got = exc
    if not isinstance(got, _rounds.ReachedStep):
        return _modern.finished(server, _modern.tool_result(server, tool, scope, got))
    hold = round_.hold
    assert isinstance(hold, RoundHold)
    await _check_room(server, tasks, principal)
    ttl = server.limits.task_ttl
    try:
        task_id = await hold.to_task(ttl)  # the state is used up here, once
    except RoundUsed:
        raise used_state() from None
    return await _create(server, tool, params, principal, task_id)


async def _made_before(
    tasks: Tasks, task_id: str, principal: Principal | None
) -> dict[str, Any]:
    """The ``CreateTaskResult`` of the task a request made before (its reply
    was lost), as the task is now; ``request_state_used`` if it is gone."""
    doc = await tasks.load(task_id)
    if doc is None or doc.principal != principal_binding(principal):
        raise used_state()
    return _doc.created(task_id, doc)


async def _check_room(server: Offer, tasks: Tasks, principal: Principal | None) -> None:
    limits = server.limits
    if tasks.full:
        raise busy("too many tasks running", limits.max_tasks)
    caller = principal_binding(principal)
    if tasks.full_for(caller):
        await tasks.forget_ended(caller)
    if tasks.full_for(caller):
        whose = "this caller" if principal is not None else "all callers together"
        raise busy(
            f"too many unfinished tasks for {whose}", limits.max_tasks_per_caller
        )


async def _create(
    server: Offer,
    tool: Tool[Any, Any],
    params: Mapping[str, Any],
    principal: Principal | None,
    task_id: str | None = None,
) -> dict[str, Any]:
    """Make the task (``task_id``: the call's, whose journal it goes on from)."""
    tasks = tasks_of(server)
    limits = server.limits
    await _check_room(server, tasks, principal)
    caller = principal_binding(principal)
    doc = TaskDoc.new(
        tool=tool.name,
        arguments=_arguments(params),
        capabilities=params["_meta"][_modern.CLIENT_CAPABILITIES],
        ttl_ms=max(1, round(limits.task_ttl * 1000)),
        poll_ms=max(1, round(limits.task_poll_interval * 1000)),
        principal=caller,
        # ctx.principal in the task:
        caller=None if principal is None else _doc.caller_json(principal),
        version=tool.version,
        now=time.time(),
    )
    task_id = task_id or uuid.uuid4().hex
    try:
        await tasks.create(task_id, doc)  # durable before the reply
    except StoreConflict:
        raise used_state() from None  # another retry made it first
    tasks.start(task_id, caller)
    return _doc.created(task_id, doc)


async def _task_method(
    server: Offer, method: str, params: Mapping[str, Any], principal: Principal | None
) -> dict[str, Any]:
    task_id: Any = params.get("taskId")
    if not isinstance(task_id, str) or not task_id:
        raise RequestError(INVALID_PARAMS, "taskId must be a non-empty string")
    tasks = tasks_of(server)
    doc = await tasks.load(task_id)
    if doc is None or doc.principal != principal_binding(principal):
        raise RequestError(INVALID_PARAMS, f"Unknown task: {task_id}")
    if method == "tasks/get":
        return _doc.detailed(task_id, doc)
    now = time.time()
    if method == "tasks/update":
        responses = parse_responses(params)
        changed = await tasks.change(task_id, lambda d: d.deliver(responses, now))
    else:
        changed = await tasks.change(task_id, lambda d: d.cancel(now))
    if changed is not None:
        tasks.wake(task_id)
        if method == "tasks/update" and not changed.parked:
            tasks.start(task_id, changed.principal)  # it was parked: go on
    return {"resultType": "complete"}

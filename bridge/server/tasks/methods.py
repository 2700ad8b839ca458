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

import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, cast

from bridge.jsonrpc.messages import INVALID_PARAMS, Request
from bridge.server import modern as _modern
from bridge.server.auth.binding import principal_binding
from bridge.server.call_records import CALLS, answer_record, notice_record
from bridge.server.limits import busy
from bridge.server.round_state import parse_responses
from bridge.server.round_steps import RunSteps, Wait, wait_on
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
    return await _create(server, tool, params, principal, {}, {})


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
    """Rounds in the request until the call reaches a step; a task from there."""
    # The journal travels in requestState until the task takes it over.
    steps = _modern.handle(server, request, principal, journal_in_state=True)
    sent: Any = None
    error: Exception | None = None
    try:
        while True:
            try:
                item = steps.send(sent) if error is None else steps.throw(error)
            except StopIteration as done:
                return done.value
            sent, error = None, None
            if isinstance(item, RunSteps):
                break  # not run here: the task runs it
            if isinstance(item, Wait):
                sent, error = await wait_on(item, server.step_limiter)
            else:
                await notify(*item)
    finally:
        steps.close()
    params = request.params or {}
    token: Any = params.get("requestState")
    if token is None:
        return await _create(server, tool, params, principal, {}, {})
    seed = server.sealer.open(token, purpose=_PURPOSE)
    return await _create(server, tool, params, principal, seed, parse_responses(params))


async def _create(
    server: Offer,
    tool: Tool[Any, Any],
    params: Mapping[str, Any],
    principal: Principal | None,
    seed: Mapping[str, Any],
    responses: Mapping[str, Any],
) -> dict[str, Any]:
    tasks = tasks_of(server)
    limits = server.limits
    if tasks.full:
        raise busy("too many tasks running", limits.max_tasks)
    caller = principal_binding(principal)
    if tasks.full_for(caller):
        raise busy(
            "too many tasks running for this caller", limits.max_tasks_per_caller
        )
    task_id = uuid.uuid4().hex
    doc = _doc.new_document(
        tool=tool.name,
        arguments=_arguments(params),
        capabilities=params["_meta"][_modern.CLIENT_CAPABILITIES],
        ttl_ms=max(1, round(limits.task_ttl * 1000)),
        poll_ms=max(1, round(limits.task_poll_interval * 1000)),
        principal=caller,
        now=time.time(),
    )
    if principal is not None:
        doc["caller"] = _doc.caller_json(principal)  # ctx.principal in the task
    if seed:
        asked = dict(seed.get("asked") or {})
        doc.update(
            asked=asked,
            deadlines=dict(seed.get("deadlines") or {}),
            # Only answers to what was asked: other keys would be stored and
            # written again with every change of the task, until its TTL.
            responses={k: v for k, v in responses.items() if k in asked},
        )
        await _seed_journal(tasks, task_id, seed.get("journal") or {}, doc)
    await tasks.create(task_id, doc)  # durable before the reply
    tasks.start(task_id, caller)
    return _doc.created(task_id, doc)


async def _seed_journal(
    tasks: Tasks, task_id: str, journal: Mapping[str, Any], doc: Mapping[str, Any]
) -> None:
    """The journal of the rounds before the task, as its call stream."""
    answers = cast("dict[str, list[Any]]", journal.get("answers") or {})
    records = [
        answer_record(key, e[0], e[1], e[2] if len(e) > 2 else None)
        for key, e in answers.items()
    ]
    records += [notice_record(key) for key in journal.get("notices") or ()]
    if records:
        await tasks.store.append(
            CALLS, task_id, records, expires_at=_doc.expires_at(doc)
        )


async def _task_method(
    server: Offer, method: str, params: Mapping[str, Any], principal: Principal | None
) -> dict[str, Any]:
    task_id: Any = params.get("taskId")
    if not isinstance(task_id, str) or not task_id:
        raise RequestError(INVALID_PARAMS, "taskId must be a non-empty string")
    tasks = tasks_of(server)
    doc = await tasks.load(task_id)
    if doc is None or doc.get("principal") != principal_binding(principal):
        raise RequestError(INVALID_PARAMS, f"Unknown task: {task_id}")
    if method == "tasks/get":
        if doc["status"] not in _doc.TERMINAL:
            tasks.start_janitor()  # a task left by a process that died resumes
        return _doc.detailed(task_id, doc)
    now = time.time()
    if method == "tasks/update":
        responses = parse_responses(params)
        changed = await tasks.change(task_id, lambda d: _doc.deliver(d, responses, now))
    else:
        changed = await tasks.change(task_id, lambda d: _doc.cancel(d, now))
    if changed is not None:
        tasks.wake(task_id)
    return {"resultType": "complete"}

"""Running a task: the 2026-07-28 rounds, replayed from the store.

A task runs as the rounds of a ``tools/call`` do (:func:`bridge.server.modern.handle`,
:mod:`bridge.server.rounds`), with the task's runner in the client's place:
each round starts from the journal in the task's call stream and the
questions the task last asked (sealed into a ``requestState`` for that round
only), is given the answers ``tasks/update`` delivered, and goes on until it
finishes or waits on questions again. So replay, pinning, keys and the mapping
of a tool's failures are the rounds' own; nothing here interprets effects.

Write-ahead: a step's result is appended to the call stream before the round
is sent it, so a step that finished is never run again after a crash (only one
in flight at the crash is); an answer is in the task document before
``tasks/update`` is acknowledged, and in the stream once a round used it.

Only the owner of the task's lease runs it (:func:`bridge.server.tasks.document.claim`);
the lease is renewed while it runs, and a cancel or a lost lease stops the
round (cooperatively: a sync step in a thread runs to its end, its result
dropped).

It does not decide when a task starts or is resumed (:mod:`.service`), nor
answer the task methods (:mod:`.methods`).
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

import trio

from bridge.jsonrpc.errors import error_data
from bridge.jsonrpc.messages import INVALID_PARAMS, Request
from bridge.server import modern as _modern
from bridge.server.auth.binding import principal_binding
from bridge.server.call_records import (
    CALLS,
    answer_record,
    journal_from_records,
    notice_record,
)
from bridge.server.round_state import arguments_digest
from bridge.server.round_steps import RunSteps, Wait, run_steps, wait_on
from bridge.server.state_token import binding
from bridge.stores import StoreError
from runtime.errors import RequestError
from runtime.lowlevel import Step
from runtime.principal import Principal

from . import document as _doc
from .service import Tasks

if TYPE_CHECKING:
    from bridge.server.offer import Offer

__all__ = ["run_task", "tasks_of"]

_OF: weakref.WeakKeyDictionary[Offer, Tasks] = weakref.WeakKeyDictionary()


def tasks_of(server: Offer) -> Tasks:
    """The :class:`~.service.Tasks` of ``server`` (made on first use; without
    a configured store, in a memory store of its own)."""
    tasks = _OF.get(server)
    if tasks is None or tasks.configured is not server.store:
        tasks = Tasks(server, server.store, run_task)
        _OF[server] = tasks
    return tasks


_PURPOSE = "tools/call"


async def run_task(tasks: Tasks, task_id: str) -> None:
    """Run the task to its end, or until it waits, is cancelled or another
    process takes it over."""
    claimed = await tasks.change(
        task_id, lambda d: _doc.claim(d, tasks.owner, tasks.lease)
    )
    if claimed is None:
        return  # ended, or another process runs it
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_keep_lease, tasks, task_id, nursery.cancel_scope)
        await _drive(tasks, task_id)
        nursery.cancel_scope.cancel()


async def _keep_lease(tasks: Tasks, task_id: str, run: trio.CancelScope) -> None:
    """Renew the lease every third of it; stop the run when the task is
    cancelled (here: at once; on another process: seen within a second) or
    the lease is lost."""
    renew_at = trio.current_time() + tasks.lease / 3
    look = 0.0
    while True:
        changed = tasks.changes(task_id)
        look = tasks.look(look)
        with trio.move_on_at(min(renew_at, trio.current_time() + look)):
            await changed.wait()
        doc = await tasks.load(task_id)
        if doc is None or doc["status"] == "cancelled":
            run.cancel()
            return
        if trio.current_time() >= renew_at:
            kept = await tasks.change(
                task_id, lambda d: _doc.claim(d, tasks.owner, tasks.lease)
            )
            if kept is None:
                run.cancel()
                return
            renew_at = trio.current_time() + tasks.lease / 3


async def _drive(tasks: Tasks, task_id: str) -> None:
    look = 0.0
    while True:
        changed = tasks.changes(task_id)
        doc = await tasks.load(task_id)
        if doc is None or doc["status"] in _doc.TERMINAL:
            return
        responses = _doc.take_responses(doc)
        if doc["status"] == "input_required" and not responses:
            # Waiting on the client: a tasks/update here wakes it; one on
            # another process is read at the next look.
            look = tasks.look(look)
            with trio.move_on_after(look):
                await changed.wait()
            continue
        look = 0.0
        try:
            await _round(tasks, task_id, doc, responses)
        except StoreError:
            raise  # the store's trouble: the task is resumed after its lease
        except Exception as exc:  # it cannot run here (its tool changed...)
            await _end(tasks, task_id, error=_error(exc))


async def _round(
    tasks: Tasks, task_id: str, doc: Mapping[str, Any], responses: dict[str, Any]
) -> None:
    """One round of the task: replay, run what it reaches, record the outcome."""
    server = tasks.server
    tool = server.tools.get(doc["tool"])
    if tool is None:
        missing = {"code": INVALID_PARAMS, "message": f"Unknown tool: {doc['tool']}"}
        await _end(tasks, task_id, error=missing)
        return
    records = await tasks.store.read(CALLS, task_id)
    journal = journal_from_records(records, task_id).to_json()
    written = _Written(journal, int(doc["ttlMs"]) / 1000)
    arguments = tool.check_arguments(doc["arguments"])
    principal = _doc.caller(doc)
    who = principal_binding(principal)
    bound = binding(_PURPOSE, tool.name, arguments_digest(arguments), who)
    state: dict[str, Any] = {k: v for k, v in bound.items() if v is not None}
    state.update(journal=journal, asked=doc["asked"], deadlines=doc["deadlines"])
    if tool.version is not None:
        state["version"] = tool.version
    params: dict[str, Any] = {
        "name": tool.name,
        "arguments": doc["arguments"],
        "requestState": server.sealer.seal(state, purpose=_PURPOSE),
        "inputResponses": responses,
        "_meta": {
            _modern.PROTOCOL_VERSION: _modern.MODERN_VERSIONS[0],
            _modern.CLIENT_CAPABILITIES: doc["capabilities"],
            "progressToken": task_id,  # progress becomes the statusMessage
        },
    }
    request = Request(f"task:{task_id}", "tools/call", params)
    try:
        result = await _replay(tasks, task_id, request, principal, written)
    except StoreError:
        raise
    except RequestError as exc:
        if not responses or exc.code != INVALID_PARAMS:
            await _end(tasks, task_id, error=_error(exc))
            return
        # An answer that is not valid (the client's fault, as a round's
        # -32602): dropped with the rest of its round, and asked again.
        why = f"an answer was refused: {exc.message}"
        await tasks.change(
            task_id, lambda d: _doc.refuse(d, responses, why, time.time())
        )
        return
    except Exception as exc:
        await _end(tasks, task_id, error=_error(exc))
        return
    if result.get("resultType") != "input_required":
        result = dict(result)
        result.pop("_meta", None)  # the server's info: the task is not a response
        await _end(tasks, task_id, result=result)
        return
    token: Any = result.get("requestState")
    sealed = server.sealer.open(token, purpose=_PURPOSE) if token else {}
    await written.catch_up(tasks, task_id, sealed.get("journal") or {})
    requests = cast("dict[str, Any]", result.get("inputRequests") or {})
    await tasks.change(
        task_id, lambda d: _doc.park(d, responses, requests, sealed, time.time())
    )


async def _replay(
    tasks: Tasks,
    task_id: str,
    request: Request,
    principal: Principal | None,
    written: _Written,
) -> dict[str, Any]:
    """Drive the round's steps (:func:`bridge.server.modern.handle`); each
    step's result is in the stream before the round goes on."""
    server = tasks.server
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
                sent = await run_steps(item, server.step_limiter)
                await written.steps(tasks, task_id, item, sent)
            elif isinstance(item, Wait):
                sent, error = await wait_on(item, server.step_limiter)
            else:
                await _progress(tasks, task_id, *item)
    finally:
        steps.close()


async def _progress(
    tasks: Tasks, task_id: str, method: str, params: Mapping[str, Any]
) -> None:
    """A task's notifications have no request to travel on: a progress
    message becomes its ``statusMessage``; the rest is dropped."""
    message: Any = params.get("message")
    if method == "notifications/progress" and isinstance(message, str):
        await tasks.change(
            task_id, lambda d: _doc.status_message(d, message, time.time())
        )


async def _end(
    tasks: Tasks,
    task_id: str,
    *,
    result: Mapping[str, Any] | None = None,
    error: Mapping[str, Any] | None = None,
) -> None:
    await tasks.change(
        task_id, lambda d: _doc.finish(d, result=result, error=error, now=time.time())
    )


class _Written:
    """What of the task's journal is in its stream, to append only the rest."""

    def __init__(self, journal: Mapping[str, Any], ttl: float) -> None:
        self.answers: dict[str, Any] = dict(journal.get("answers") or {})
        self.notices: set[str] = set(journal.get("notices") or ())
        self.ttl = ttl  # the stream lives as long as its task

    async def steps(
        self, tasks: Tasks, task_id: str, batch: RunSteps, replies: list[Any]
    ) -> None:
        records: list[dict[str, Any]] = []
        for (key, step, _idem, _left), reply in zip(batch.steps, replies, strict=True):
            if reply is None or isinstance(reply, BaseException):
                continue  # out of time, or cancelled: not a result to keep
            entry = _entry(step, reply)
            self.answers[key] = entry
            records.append(answer_record(key, *entry))
        await self._append(tasks, task_id, records)

    async def catch_up(
        self, tasks: Tasks, task_id: str, journal: Mapping[str, Any]
    ) -> None:
        records: list[dict[str, Any]] = []
        answers = cast("dict[str, list[Any]]", journal.get("answers") or {})
        for key, entry in answers.items():
            if self.answers.get(key) != entry:
                self.answers[key] = entry
                label = entry[2] if len(entry) > 2 else None
                records.append(answer_record(key, entry[0], entry[1], label))
        for key in journal.get("notices") or ():
            if key not in self.notices:
                self.notices.add(key)
                records.append(notice_record(key))
        await self._append(tasks, task_id, records)

    async def _append(
        self, tasks: Tasks, task_id: str, records: list[dict[str, Any]]
    ) -> None:
        if records:
            await tasks.store.append(
                CALLS, task_id, records, expires_at=time.time() + self.ttl
            )


def _error(exc: Exception) -> dict[str, Any]:
    """A failed task's ``error``: the JSON-RPC error of the one mapping."""
    error = error_data(exc)
    out: dict[str, Any] = {"code": error.code, "message": error.message}
    if error.data is not None:
        out["data"] = error.data
    return out


def _entry(step: Step, reply: Any) -> list[Any]:
    return [step.digest(), step.reply_to_json(reply), step.label()]

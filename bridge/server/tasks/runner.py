"""Running a task: the 2026-07-28 round driver, with the task in the client's seat.

A task runs as the rounds of a ``tools/call`` do (:mod:`bridge.server.calls.rounds`):
each round restores the call's machine from the task's journal (the call
stream ``("call", task_id)``), is given the answers ``tasks/update``
delivered (pinned to what the task last asked, as a round pins them to its
state), runs the steps it reaches, and goes on until it finishes or waits on
questions again; then its outcome is written to the task document. So replay,
pinning, keys and the mapping of a tool's failures are the rounds' own:
nothing here interprets effects. A task made under another version of its
tool runs only if the tool continues that version
(:func:`~bridge.server.versions.check_version`); else it fails with that
check's error.

Write-ahead (the task's hold, :class:`TaskHold`): what the machine records is
appended to the call stream before the round shows anything that follows it
(runs a step, sets a status message) and before the task is parked; an answer
is in the task document before ``tasks/update`` is acknowledged. So a step
that finished is never run again after a crash (only one in flight at the
crash is).

A round that ends with the task sleeping (``ctx.sleep``, nothing else to
do) parks it as a question does, with the time to wake it (``wake_at``):
the runner goes, its lease with it, and the service's alarm (or any
process's, after a restart too) starts a runner then
(:meth:`.service.Tasks.set_alarm`). The task's journal and document are
kept until ``ttlMs`` after it wakes, however long it sleeps.

Only the owner of the task's lease runs it
(:func:`bridge.server.tasks.document.claim`); the lease is renewed while it
runs, and a cancel or a lost lease stops the round (cooperatively: a sync
step in a thread runs to its end, its result dropped).

A server with its own model (``--model``) answers the samples of a round
its client cannot (``--model-always``: all of them) as a round's request
does (:func:`bridge.server.fallback.answer_requests`): before the task waits
on its client, in the same change of its document, so the client is never
shown them. The models that answered are kept in the document and named in
the task's result (``_meta["io.yieldmcp/server-models"]``).

It does not decide when a task starts or is resumed (:mod:`.service`), nor
answer the task methods (:mod:`.methods`).
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import trio

from bridge.durable import StoreError, StoreUnreadable
from bridge.durable.log import CallLog
from bridge.durable.tasks import TERMINAL, TaskDoc, TaskStatus
from bridge.jsonrpc.errors import error_data
from bridge.jsonrpc.messages import INTERNAL_ERROR, INVALID_PARAMS
from bridge.server import modern as _modern
from bridge.server.calls.rounds import Parked, Round
from bridge.server.fallback import answer_requests, round_capabilities
from bridge.server.questions import CallScope
from bridge.server.versions import check_version
from runtime.codec import naming_server_models
from runtime.errors import RequestError

from . import document as _doc
from .service import Tasks

if TYPE_CHECKING:
    from bridge.server.offer import Offer

__all__ = ["LeaseClock", "LeaseLost", "TaskHold", "run_task", "tasks_of"]

_ERA = "2026-07-28"
_UNREADABLE = "Internal error: the task's journal in the store cannot be read"

log = logging.getLogger("yieldmcp.tasks")


def tasks_of(server: Offer) -> Tasks:
    """The :class:`~.service.Tasks` of ``server`` (made on first use; without
    a configured store, in a memory store of its own)."""
    tasks: Tasks | None = server.tasks
    if tasks is None or tasks.configured is not server.store:
        tasks = server.tasks = Tasks(server, server.store, run_task)
    return tasks


async def run_task(tasks: Tasks, task_id: str) -> bool:
    """Run the task to its end, or until it waits on its client, is
    cancelled or another process takes it over; True if it waits (parked: no
    runner and no lease until an answer comes)."""
    lease = LeaseClock(tasks.lease)
    asked_at = trio.current_time()
    claimed = await tasks.change(
        task_id, lambda d: d.claim(tasks.owner, tasks.lease, time.time())
    )
    if claimed is None:
        return False  # ended, or another process runs it
    lease.held_from(asked_at)
    life = JournalLife(tasks.lease)
    parked = False
    async with trio.open_nursery() as nursery:
        nursery.start_soon(
            _keep_lease, tasks, task_id, nursery.cancel_scope, lease, life
        )
        # Paused past its lease (LeaseLost): another process may run it now.
        with contextlib.suppress(LeaseLost):
            parked = await _drive(tasks, task_id, lease, life)
        nursery.cancel_scope.cancel()
    return parked


class LeaseLost(Exception):
    """This process's lease on a task ran out before it could renew it."""


class LeaseClock:
    """Until when this process holds a task's lease, by its own clock.

    Renewal looks at the store every third of the lease, but a process
    paused past the lease (SIGSTOP, a suspended VM, a long swap) wakes up
    still running the task while another process has taken it on: it went
    on to write and to start the next step, which then ran twice. So the
    task's writes (:meth:`TaskHold.flush`, before each next step) first ask
    :meth:`check`, which counts from when the last successful claim was
    asked for.
    """

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.until = math.inf  # (until it is first claimed: a hold of its own)

    def held_from(self, asked_at: float) -> None:
        """A claim asked for at ``asked_at`` (trio's clock) succeeded."""
        self.until = asked_at + self.seconds

    def check(self) -> None:
        """Raise :class:`LeaseLost` once the lease may be another's."""
        if trio.current_time() >= self.until:
            raise LeaseLost


class JournalLife:
    """How long a task's journal must be kept: never less than its document.

    The document is kept ``ttl`` after the later of its last change and its
    lease, which is renewed while the task runs, so a running task is never
    swept. Its journal was kept ``ttl`` after its last write only: a step
    that outlasted the TTL had the journal swept under it, and the next
    round (or the process taking the task on after a kill) replayed without
    it and ran finished steps again. So every write keeps the journal a
    lease past now, and past the latest deadline it records (a sleep's, a
    branch's); and every change that moves the document's expiry on (a
    lease renewed, an answer) moves the journal's with it
    (:meth:`~bridge.durable.tasks.TaskStore.change`).
    """

    def __init__(self, lease: float) -> None:
        self.lease = lease
        self.ttl = 0.0  # the task's (ttlMs), from the same round
        self.horizon = 0.0  # the latest deadline recorded, epoch seconds

    def until(self, now: float) -> float:
        """When the journal may go, written at ``now``."""
        return max(now + self.lease, self.horizon) + self.ttl


async def _keep_lease(
    tasks: Tasks,
    task_id: str,
    run: trio.CancelScope,
    lease: LeaseClock,
    life: JournalLife,
) -> None:
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
        if doc is None or doc.status is TaskStatus.CANCELLED:
            run.cancel()
            return
        if trio.current_time() >= renew_at:
            asked_at = trio.current_time()
            kept = await tasks.change(
                task_id, lambda d: d.claim(tasks.owner, tasks.lease, time.time())
            )
            if kept is None:
                run.cancel()
                return
            lease.held_from(asked_at)
            renew_at = trio.current_time() + tasks.lease / 3


async def _drive(
    tasks: Tasks, task_id: str, lease: LeaseClock, life: JournalLife
) -> bool:
    while True:
        doc = await tasks.load(task_id)
        if doc is None or doc.status in TERMINAL:
            return False
        responses = dict(doc.responses)
        if doc.waits(time.time()):
            # Waiting on the client or the clock: the runner goes, and its
            # lease with it (a waiting task holds no slot and no task); the
            # tasks/update that answers, or the alarm at its wake-up time,
            # starts a runner, on whichever process it reaches.
            released = await tasks.change(
                task_id, lambda d: d.release(tasks.owner, time.time())
            )
            if released is not None:
                if released.wake_at is not None:
                    tasks.set_alarm(task_id, released.wake_at, released.principal)
                return True
            continue  # an answer came meanwhile, or it is time: go on
        try:
            await _round(tasks, task_id, doc, responses, lease, life)
        except StoreUnreadable:
            # A record no writer of ours stored: reading it again will not
            # help (it was tried again every second, for ever).
            log.warning("task %s: its journal cannot be read; it fails", task_id)
            unreadable = {"code": INTERNAL_ERROR, "message": _UNREADABLE}
            await _end(tasks, task_id, error=unreadable)
        except (StoreError, LeaseLost):
            raise  # the store's trouble: the task is resumed after its lease
        except Exception as exc:  # it cannot run here (its tool changed...)
            await _end(tasks, task_id, error=_error(exc))


async def _round(
    tasks: Tasks,
    task_id: str,
    doc: TaskDoc,
    responses: dict[str, Any],
    lease: LeaseClock | None = None,
    life: JournalLife | None = None,
) -> None:
    """One round of the task: replay, run what it reaches, record the outcome."""
    server = tasks.server
    tool = server.tools.get(doc.tool)
    if tool is None:
        missing = {"code": INVALID_PARAMS, "message": f"Unknown tool: {doc.tool}"}
        await _end(tasks, task_id, error=missing)
        return
    if doc.version is not None:  # None: stored before tasks kept a version
        check_version(tool, doc.version, made="task", again="call the tool again")
        if doc.version != tool.version:  # continued: it runs as this code now
            await tasks.change(task_id, lambda d: d.run_by(tool.version))
    log = CallLog(tasks.store, task_id, max_bytes=server.limits.max_journal_bytes)
    journal = await log.read()
    arguments = tool.check_arguments(doc.arguments)
    client = doc.capabilities
    sampler = server.sampler
    scope = CallScope(
        era=_ERA,
        request_id=f"task:{task_id}",
        # What the client cannot sample, the server's model answers.
        client_capabilities=client if sampler is None else round_capabilities(client),
        progress_token=task_id,  # progress becomes the statusMessage
        logging=False,
        principal=_doc.caller(doc),
    )
    if scope.principal is not None:
        scope.caller = f"principal:{scope.principal.identity}"

    async def progress(method: str, params: dict[str, Any]) -> None:
        await _progress(tasks, task_id, method, params)

    horizon = max(journal.deadlines().values(), default=0.0)
    hold = TaskHold(log, doc.ttl_ms / 1000, horizon, lease, life)
    round_ = Round(
        server,
        tool,
        arguments,
        scope,
        responses=responses,
        hold=hold,
        bound={},
        purpose="tools/call",
        notify_now=None,
        notify=progress,
        sealed=False,
    )
    round_.restore(journal, doc.asked)
    try:
        got: Any = await round_.rest()
    except (StoreError, LeaseLost):
        raise
    except Exception as exc:
        got = exc
    if isinstance(got, Parked):
        requests, asked, wake_at = got.input_requests, got.asked, got.wake_at
        own: Mapping[str, Any] = {}
        models: tuple[str, ...] = ()
        if sampler is not None:
            own, models = await answer_requests(
                requests,
                client,
                sampler=sampler,
                always=server.sample_always,
                timeout=server.sampling_timeout,
            )

        def park(d: TaskDoc) -> TaskDoc | None:
            now = time.time()
            parked = d.park(responses, requests, asked, now, wake_at)
            if parked is None or not own:
                return parked
            return parked.answered_here(own, models, now) or parked

        await tasks.change(task_id, park)
        return
    try:
        result = _modern.tool_result(server, tool, scope, got)
    except RequestError as exc:
        if not responses or exc.code != INVALID_PARAMS:
            await _end(tasks, task_id, error=_error(exc))
            return
        # An answer that is not valid (the client's fault, as a round's
        # -32602): dropped with the rest of its round, and asked again.
        why = f"an answer was refused: {exc.message}"
        await tasks.change(task_id, lambda d: d.refuse(responses, why, time.time()))
        return
    if result.get("resultType") == "input_required":  # URL flows: no state
        flows = cast("dict[str, Any]", result.get("inputRequests") or {})
        await tasks.change(task_id, lambda d: d.park(responses, flows, {}, time.time()))
        return
    await _end(tasks, task_id, result=naming_server_models(result, doc.server_models))


class TaskHold:
    """Where a task's round writes: the task's journal (its log), as it goes
    (a :class:`~bridge.server.calls.rounds.Hold`). The task document is the
    runner's (:func:`_round`).

    The journal lives as long as its task (:class:`JournalLife`): ``ttl``
    after its last write, a lease later, or after the latest deadline it
    records (``horizon``: a sleep's, a branch's), so a task that sleeps past
    its TTL keeps its journal."""

    def __init__(
        self,
        log: CallLog,
        ttl: float,
        horizon: float = 0.0,
        lease: LeaseClock | None = None,
        life: JournalLife | None = None,
    ) -> None:
        self.log = log
        self.lease = lease  # checked before each write (see LeaseClock)
        if life is None:
            life = JournalLife(0.0 if lease is None else lease.seconds)
        life.ttl = ttl
        life.horizon = max(life.horizon, horizon)
        self.life = life
        self.kept: list[Mapping[str, Any]] = []

    @property
    def ttl(self) -> float:
        return self.life.ttl

    @property
    def horizon(self) -> float:
        return self.life.horizon

    @property
    def first(self) -> bool:
        return False  # a task is resumed from its stream: write as it goes

    @property
    def due(self) -> bool:
        return bool(self.kept)

    def keep(self, records: Sequence[Mapping[str, Any]]) -> None:
        self.log.charge(records)  # the journal's bound (JournalTooLarge)
        self.kept.extend(records)
        for record in records:
            if "t" in record:  # a deadline (runtime.lowlevel.timer_record)
                self.life.horizon = max(self.life.horizon, float(record["at"]))

    async def flush(self) -> None:
        if not self.kept:
            return
        if self.lease is not None:
            self.lease.check()
        records, self.kept = self.kept, []
        expires_at = self.life.until(time.time())
        await self.log.append(records, expires_at=expires_at, charged=True)

    async def park(self, asked: Mapping[str, Any]) -> Mapping[str, Any]:
        await self.flush()  # the answers it used, before it asks again
        return {}

    async def finish(self) -> None:
        # Nothing resumes an ended task, but its journal is taken out whole
        # for a replay (``yieldmcp journal``): its last records are written.
        await self.flush()

    async def release(self) -> None:
        self.kept.clear()  # a refused answer: asked again (runner)


async def _progress(
    tasks: Tasks, task_id: str, method: str, params: Mapping[str, Any]
) -> None:
    """A task's notifications have no request to travel on: a progress
    message becomes its ``statusMessage``; the rest is dropped."""
    message: Any = params.get("message")
    if method == "notifications/progress" and isinstance(message, str):
        await tasks.change(task_id, lambda d: d.say(message, time.time()))


async def _end(
    tasks: Tasks,
    task_id: str,
    *,
    result: Mapping[str, Any] | None = None,
    error: Mapping[str, Any] | None = None,
) -> None:
    await tasks.change(
        task_id, lambda d: d.finish(result=result, error=error, now=time.time())
    )


def _error(exc: Exception) -> dict[str, Any]:
    """A failed task's ``error``: the JSON-RPC error of the one mapping."""
    error = error_data(exc)
    out: dict[str, Any] = {"code": error.code, "message": error.message}
    if error.data is not None:
        out["data"] = error.data
    return out

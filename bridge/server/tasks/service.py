"""One server's tasks: their store, who runs them here, and their recovery.

:class:`Tasks` are one server's tasks (``server.tasks``): its store
(``Server(store=...)``, else a :class:`~bridge.stores.MemoryStore` of its
own: the same code path), an owner id naming this process in leases, the
tasks this process runs, and what resumes tasks whose lease ran out (their
process died): the recovery service (:class:`bridge.durable.recovery.Recovery`)
calls :meth:`Tasks.recover` after each sweep, on start and then every half
lease; the same pass indexes the finished tasks whose end left them out of
the bounds on finished tasks (a failed write).

Every runner and the recovery service live in the server's run scope
(:meth:`bridge.server.offer.Offer.running`): they are cancelled when the
server stops, and a task left so is resumed from its stream by the next
process (or the next start) once its lease runs out.

A task that sleeps (``ctx.sleep``) has no runner and no lease either: its
document says when to wake it (``wake_at``), and one alarm per process
(:meth:`Tasks.alarm`, in the server's run scope: one trio task whatever the
number of sleepers) starts its runner then. The process that parked it sets
the alarm (:meth:`Tasks.set_alarm`); every other process sharing the store,
or this one restarted, learns of it at its next look (:meth:`Tasks.recover`,
every half lease), so a sleeping task wakes on time while its process
lives, and within half a lease of its time after that process died.

Every change to a task document goes through :meth:`Tasks.change`:
compare-and-swap, re-applied on a conflict. A runner in this process is woken
at once by an answer or a cancel (:meth:`Tasks.wake`); one on another process
reads its task again at least every second (:meth:`Tasks.look`), so a task
costs the store a read or two a second and no thread in between.

It does not decide what a change means (:mod:`.document`) or run a task
(:mod:`.runner`).
"""

from __future__ import annotations

import logging
import math
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Final, final

import trio

from bridge.durable import AsyncStore, MemoryStore, StoreError
from bridge.durable.recovery import Recovery
from bridge.durable.tasks import KeptBounds, KeptTasks, TaskDoc, TaskStore

if TYPE_CHECKING:
    from bridge.server.offer import Offer

__all__ = ["Tasks"]

log = logging.getLogger("yieldmcp")

ANONYMOUS: Final = ""
"""The caller of every task on a server without authorization (a principal's
binding is never empty)."""

Change = Callable[[TaskDoc], "TaskDoc | None"]
Run = Callable[["Tasks", str], Awaitable[bool]]


@final
class Tasks:
    """The tasks of one server (see the module docstring)."""

    def __init__(self, server: Offer, store: AsyncStore | None, run: Run) -> None:
        self.server = server
        self._run_task = run  # .runner.run_task (passed in: no import cycle)
        self.configured = store  # the server's store, None: in memory
        self.store = store or AsyncStore(MemoryStore())
        self.docs = TaskStore(self.store)
        self.owner = uuid.uuid4().hex
        self.running: set[str] = set()
        # Running tasks started again meanwhile: their runner runs once more.
        self._again: set[str] = set()
        # Unfinished task (running here, or parked on its client) -> its
        # principal binding; ANONYMOUS for a server without authorization.
        self.callers: dict[str, str] = {}
        self._changes: dict[str, trio.Event] = {}
        # Tasks to run that found this process full, in order: id -> caller.
        # Each starts when a place frees (an answered task waited for the
        # next recovery pass, half a lease, and could be swept meanwhile).
        self._queued: dict[str, str | None] = {}
        # Sleeping tasks this process knows of: id -> (wake-up time, caller).
        self._alarms: dict[str, tuple[float, str | None]] = {}
        self._alarms_changed = trio.Event()

    @property
    def lease(self) -> float:
        return self.server.limits.task_lease

    async def load(self, task_id: str) -> TaskDoc | None:
        return await self.docs.load(task_id)

    async def create(self, task_id: str, doc: TaskDoc) -> None:
        """Store the new task (it must not exist): durable before the reply."""
        await self.docs.create(task_id, doc)

    async def change(self, task_id: str, fn: Change) -> TaskDoc | None:
        """Apply ``fn`` to the task with compare-and-swap, again on a conflict.
        The new document, or None when the task is missing or ``fn`` changed
        nothing. A change that ends the task keeps it within the bounds on
        finished tasks (:class:`~bridge.durable.tasks.KeptTasks`)."""
        new = await self.docs.change(task_id, fn)
        if new is not None and new.ended and task_id not in self.running:
            # Parked here, ended by its client (tasks/cancel): its place is
            # its caller's again now, not at the next recovery pass.
            self.callers.pop(task_id, None)
        if new is not None and new.ended:
            gone = await self._kept().add(task_id, new, time.time())
            if gone:
                log.info("let %d finished tasks go (their bounds)", len(gone))
        return new

    def _kept(self) -> KeptTasks:
        """The bounds on finished tasks, as this server's limits set them."""
        limits = self.server.limits
        bounds = KeptBounds(
            count=limits.max_kept_tasks,
            size=limits.max_kept_task_bytes,
            caller_count=limits.max_kept_tasks_per_caller,
            caller_size=limits.max_kept_task_bytes_per_caller,
        )
        return KeptTasks(self.store, bounds)

    def changes(self, task_id: str) -> trio.Event:
        """Set at the next :meth:`wake` of the task in this process. Take it
        *before* reading the task, so no change slips in between."""
        event = self._changes.get(task_id)
        if event is None:
            event = self._changes[task_id] = trio.Event()
        return event

    def wake(self, task_id: str) -> None:
        """Tell the task's runner, if it runs here, that its task changed.
        A runner elsewhere reads the change at its next look (:func:`look`)."""
        event = self._changes.pop(task_id, None)
        if event is not None:
            event.set()

    def look(self, seconds: float) -> float:
        """How long a runner waits before reading its task again (for changes
        made on other processes): doubling from 50 ms while nothing changes, up
        to a third of the lease."""
        return min(max(seconds * 2, 0.05), self.lease / 3, 1.0)

    @property
    def full(self) -> bool:
        """Whether this process runs as many tasks as it may."""
        return len(self.running) >= self.server.limits.max_tasks

    def full_for(self, caller: str | None) -> bool:
        """Whether ``caller`` (a principal binding) has as many unfinished
        tasks here as one caller may. Without a principal every client is
        one caller (:data:`ANONYMOUS`): tasks parked on their clients do
        not count for ``full``, so nothing else would bound them."""
        key = _key(caller)
        mine = sum(1 for c in self.callers.values() if c == key)
        return mine >= self.server.limits.max_tasks_per_caller

    async def forget_ended(self, caller: str | None) -> None:
        """Give ``caller`` back the places of its tasks parked here that
        ended elsewhere (a ``tasks/cancel`` another process took): read from
        the store now, not at the next recovery pass (half a lease later).
        Only a caller at its bound pays for it, one read per parked task."""
        key, now = _key(caller), time.time()
        parked = [t for t, c in self.callers.items() if c == key]
        for task_id in parked:
            if task_id in self.running:
                continue
            doc = await self.docs.load(task_id)
            if (doc is None or not doc.waits(now)) and task_id not in self.running:
                self.callers.pop(task_id, None)

    def start(self, task_id: str, caller: str | None = None) -> None:
        """Run the task here, in the server's run scope, unless this process
        is full (the runner claims it first: :mod:`.runner`). If it runs
        here already, its runner runs once more when it ends: it may have
        read its task before the change that starts it (an answer that came
        as it parked the task and was leaving).

        Raises:
            RuntimeError: the server is not running (:meth:`Offer.running`).
        """
        if task_id in self.running:
            self._again.add(task_id)
            return
        if self.full:
            self._queued[task_id] = caller  # run when a place frees (_run)
            return
        self._queued.pop(task_id, None)
        self.running.add(task_id)
        self.callers[task_id] = _key(caller)
        self.server.start_soon(self._run, task_id)

    async def _run(self, task_id: str) -> None:
        parked = False
        try:
            while True:
                self._again.discard(task_id)
                parked = await self._run_task(self, task_id)
                if task_id not in self._again:
                    break
        except* StoreError as failed:
            # Resumed from its stream once its lease runs out. The runner's
            # nursery (its lease kept beside its rounds) hands the error on
            # in a group: a bare `except StoreError` missed it, and the
            # server's run scope, and with it the server, went down.
            log.warning("task %s: the store failed: %s", task_id, failed.exceptions[0])
        finally:
            self.running.discard(task_id)
            self._again.discard(task_id)
            if not parked:  # a parked task still counts for its caller
                self.callers.pop(task_id, None)
            self._changes.pop(task_id, None)
            if task_id in self._alarms:  # due while it ran: the alarm looks
                self._alarms_changed.set()
            self._start_queued()

    def _start_queued(self) -> None:
        """Start the tasks that found this process full, while it has places
        (a task that ended meanwhile: its runner finds it so, and goes)."""
        while self._queued and not self.full:
            task_id = next(iter(self._queued))
            self.start(task_id, self._queued.pop(task_id))

    def set_alarm(self, task_id: str, at: float, caller: str | None) -> None:
        """Start the sleeping task's runner here at ``at`` (seconds since the
        epoch), unless it ran before (the runner claims it first)."""
        known = self._alarms.get(task_id)
        self._alarms[task_id] = (at, caller)
        if known is None or at < known[0]:
            self._alarms_changed.set()

    async def alarm(self) -> None:
        """Start each sleeping task's runner at its wake-up time, until
        cancelled (the server's run scope runs one: module doc)."""
        while True:
            changed = self._alarms_changed = trio.Event()
            now = time.time()
            next_at = math.inf
            for task_id, (at, caller) in list(self._alarms.items()):
                if task_id in self.running:
                    continue  # woken when its runner ends (_run)
                if at > now:
                    next_at = min(next_at, at)
                    continue
                del self._alarms[task_id]
                self.start(task_id, caller)  # full: it starts once a place frees
            with trio.move_on_after(next_at - now):
                await changed.wait()

    def recovery(self) -> Recovery:
        """The server's recovery service, resuming this server's tasks
        (the server's run scope runs it: :meth:`Server.running`)."""
        return Recovery(self.store, self.lease / 2, self.recover)

    async def recover(self, now: float | None = None) -> int:
        """Resume every unfinished task whose lease ran out (its process
        died), here; how many were resumed. Finished tasks whose end left
        them out of the bounds' index (its write failed) are indexed, so
        that the bounds hold (:meth:`KeptTasks.add_missing`)."""
        now = time.time() if now is None else now
        resumed = 0
        found = dict(await self.docs.scan())
        # A task that ended within the last look is left to its runner,
        # whose own write indexes it (and keeps it, the newest, readable).
        settled = now - self.lease / 2
        ended = [(t, d) for t, d in found.items() if d.ended and d.updated <= settled]
        gone = await self._kept().add_missing(ended, now)
        if gone:
            log.info("let %d finished tasks go (their bounds)", len(gone))
        for task_id in [t for t in self.callers if t not in self.running]:
            doc = found.get(task_id)
            if doc is None or not doc.waits(now):
                # It ended, or went on elsewhere: no longer parked here.
                self.callers.pop(task_id, None)
        for task_id, doc in found.items():
            if doc.sleeping(now):
                assert doc.wake_at is not None
                self.set_alarm(task_id, doc.wake_at, doc.principal)
                continue
            if self.full:
                break
            if doc.waits(now) or doc.claim(self.owner, self.lease, now) is None:
                continue  # waits on its client, ended, or runs elsewhere
            if task_id not in self.running:
                resumed += 1
                self.start(task_id, doc.principal)
        return resumed


def _key(caller: str | None) -> str:
    """``caller``'s key in :attr:`Tasks.callers` (:data:`ANONYMOUS` for none)."""
    return ANONYMOUS if caller is None else caller

"""A task as the store keeps it: one typed document, one transition table.

A task (the 2026-07-28 tasks extension) is the document ``("task", task_id)``;
its journal is the call stream ``("call", task_id)`` (:mod:`.log`). The
document (:class:`TaskDoc`) says what to run (the tool, its arguments, the
client's capabilities, the version of the tool's code that last ran it),
where it is (``status``; the questions waiting, with
what pins their answers, ``asked``), the answers delivered but not yet used,
how it ended (``result`` or ``error``), the server's own models that
answered its samples so far (``server_models``), who made it (``principal``, and the
caller it runs as), who runs it (``lease``: an owner and an expiry), and,
while it sleeps (``ctx.sleep``), when it must be woken (``wake_at``).

**Waiting.** A task *waits* (:meth:`TaskDoc.waits`) when it has nothing to
go on with now: it asks its client and has no answer yet, or it sleeps until
``wake_at``, or both. A waiting task has no runner and no lease; an answer
(``tasks/update``) or its ``wake_at`` passing (on whichever process shares
the store: :mod:`bridge.server.tasks.service`) starts one. A sleeping task's
status stays ``working``: it is working, on the clock.

**The transition table.** A task's status moves only by :data:`TRANSITIONS`:
``(status, event) -> status``. An event with no entry from the current status
changes nothing (a cancelled task stays cancelled, whatever lands after the
cancel):

==================  =============  =================
from                event          to
==================  =============  =================
working             ask            input_required
working, input_req  work           working
input_required      ask            input_required
working, input_req  complete       completed
working, input_req  fail           failed
working, input_req  cancel         cancelled
working, input_req  stay           (the same)
==================  =============  =================

Every change is a method returning the new document, or None (nothing to
write); :meth:`TaskStore.change` writes it with compare-and-swap and, on a
conflict, reads again and re-applies it. So a ``tasks/cancel`` that lands
while a runner finishes wins whichever write comes second.

It does not run tasks or say what they look like on the wire
(:mod:`bridge.server.tasks`).
"""

from __future__ import annotations

import contextlib
import enum
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, cast, final

import attrs
import pydantic_core

from bridge.stores import AsyncStore, StoreConflict, StoreUnreadable
from bridge.stores.codec import Unreadable
from runtime.codec import SERVER_MODELS_META_KEY, server_models, with_model_names
from runtime.principal import Principal

from .log import CALLS
from .recovery import Lease

log = logging.getLogger("yieldmcp.tasks")

__all__ = [
    "TASKS",
    "TERMINAL",
    "TRANSITIONS",
    "KeptBounds",
    "KeptTasks",
    "Lease",
    "TaskDoc",
    "TaskStatus",
    "TaskStore",
]

TASKS: Final = "task"
MAX_MS: Final = 10 * 365 * 24 * 3600 * 1000
"""The longest ``ttlMs`` or poll interval a task document may hold: ten
years, the longest time limit (``bridge.server.limits.MAX_SECONDS``)."""
"""The store namespace of task documents."""


class TaskStatus(enum.Enum):
    """A task's status, spelled as the wire spells it."""

    WORKING = "working"
    INPUT_REQUIRED = "input_required"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


TERMINAL: Final = frozenset(
    {TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.CANCELLED}
)

_LIVE: Final = (TaskStatus.WORKING, TaskStatus.INPUT_REQUIRED)

TRANSITIONS: Final[Mapping[tuple[TaskStatus, str], TaskStatus]] = {
    **{(s, "ask"): TaskStatus.INPUT_REQUIRED for s in _LIVE},
    **{(s, "work"): TaskStatus.WORKING for s in _LIVE},
    **{(s, "complete"): TaskStatus.COMPLETED for s in _LIVE},
    **{(s, "fail"): TaskStatus.FAILED for s in _LIVE},
    **{(s, "cancel"): TaskStatus.CANCELLED for s in _LIVE},
    **{(s, "stay"): s for s in _LIVE},
}
"""The one transition table (module doc): ``(status, event) -> status``."""


def _mapping(value: Any) -> dict[str, Any] | None:
    """``value`` as a dict, if it is a JSON object."""
    if not isinstance(value, Mapping):
        return None
    return {str(k): v for k, v in cast("Mapping[Any, Any]", value).items()}


def _dict(value: Any) -> dict[str, Any]:
    return _mapping(value) or {}


@final
@attrs.frozen(kw_only=True)
class TaskDoc:
    """One task, as stored (module doc). Changes return a new document."""

    tool: str
    arguments: Mapping[str, Any]
    capabilities: Mapping[str, Any]
    status: TaskStatus
    created: float
    updated: float
    ttl_ms: int
    poll_ms: int
    asked: Mapping[str, Any] = attrs.field(factory=dict[str, Any])
    input_requests: Mapping[str, Any] = attrs.field(factory=dict[str, Any])
    responses: Mapping[str, Any] = attrs.field(factory=dict[str, Any])
    principal: str | None = None  # the principal binding of its maker
    caller: Mapping[str, Any] | None = None  # who it runs as (ctx.principal)
    status_message: str | None = None
    result: Mapping[str, Any] | None = None
    error: Mapping[str, Any] | None = None
    lease: Lease | None = None
    # The version of the tool's code that made it, or last ran it (None: a
    # task stored before tasks kept one, run as then, unchecked).
    version: str | None = None
    wake_at: float | None = None  # while it sleeps: when to wake it (epoch)
    # The server's own models that answered its samples, first first
    # (runtime.codec.SERVER_MODELS_META_KEY): named in its result.
    server_models: tuple[str, ...] = ()

    @classmethod
    def new(
        cls,
        *,
        tool: str,
        arguments: Mapping[str, Any],
        capabilities: Mapping[str, Any],
        ttl_ms: int,
        poll_ms: int,
        principal: str | None,
        caller: Mapping[str, Any] | None = None,
        version: str | None = None,
        now: float,
    ) -> TaskDoc:
        """A new ``working`` task of ``tool`` (of code ``version``) with
        ``arguments``."""
        return cls(
            tool=tool,
            arguments=dict(arguments),
            capabilities=dict(capabilities),
            status=TaskStatus.WORKING,
            created=now,
            updated=now,
            ttl_ms=ttl_ms,
            poll_ms=poll_ms,
            principal=principal,
            caller=caller,
            version=version,
        )

    @property
    def ended(self) -> bool:
        return self.status in TERMINAL

    @property
    def expires_at(self) -> float:
        """When the task is swept: ``ttlMs`` after its last change, after its
        lease runs out (a running task renews its lease: it is never swept
        while it runs), or after it wakes (never while it sleeps)."""
        held = 0.0 if self.lease is None else self.lease.until
        wakes = 0.0 if self.wake_at is None else self.wake_at
        return max(self.updated, held, wakes) + self.ttl_ms / 1000

    # --- changes (each through the transition table) --------------------------------

    def _move(
        self, event: str, now: float, *, touch: bool = True, **changes: Any
    ) -> TaskDoc | None:
        status = TRANSITIONS.get((self.status, event))
        if status is None:
            return None
        updated = max(now, self.updated) if touch else self.updated
        return attrs.evolve(self, status=status, updated=updated, **changes)

    def deliver(self, responses: Mapping[str, Any], now: float) -> TaskDoc | None:
        """``responses`` to the questions the task waits on, kept for its next
        round; answered questions leave ``input_requests``, and the task
        works once none is left. None: none of them answers a question
        waiting (unknown keys are ignored, as a round ignores them)."""
        waiting = self.input_requests
        fresh = {k: v for k, v in responses.items() if k in waiting}
        if not fresh:
            return None
        left = {k: v for k, v in waiting.items() if k not in fresh}
        return self._move(
            "ask" if left else "work",
            now,
            input_requests=left,
            responses={**self.responses, **fresh},
        )

    def answered_here(
        self, responses: Mapping[str, Any], models: Sequence[str], now: float
    ) -> TaskDoc | None:
        """:meth:`deliver` of ``responses`` the server's own ``models`` gave
        (in order), which the task's result will name. None: none of them
        answers a question waiting."""
        delivered = self.deliver(responses, now)
        if delivered is None:
            return None
        named = with_model_names(self.server_models, models)
        return attrs.evolve(delivered, server_models=named)

    def park(
        self,
        used: Mapping[str, Any],
        requests: Mapping[str, Any],
        asked: Mapping[str, Any],
        now: float,
        wake_at: float | None = None,
    ) -> TaskDoc | None:
        """The task waiting on ``requests`` after a round that was given the
        answers ``used``; ``asked`` pins the answers its next round accepts;
        ``wake_at``: when its next round must run even with no answer (it
        sleeps). Answers that came during the round stay for the next one."""
        kept = _unused(self.responses, used)
        waiting = {k: v for k, v in requests.items() if k not in kept}
        return self._move(
            "ask" if waiting else "work",
            now,
            input_requests=waiting,
            responses=kept,
            asked=dict(asked),
            wake_at=wake_at,
        )

    def refuse(self, used: Mapping[str, Any], why: str, now: float) -> TaskDoc | None:
        """The answers ``used`` dropped, one of them not being a valid answer:
        the task asks again, and its status message says ``why``."""
        kept = _unused(self.responses, used)
        return self._move("stay", now, responses=kept, status_message=why)

    def say(self, message: str, now: float) -> TaskDoc | None:
        """The task's status message (its latest progress message)."""
        if self.status_message == message:
            return None
        return self._move("stay", now, status_message=message)

    def finish(
        self,
        *,
        result: Mapping[str, Any] | None = None,
        error: Mapping[str, Any] | None = None,
        now: float,
    ) -> TaskDoc | None:
        """The task ended with ``result`` (completed) or ``error`` (failed).
        Its arguments stay with its journal (a replay of it needs both) until
        it expires or the bound on finished tasks lets it go
        (:class:`KeptTasks`)."""
        return self._move(
            "fail" if error is not None else "complete",
            now,
            input_requests={},
            responses={},
            asked={},
            lease=None,
            wake_at=None,
            result=None if error is not None else dict(result or {}),
            error=None if error is None else dict(error),
        )

    def cancel(self, now: float) -> TaskDoc | None:
        """The task cancelled (None once it has ended)."""
        return self._move(
            "cancel", now, input_requests={}, responses={}, lease=None, wake_at=None
        )

    def claim(self, owner: str, lease: float, now: float) -> TaskDoc | None:
        """The task leased to ``owner`` for ``lease`` seconds; None if it has
        ended or another owner's lease is still running. The lease keeps a
        running task from being swept (:attr:`expires_at`); it is not shown
        as a change (``lastUpdatedAt``)."""
        held = self.lease
        if held is not None and held.held_by_other(owner, now):
            return None
        return self._move("stay", now, touch=False, lease=Lease(owner, now + lease))

    def release(self, owner: str, now: float) -> TaskDoc | None:
        """The task waits (:meth:`waits`) with no runner: ``owner`` gives its
        lease up, so that an answer, or its wake-up time, starts a runner on
        any process. None if it does not wait at ``now`` (an answer came
        meanwhile, or it is time to wake: the owner goes on) or ``owner``
        holds no lease."""
        if not self.waits(now):
            return None
        if self.lease is None or self.lease.owner != owner:
            return None
        return self._move("stay", now, touch=False, lease=None)

    def run_by(self, version: str | None) -> TaskDoc | None:
        """The task going on under code of ``version`` (a tool that continues
        the one it was made under); None if it has that version already, or
        ended. Not shown as a change."""
        if version == self.version:
            return None
        return self._move("stay", self.updated, touch=False, version=version)

    @property
    def parked(self) -> bool:
        """Whether it waits on its client, with nothing to go on with."""
        return self.status is TaskStatus.INPUT_REQUIRED and not self.responses

    def waits(self, now: float) -> bool:
        """Whether it has nothing to go on with at ``now``: it waits on its
        client with no answer yet, or sleeps until after ``now``, and is
        not told to wake before then (module doc, "Waiting")."""
        if self.ended or self.responses:
            return False
        if self.wake_at is not None:
            return self.wake_at > now
        return self.status is TaskStatus.INPUT_REQUIRED

    def sleeping(self, now: float) -> bool:
        """Whether it waits for its ``wake_at``, which is after ``now``."""
        return self.wake_at is not None and self.waits(now)

    # --- JSON ------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "tool": self.tool,
            "arguments": dict(self.arguments),
            "capabilities": dict(self.capabilities),
            "status": self.status.value,
            "created": self.created,
            "updated": self.updated,
            "ttlMs": self.ttl_ms,
            "pollIntervalMs": self.poll_ms,
            "asked": dict(self.asked),
            "inputRequests": dict(self.input_requests),
            "responses": dict(self.responses),
        }
        optional = {
            "principal": self.principal,
            "caller": None if self.caller is None else dict(self.caller),
            "statusMessage": self.status_message,
            "version": self.version,
            "result": None if self.result is None else dict(self.result),
            "error": None if self.error is None else dict(self.error),
        }
        out.update({k: v for k, v in optional.items() if v is not None})
        if self.lease is not None:
            out["lease"] = {"owner": self.lease.owner, "until": self.lease.until}
        if self.wake_at is not None:
            out["wakeAt"] = self.wake_at
        if self.server_models:
            out["serverModels"] = list(self.server_models)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TaskDoc:
        """A document :meth:`to_json` wrote.

        Raises:
            ValueError: it is malformed (written by something else); the
                message says which field in a few words, never quoting it.
        """
        try:
            held = _mapping(data.get("lease"))
            lease = (
                None
                if held is None
                else Lease(str(held["owner"]), float(held["until"]))
            )
            message: Any = data.get("statusMessage")
            principal: Any = data.get("principal")
            version: Any = data.get("version")
            wake_at: Any = data.get("wakeAt")
            named: Any = data.get("serverModels")
            caller = _mapping(data.get("caller"))
            if caller is not None:
                Principal(**caller)  # it runs as them: they must be someone
            return cls(
                tool=_text(data["tool"], "tool"),
                arguments=_dict(data.get("arguments")),
                capabilities=_dict(data.get("capabilities")),
                status=TaskStatus(data["status"]),
                created=float(data["created"]),
                updated=float(data["updated"]),
                ttl_ms=int(data["ttlMs"]),
                poll_ms=int(data["pollIntervalMs"]),
                asked=_dict(data.get("asked")),
                input_requests=_dict(data.get("inputRequests")),
                responses=_dict(data.get("responses")),
                principal=principal if isinstance(principal, str) else None,
                caller=caller,
                status_message=message if isinstance(message, str) else None,
                result=_result(data.get("result")),
                error=_error(data.get("error")),
                lease=lease,
                version=version if isinstance(version, str) else None,
                wake_at=None if wake_at is None else float(wake_at),
                server_models=server_models({SERVER_MODELS_META_KEY: named}),
            )
        except _Malformed:
            raise
        except KeyError as exc:
            raise _Malformed(f"it has no {exc.args[0]!r}") from None
        except (TypeError, ValueError, OverflowError):
            raise _Malformed("a field is not of its type") from None

    def __attrs_post_init__(self) -> None:
        # Written by something else (a stranger's row is valid JSON too):
        # "ttlMs": 10**400 made expires_at an OverflowError, "created": NaN
        # an error in iso(), and recovery's scan took the server down.
        times = [self.created, self.updated, self.wake_at]
        times += [] if self.lease is None else [self.lease.until]
        if not all(t is None or 0 <= t < _YEAR_10000 for t in times):  # NaN too
            raise _Malformed("a task's times must be from 1970 to 9999")
        for name, ms in (("ttlMs", self.ttl_ms), ("pollIntervalMs", self.poll_ms)):
            if not 0 < ms <= MAX_MS:
                raise _Malformed(f"{name} is out of range (1 ms to ten years)")


_YEAR_10000: Final = 253402300800.0
"""Seconds since the epoch of 10000-01-01: the wire's ISO 8601 times (and
Python's ``datetime``) end before it."""


class _Malformed(ValueError):
    """A task document no writer of ours made; the message names the field."""


def _text(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise _Malformed(f"its {name} is not text")
    return value


def _result(value: Any) -> dict[str, Any] | None:
    """A stored ``CallToolResult``'s shape: an object whose ``content`` is a
    list of typed blocks (the client is given it as it is)."""
    if value is None:
        return None
    result = _mapping(value)
    content: Any = None if result is None else result.get("content", [])
    if (
        result is None
        or not isinstance(content, list)
        or not all(
            isinstance(block, Mapping)
            and isinstance(cast("Mapping[str, Any]", block).get("type"), str)
            for block in cast("list[Any]", content)
        )
    ):
        raise _Malformed("its result is not a tool's result")
    return result


def _error(value: Any) -> dict[str, Any] | None:
    """A stored JSON-RPC error's shape: an integer ``code``, a text ``message``."""
    if value is None:
        return None
    error = _mapping(value)
    if (
        error is None
        or isinstance(error.get("code"), bool)
        or not isinstance(error.get("code"), int)
        or not isinstance(error.get("message"), str)
    ):
        raise _Malformed("its error is not a JSON-RPC error")
    return error


def _unused(responses: Mapping[str, Any], used: Mapping[str, Any]) -> dict[str, Any]:
    """The answers a round was not given (those that came during it)."""
    return {k: v for k, v in responses.items() if k not in used or used[k] != v}


Change = Callable[[TaskDoc], "TaskDoc | None"]


@final
class TaskStore:
    """Task documents in ``store`` (module doc)."""

    __slots__ = ("_unreadable", "store")

    def __init__(self, store: AsyncStore) -> None:
        self.store = store
        self._unreadable = Unreadable("the task store")

    async def load(self, task_id: str) -> TaskDoc | None:
        found = await self.store.get(TASKS, task_id)
        return None if found is None else self._read(task_id, found.value)

    def _read(self, task_id: str, value: Mapping[str, Any]) -> TaskDoc:
        """The task document ``value``, or the store's error for a document
        none of our writers made (one the requests already handle, logged
        as one line; never a traceback)."""
        try:
            return TaskDoc.from_json(value)
        except ValueError as exc:
            shown = self._unreadable.shown
            raise StoreUnreadable(shown, TASKS, task_id, "document", str(exc)) from None

    async def create(self, task_id: str, doc: TaskDoc) -> None:
        """Store the new task (it must not exist: StoreConflict if it does),
        durable before the reply that names it."""
        await self.store.put(
            TASKS, task_id, doc.to_json(), expect=0, expires_at=doc.expires_at
        )

    async def change(self, task_id: str, fn: Change) -> TaskDoc | None:
        """Apply ``fn`` with compare-and-swap, again on a conflict. The new
        document, or None when the task is missing or ``fn`` changed nothing."""
        while True:
            found = await self.store.get(TASKS, task_id)
            if found is None:
                return None
            new = fn(self._read(task_id, found.value))
            if new is None:
                return None
            try:
                await self.store.put(
                    TASKS,
                    task_id,
                    new.to_json(),
                    expect=found.version,
                    expires_at=new.expires_at,
                )
            except StoreConflict:
                continue
            moved = found.expires_at is None or new.expires_at > found.expires_at
            if moved:
                # The journal goes no sooner than its task. A runner's writes
                # keep it a lease on, but a task with no runner (parked,
                # answered and waiting for a place, or for recovery) kept
                # its journal only its last write's time: an answer late in
                # the TTL moved the document on, and the runner that came
                # after the journal's expiry replayed without it.
                # A journal no writer of ours made (a key of another type):
                # the task fails on it once when it runs; its document must
                # still change (ended, cancelled), or every change failed.
                with contextlib.suppress(StoreUnreadable):
                    await self.store.append(
                        CALLS, task_id, [], expires_at=new.expires_at
                    )
            return new

    async def delete(self, task_id: str) -> None:
        await self.store.delete(TASKS, task_id)

    async def scan(self) -> list[tuple[str, TaskDoc]]:
        """Every task the store holds (unexpired)."""
        found = await self.store.scan(TASKS)
        tasks: list[tuple[str, TaskDoc]] = []
        for task_id, doc in found:
            try:
                tasks.append((task_id, TaskDoc.from_json(doc.value)))
            except ValueError as exc:  # not a task's shape: passed over, said once
                self._unreadable.say(TASKS, task_id, exc)
        return tasks

    async def sweep(self, now: float) -> int:
        """Delete what expired, of every kind (tasks, calls, sessions)."""
        return await self.store.sweep(now)


@final
@attrs.frozen
class KeptBounds:
    """What finished tasks the store keeps: at most ``count`` and ``size``
    bytes overall, and ``caller_count``/``caller_size`` of one caller (a
    principal; tasks made with none are bounded overall only)."""

    count: int
    size: int
    caller_count: int
    caller_size: int


@final
@attrs.frozen
class _Kept:
    task_id: str
    caller: str | None
    size: int
    at: float
    expires: float  # when the task is swept (its document's expiry)


_KEPT: Final = ("meta", "kept-tasks")

REINDEX_AT_ONCE: Final = 256
"""The most finished tasks one recovery pass adds to the index
(:meth:`KeptTasks.add_missing`): the rest at the next pass."""


def _kept_of(index: Mapping[str, Any], ttl: float) -> list[_Kept]:
    """The entries of the index document ``index``. An entry no writer of
    ours made (written by hand, by another program) is left out, and the
    index is written again without it, so the bounds hold for the rest;
    one warning says how many."""
    raw: Any = index.get("tasks", [])
    entries: list[Any] = cast("list[Any]", raw) if isinstance(raw, list) else [raw]
    kept: list[_Kept] = []
    for entry in entries:
        with contextlib.suppress(ValueError, OverflowError):
            kept.append(_kept_entry(entry, ttl))
    if len(kept) < len(entries):
        log.warning(
            "the index of finished tasks holds %d entries no writer of ours "
            "made; written again without them",
            len(entries) - len(kept),
        )
    return kept


def _kept_entry(entry: Any, ttl: float) -> _Kept:
    """One index entry: ``[task id, caller, bytes, ended at, swept at]``."""
    if not isinstance(entry, list) or len(cast("list[Any]", entry)) < 4:
        raise ValueError("not an entry")
    task_id, caller, size, at, *rest = cast("list[Any]", entry)
    # (an index written before entries had their expiry: the task's TTL
    # counted from its end, as it was read then)
    expires: Any = rest[0] if rest else None
    if not (
        isinstance(task_id, str)
        and (caller is None or isinstance(caller, str))
        and type(size) is int
        and size >= 0
        and type(at) in (int, float)
        and (expires is None or type(expires) in (int, float))
    ):
        raise ValueError("not an entry")
    end = float(at)
    swept = end + ttl if expires is None else float(expires)
    if not (math.isfinite(end) and math.isfinite(swept)):
        raise ValueError("not an entry")
    return _Kept(task_id, caller, size, end, swept)


@final
class KeptTasks:
    """The finished tasks a store keeps, bounded (:class:`KeptBounds`).

    An index document ``("meta", "kept-tasks")`` lists each finished task:
    its caller, its bytes (its document and its journal), when it ended and
    when it is swept; the index goes with the last of them (it outlived
    them, listing callers and task ids for nothing).
    When a task ends, it is added with compare-and-swap (processes sharing
    the store agree), and the oldest finished tasks are let go until the
    bounds hold: the caller's own first, then, past an overall bound, those
    of the caller who keeps the most, so that one caller's tasks never push
    out another's while it keeps less. A task let go reads as unknown.
    A task whose end was written but whose entry was not (the store failed
    between the two writes) is added by the next recovery pass
    (:meth:`add_missing`).
    """

    __slots__ = ("bounds", "store")

    def __init__(self, store: AsyncStore, bounds: KeptBounds) -> None:
        self.store = store
        self.bounds = bounds

    async def add(self, task_id: str, doc: TaskDoc, now: float) -> list[str]:
        """Keep the finished task ``task_id``, letting the oldest go past the
        bounds; the tasks let go (deleted, with their journals)."""
        entry = await self._entry(task_id, doc, now, now)
        return await self._index([entry], doc.ttl_ms / 1000, now, newest=entry)

    async def add_missing(
        self, ended: Sequence[tuple[str, TaskDoc]], now: float
    ) -> list[str]:
        """Keep those of the finished tasks ``ended`` the index does not
        list, letting the oldest go past the bounds; the tasks let go.

        A task's end and its entry are two writes: when the second failed
        (the store slow, or away), or the first landed after its deadline
        (the retry found nothing to change), the task was kept, uncounted,
        until its TTL, and the bounds held no more. The recovery pass
        (:meth:`bridge.server.tasks.service.Tasks.recover`) hands every
        finished task it scanned here: at most :data:`REINDEX_AT_ONCE` are
        added a pass (each costs a read of its journal), the oldest first.
        """
        if not ended:
            return []
        found = await self.store.get(*_KEPT)
        ttl = max(doc.ttl_ms for _, doc in ended) / 1000
        listed: set[str] = set()
        if found is not None:
            listed = {kept.task_id for kept in _kept_of(found.value, ttl)}
        missing = sorted(
            ((t, d) for t, d in ended if t not in listed and d.expires_at > now),
            key=lambda pair: pair[1].updated,
        )[:REINDEX_AT_ONCE]
        if not missing:
            return []
        entries: list[_Kept] = []
        for task_id, doc in missing:
            if await self.store.get(TASKS, task_id) is None:
                continue  # let go (or swept) since the scan: not kept again
            entries.append(await self._entry(task_id, doc, doc.updated, now))
        if not entries:
            return []
        gone = await self._index(entries, ttl, now, newest=None)
        log.info("indexed %d finished tasks their end left out", len(entries))
        return gone

    async def _entry(self, task_id: str, doc: TaskDoc, at: float, now: float) -> _Kept:
        """The index entry of the finished task: its bytes (its document and
        its journal), ended ``at``."""
        try:
            journal = await self.store.read(CALLS, task_id)
        except StoreUnreadable:  # the task ended failing on it: not counted
            journal = []
        size = len(pydantic_core.to_json(doc.to_json())) + len(
            pydantic_core.to_json(journal)
        )
        return _Kept(task_id, doc.principal, size, at, max(doc.expires_at, now))

    async def _index(
        self, entries: list[_Kept], ttl: float, now: float, *, newest: _Kept | None
    ) -> list[str]:
        """List ``entries`` in the index, with compare-and-swap, letting the
        oldest go past the bounds (never ``newest``); the tasks let go."""
        adding = {k.task_id for k in entries}
        while True:
            found = await self.store.get(*_KEPT)
            listed = [
                kept
                for kept in ([] if found is None else _kept_of(found.value, ttl))
                # expired ones are swept anyway
                if kept.expires > now and kept.task_id not in adding
            ]
            listed.extend(entries)
            gone = self._over(listed, newest)
            left = [k for k in listed if k.task_id not in gone]
            value = {
                "tasks": [[k.task_id, k.caller, k.size, k.at, k.expires] for k in left]
            }
            try:
                await self.store.put(
                    *_KEPT,
                    value,
                    expect=0 if found is None else found.version,
                    expires_at=max(k.expires for k in left),
                )
            except StoreConflict:
                continue  # another process ended a task meanwhile: again
            break
        for task_id_gone in gone:
            await self.store.delete(TASKS, task_id_gone)
            await self.store.delete(CALLS, task_id_gone)
        return sorted(gone)

    def _over(self, listed: list[_Kept], newest: _Kept | None) -> set[str]:
        """The oldest tasks to let go for ``listed`` to keep to the bounds
        (never ``newest``, the task that just ended: its client is about to
        read it)."""
        bounds = self.bounds
        left = sorted(listed, key=lambda k: k.at)
        gone: set[str] = set()

        def drop(kept: _Kept) -> None:
            left.remove(kept)
            gone.add(kept.task_id)

        for caller in {k.caller for k in left if k.caller is not None}:
            mine = [k for k in left if k.caller == caller and k is not newest]
            extra = [newest] if newest is not None and newest.caller == caller else []
            while mine and (
                len(mine) + len(extra) > bounds.caller_count
                or sum(k.size for k in [*mine, *extra]) > bounds.caller_size
            ):
                drop(mine.pop(0))
        while len(left) > 1 and (
            len(left) > bounds.count or sum(k.size for k in left) > bounds.size
        ):
            by_size = sum(k.size for k in left) > bounds.size
            totals: dict[str | None, int] = {}
            for kept in left:
                if kept is not newest:
                    totals[kept.caller] = totals.get(kept.caller, 0) + (
                        kept.size if by_size else 1
                    )
            if not totals:
                break
            most = max(totals, key=lambda c: totals[c])
            drop(next(k for k in left if k.caller == most and k is not newest))
        return gone

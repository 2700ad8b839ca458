"""What one client may make the server hold, whatever the transport.

:class:`ServerLimits` is one frozen value, given to ``Server(limits=...)``: how
many calls may be in flight on a session and on the whole server, how many
subscriptions a session may keep, how large a value the server stores for a
client may be, and how much a stdio server queues for a host that stops
reading. :class:`CallSlots` counts the calls in flight on one server.

Every refusal here is a JSON-RPC error naming the limit, never a crash: a
client that asks for too much is told so and may try again later. The HTTP
transport's own bounds (sessions, bodies, streams, bytes per session) are
``bridge.transports.http.HttpLimits``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Generator, Mapping
from typing import Any, Final, cast, final

import attrs
import pydantic_core
import trio

from bridge.jsonrpc.messages import INVALID_PARAMS
from runtime.errors import RequestError

__all__ = [
    "SERVER_BUSY",
    "CallSlots",
    "ServerLimits",
    "StepThreads",
    "MAX_SECONDS",
    "busy",
    "check_size",
    "duration",
    "positive",
]

SERVER_BUSY: Final = -32000
"""The JSON-RPC error code of a call refused because a limit is reached (an
implementation-defined server error: try again later)."""


def positive(instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    """An attrs validator for a limit: ``Limits.field must be positive``."""
    if not value > 0:
        raise ValueError(
            f"{type(instance).__name__}.{attribute.name} must be positive, "
            f"got {value!r}"
        )


MAX_SECONDS: Final = 10 * 365 * 24 * 3600.0
"""The longest a time limit may be: ten years. A time becomes an expiry in
the store or a task's ``ttlMs``, which infinity cannot be (``--task-ttl inf``
made every task fail with an OverflowError) and Redis refuses past its range."""


def duration(instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    """An attrs validator for a time limit: positive, and at most
    :data:`MAX_SECONDS` (``inf`` included: "no bound" is ten years)."""
    positive(instance, attribute, value)
    if not value <= MAX_SECONDS:
        raise ValueError(
            f"{type(instance).__name__}.{attribute.name} must be at most "
            f"{MAX_SECONDS:.0f} seconds (ten years), got {value!r}"
        )


@final
@attrs.frozen(kw_only=True)
class ServerLimits:
    """Bounds on what one client can make the server hold.

    Attributes:
        max_calls: ``tools/call`` and ``prompts/get`` in flight on the whole
            server (2025-11-25 calls; a 2026-07-28 round never waits on the
            client, so it holds nothing between rounds). More: error -32000.
        max_calls_per_session: the same for one session (one stdio process,
            one HTTP session).
        max_subscriptions: ``resources/subscribe`` URIs one session keeps.
        max_client_value: bytes of any one value the server keeps for a
            client (``clientInfo``, capabilities, a subscribed URI), as JSON.
        stdio_output_bytes: replies a stdio server queues for a host that is
            not reading its stdout; above this it stops reading stdin.
        step_threads: worker threads running sync steps (``ctx.step``) at
            once, on the whole server; more steps wait for a thread.
        step_threads_per_caller: of those, threads one caller's steps hold
            at once (a principal; without authorization, a 2025-11-25
            session); None: half of ``step_threads``, at least one. A
            caller's cancelled step whose function hangs keeps its thread
            from its own share only.
        max_journal_bytes: bytes of a 2026-07-28 call's journal (the answers
            and step results its ``requestState`` carries in every round); a
            warning is logged at 80 percent, and past it the call fails with a tool
            error.
        max_questions_per_round: questions (``inputRequests``) one 2026-07-28
            round asks, a call's or a task's; a call waiting on more (a
            branch of many samples) asks the rest in its next rounds, as the
            first are answered. Our client answers at most 64 a round
            (``--max-questions``) and refuses a round asking more. In
            2025-11-25, a call's live questions out at once: the others wait,
            unsent, as our client refuses questions past 64 at once.
        max_model_rounds: rounds of one 2026-07-28 request that the server's
            own model (``--model``) answers itself, retrying the round, before
            the client sees a result: each answers at most
            ``max_questions_per_round`` samples, so a request's model samples
            are bounded by their product (4096 by default). Past it the request
            fails (-32603) saying so; a task has no such bound (its rounds are
            its own, bounded by its TTL).
        round_claim_seconds: with a store, how long a 2026-07-28 round holds
            its requestState: another retry with the same state is refused as
            used meanwhile; after it (the process running the round died), a
            retry takes the round over.
        max_request_sleep: seconds a ``ctx.sleep`` may hold a 2026-07-28
            request that is not a task; a longer one is refused with a
            one-line error saying to run the tool as a task (-32021 naming
            the tasks extension, or a tool error for a tool that cannot be
            one). Keep it under round_claim_seconds.
        task_ttl: seconds a task (2026-07-28 tasks extension) is kept after
            its last change (its ``ttlMs``); then it is swept.
        task_poll_interval: seconds a client is told to wait between
            ``tasks/get`` polls (``pollIntervalMs``).
        max_tasks: tasks one process runs at once. A task waiting on its
            client runs nowhere (it has no runner until an answer comes), so
            it does not count. More: a new task is refused with -32000, and a
            task left by a dead process waits for a free place.
        max_tasks_per_caller: tasks one caller (one principal, on a server
            that checks access tokens) has unfinished on a process, running
            or waiting on it, so one caller cannot take every place. More:
            -32000. Without authorization every client is one caller: all
            together have at most this many (else tasks parked on their
            clients, which max_tasks does not count, had no bound).
        max_kept_tasks: finished tasks (their results) the store keeps for
            their clients to read, overall; past it the oldest are let go
            (``tasks/get``: unknown task) before their TTL.
        max_kept_tasks_per_caller: of those, one caller's (a principal's),
            so one caller's finished tasks cannot push out another's.
        max_kept_task_bytes: bytes of finished tasks kept (each its document,
            arguments and result included, and its journal), overall.
        max_kept_task_bytes_per_caller: of those, one caller's.
        task_lease: seconds a process holds a running task before another
            may take it over (renewed while it runs): how long a task whose
            process died waits to be resumed.
        store_timeout: seconds one operation on the store may take, waiting
            for a worker thread included; a store that does not answer in
            time fails the request (JSON-RPC -32603), not the process.
        loop_stall_warning: seconds the event loop may go without running
            before the server logs a warning (at most one a minute): code
            blocked it, most often a plain tool's body or a tool's code
            between yields doing blocking I/O outside a step, and every
            other call waited.
    """

    max_calls: int = attrs.field(default=2048, validator=positive)
    max_calls_per_session: int = attrs.field(default=128, validator=positive)
    max_subscriptions: int = attrs.field(default=64, validator=positive)
    max_client_value: int = attrs.field(default=16 * 1024, validator=positive)
    stdio_output_bytes: int = attrs.field(default=4 * 1024 * 1024, validator=positive)
    step_threads: int = attrs.field(default=40, validator=positive)
    step_threads_per_caller: int | None = attrs.field(
        default=None, validator=attrs.validators.optional(positive)
    )

    @property
    def caller_step_threads(self) -> int:
        """``step_threads_per_caller``, or its default."""
        if self.step_threads_per_caller is not None:
            return self.step_threads_per_caller
        return max(1, self.step_threads // 2)

    max_journal_bytes: int = attrs.field(default=1024 * 1024, validator=positive)
    max_questions_per_round: int = attrs.field(default=64, validator=positive)
    max_model_rounds: int = attrs.field(default=64, validator=positive)
    round_claim_seconds: float = attrs.field(default=60.0, validator=duration)
    max_request_sleep: float = attrs.field(default=30.0, validator=duration)
    task_ttl: float = attrs.field(default=3600.0, validator=duration)
    task_poll_interval: float = attrs.field(default=0.5, validator=duration)
    max_tasks: int = attrs.field(default=1024, validator=positive)
    max_tasks_per_caller: int = attrs.field(default=64, validator=positive)
    task_lease: float = attrs.field(default=30.0, validator=duration)
    max_kept_tasks: int = attrs.field(default=4096, validator=positive)
    max_kept_tasks_per_caller: int = attrs.field(default=256, validator=positive)
    max_kept_task_bytes: int = attrs.field(
        default=256 * 1024 * 1024, validator=positive
    )
    max_kept_task_bytes_per_caller: int = attrs.field(
        default=32 * 1024 * 1024, validator=positive
    )
    store_timeout: float = attrs.field(default=5.0, validator=positive)
    loop_stall_warning: float = attrs.field(default=2.0, validator=duration)


def busy(what: str, limit: int) -> RequestError:
    """The -32000 error of a request refused at ``limit``."""
    return RequestError(
        SERVER_BUSY,
        f"Server busy: {what} (limit {limit}); try again later",
        {"reason": "limit", "limit": limit},
    )


@final
class CallSlots:
    """The calls in flight on one server, at most ``limits.max_calls``."""

    def __init__(self, limits: ServerLimits) -> None:
        self.limits = limits
        self.in_flight = 0

    def admit(self, session_calls: int) -> None:
        """Take a slot for a new call, the session having ``session_calls``.

        Raises:
            RequestError: -32000, a limit is reached.
        """
        limits = self.limits
        if session_calls >= limits.max_calls_per_session:
            raise busy(
                "too many calls in flight on this session",
                limits.max_calls_per_session,
            )
        if self.in_flight >= limits.max_calls:
            raise busy("too many calls in flight", limits.max_calls)
        self.in_flight += 1

    def leave(self) -> None:
        """A call admitted with :meth:`admit` is over."""
        self.in_flight -= 1

    @contextlib.contextmanager
    def held(self, session_calls: int) -> Generator[None]:
        """A slot for the duration of the block (see :meth:`admit`)."""
        self.admit(session_calls)
        try:
            yield
        finally:
            self.leave()


def check_size(name: str, value: object, limits: ServerLimits) -> None:
    """Refuse (-32602) a client value to keep that is larger than allowed."""
    if isinstance(value, str):
        size = len(value.encode("utf-8", "surrogatepass"))
    elif isinstance(value, Mapping | list):
        size = len(pydantic_core.to_json(value))
    else:
        return
    if size > limits.max_client_value:
        raise RequestError(
            INVALID_PARAMS,
            f"{name} is too large: {size} bytes (limit {limits.max_client_value})",
        )


@final
class _Share:
    """One caller's share of the step threads and a thread of the whole pool,
    taken together and given back together when the thread ends (trio's
    limiter protocol): a step whose call was cancelled but whose function
    hangs keeps both, and so keeps only its caller waiting."""

    __slots__ = ("caller", "pool", "threads")

    def __init__(
        self, threads: StepThreads, caller: str, pool: trio.CapacityLimiter
    ) -> None:
        self.threads = threads
        self.caller = caller
        self.pool = pool

    async def acquire_on_behalf_of(self, borrower: object) -> None:
        await self.pool.acquire_on_behalf_of(borrower)
        try:
            await self.threads.total.acquire_on_behalf_of(borrower)
        except BaseException:
            self.pool.release_on_behalf_of(borrower)
            raise

    def release_on_behalf_of(self, borrower: object) -> None:
        try:
            self.threads.total.release_on_behalf_of(borrower)
        finally:
            self.pool.release_on_behalf_of(borrower)
            self.threads.idle(self.caller)


@final
class StepThreads:
    """The worker threads of a server's sync steps, shared fairly: at most
    ``total`` at once (``--step-threads``), of which one caller (a principal,
    or a 2025-11-25 session) holds at most ``per_caller``
    (``--step-threads-per-caller``). A caller's further steps wait for its
    own share, not for everyone's."""

    def __init__(self, total: int, per_caller: int) -> None:
        self.total = trio.CapacityLimiter(total)
        self.per_caller = per_caller
        self._callers: dict[str, trio.CapacityLimiter] = {}

    def resize(self, total: int, per_caller: int) -> None:
        self.total.total_tokens = total
        self.per_caller = per_caller
        for pool in self._callers.values():
            pool.total_tokens = per_caller

    def limiter(self, caller: str | None) -> trio.CapacityLimiter:
        """What a step of ``caller`` runs under (None: a caller the server
        cannot tell apart from others: the whole pool only)."""
        if caller is None:
            return self.total
        pool = self._callers.get(caller)
        if pool is None:
            pool = self._callers[caller] = trio.CapacityLimiter(self.per_caller)
        # trio takes any object with its limiter protocol.
        return cast(trio.CapacityLimiter, _Share(self, caller, pool))

    def idle(self, caller: str) -> None:
        """Forget a caller's share once none of its threads is left."""
        pool = self._callers.get(caller)
        if pool is not None and pool.borrowed_tokens == 0:
            del self._callers[caller]

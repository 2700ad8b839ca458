"""Running a step: off the event loop, with retries, under an idempotency key.

Owns :func:`perform_step` (trio: a sync function in a worker thread under a
capacity limiter, an ``async def`` in the caller's task and so in the call's
cancel scope), :func:`perform_step_now` (the same with no trio, for
``run_scripted``), and :func:`idempotency_key`, which a step's function reads
to let an external system deduplicate its work.

Cancelling the call cancels an async step; a thread step cannot be
interrupted, so it is abandoned (it runs on, and its result is dropped).

It does not record replies or decide when a step runs (the stepper does), and
keeps no state between steps.
"""

from __future__ import annotations

import contextvars
import functools
import weakref
from collections.abc import Callable, Coroutine
from typing import Any, Final, cast

import trio

from ..errors import InvalidEffect, ScriptExhausted, exits_the_call_only
from .effect import Step, StepReply, record_value

__all__ = [
    "ASYNC_TOOLS",
    "idempotency_key",
    "perform_step",
    "perform_step_now",
    "step_key",
]

_KEY: contextvars.ContextVar[str] = contextvars.ContextVar("yieldmcp_step_key")

Stub = Callable[[Step], Callable[..., Any] | None]
"""Finds a replacement for a step's function (a test's stub), or None."""

ASYNC_TOOLS: Final[weakref.WeakSet[Callable[..., Any]]] = weakref.WeakSet()
"""The ``async def`` functions defined as tools, each run as one step
(:func:`runtime.steps.as_program` adds them): a test cannot stub a tool's own
body, so :func:`perform_step_now` runs it as far as it goes without trio."""


def step_key(call_id: str, step: Step, key: str) -> str:
    """The idempotency key of ``step`` at effect ``key`` in call ``call_id``:
    stable across every replay and round of the call."""
    return f"{call_id}:{step.name}@{key}"


def idempotency_key() -> str:
    """The idempotency key of the step running now: the call's id plus the
    step's name and position. The same in every attempt, and in a re-run
    after a crash of the same call, so an API that deduplicates by key (a
    payment's ``Idempotency-Key`` header) does the work once.

    Raises:
        InvalidEffect: called outside a step's function.
    """
    try:
        return _KEY.get()
    except LookupError:
        raise InvalidEffect(
            "idempotency_key() is only available inside a step's function"
        ) from None


def _failed(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _fails_the_step(raised: BaseException) -> bool:
    """Whether ``raised`` fails the step (recorded, as any exception is):
    ``SystemExit`` from a library's ``sys.exit()`` too, which took the whole
    server down with it; not Ctrl-C, nor an exception group."""
    return isinstance(raised, Exception) or exits_the_call_only(raised)


def _retry(step: Step, exc: BaseException, attempt: int) -> bool:
    return attempt <= step.retries and isinstance(exc, step.retry_on)


def _failure(exc: BaseException, attempts: list[str]) -> StepReply:
    return StepReply(
        error=(type(exc).__qualname__, str(exc)),
        attempts=tuple(attempts[:-1]),
        cause=exc,
    )


async def perform_step(
    step: Step,
    key: str,
    *,
    limiter: trio.CapacityLimiter | None = None,
    stub: Stub | None = None,
) -> StepReply:
    """Run ``step`` (its attempts) and give its reply; ``key`` is its
    idempotency key (:func:`step_key`).

    Raises:
        StepNotRecordable: the value cannot be recorded (nothing is).
    """
    fn = _function(step, stub)
    run_async = step.is_async and fn is step.fn
    attempts: list[str] = []
    token = _KEY.set(key)
    try:
        while True:
            try:
                if run_async:
                    value = await fn(*step.args, **step.kwargs)
                else:
                    call = functools.partial(fn, *step.args, **step.kwargs)
                    value = await trio.to_thread.run_sync(
                        call, limiter=limiter, abandon_on_cancel=True
                    )
            except trio.Cancelled:
                raise
            except BaseException as exc:
                if not _fails_the_step(exc):
                    raise
                attempts.append(_failed(exc))
                if not _retry(step, exc, len(attempts)):
                    return _failure(exc, attempts)
                await trio.sleep(step.backoff * 2 ** (len(attempts) - 1))
                continue
            return record_value(step, value, tuple(attempts))
    finally:
        _KEY.reset(token)


def perform_step_now(step: Step, key: str, stub: Stub | None = None) -> StepReply:
    """:func:`perform_step` with no trio and no waiting between attempts (for
    ``run_scripted``): a sync function runs here; an ``async def`` must be
    stubbed.

    Raises:
        ScriptExhausted: an async step without a stub.
        StepNotRecordable: the value cannot be recorded.
    """
    fn = _function(step, stub)
    if step.is_async and fn is step.fn and fn in ASYNC_TOOLS:
        return _async_tool_now(step, key)
    if step.is_async and fn is step.fn:
        raise ScriptExhausted(
            f"run_scripted cannot run async step {step.name!r}: stub it "
            f"(ScriptedPeer(steps={{{step.name!r}: [...]}})) "
            "or use runtime.lowlevel.run"
        )
    attempts: list[str] = []
    token = _KEY.set(key)
    try:
        while True:
            try:
                value = fn(*step.args, **step.kwargs)
            except BaseException as exc:
                if not _fails_the_step(exc):
                    raise
                attempts.append(_failed(exc))
                if not _retry(step, exc, len(attempts)):
                    return _failure(exc, attempts)
                continue
            return record_value(step, value, tuple(attempts))
    finally:
        _KEY.reset(token)


def _async_tool_now(step: Step, key: str) -> StepReply:
    """The reply of an ``async def`` tool's body run with no event loop: its
    value, if it returns before it awaits anything; its failure, if it fails
    so (``await ctx.sample(...)``: effects are yielded, not awaited), as
    under trio.

    Raises:
        ScriptExhausted: it awaits I/O, which needs an event loop.
    """
    made = cast("Coroutine[Any, Any, Any]", step.fn(*step.args, **step.kwargs))
    token = _KEY.set(key)
    try:
        made.send(None)
    except StopIteration as stop:
        return record_value(step, stop.value, ())
    except RuntimeError as exc:  # trio's, sniffio's: no event loop runs
        needs: BaseException | None = exc
    except BaseException as exc:
        if not _fails_the_step(exc):
            raise
        return _failure(exc, [_failed(exc)])
    else:
        needs = None
        made.close()
    finally:
        _KEY.reset(token)
    raise ScriptExhausted(
        f"run_scripted cannot run the async def tool {step.name!r}: it awaits "
        "I/O, which needs trio: use runtime.lowlevel.run (or, to ask the "
        "client, write it as a generator: `def`, `answer = yield from "
        "ctx.sample(...)`)"
    ) from needs


def _function(step: Step, stub: Stub | None) -> Callable[..., Any]:
    replacement = stub(step) if stub is not None else None
    return step.fn if replacement is None else replacement

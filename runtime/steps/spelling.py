"""Spelling a step: ``ctx.step(fn, *args)`` and ``ctx.step_as(name, ...)``.

Owns :class:`StepMethods`, the part of the :class:`~runtime.context.Context`
that builds steps (pyright infers a step's result from ``fn``'s annotation,
for sync and async functions alike), :class:`StepCall` (a step with a name or
retries), and :func:`step_op`, the small program a step is: yield the
:class:`~runtime.steps.effect.Step`, log each failed attempt as a notice, then
evaluate to the value or raise ``StepFailed``.

It does not run functions (:mod:`runtime.steps.runner`) or record anything
(the stepper does, as for every question).
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, ParamSpec, TypeVar, final, get_type_hints, overload

from pydantic import TypeAdapter

from ..effects.base import Op
from ..effects.made import note
from ..effects.notices import Log
from ..errors import InvalidEffect, StepNotRecordable
from .effect import Step, StepReply, step_outcome

__all__ = ["StepCall", "StepMethods", "adapter_of", "step_op"]

P = ParamSpec("P")
R = TypeVar("R")


@functools.lru_cache(maxsize=1024)
def adapter_of(fn: Callable[..., Any]) -> TypeAdapter[Any]:
    """The adapter of ``fn``'s return annotation (``Any`` without one): made
    once per function, since a replay builds its steps again every round."""
    target: Any = fn.func if isinstance(fn, functools.partial) else fn
    try:
        hint: Any = get_type_hints(target).get("return", Any)
    except Exception:
        hint = Any
    try:
        return TypeAdapter(Any if hint is None else hint)
    except Exception as exc:
        raise StepNotRecordable(
            f"step {_name_of(target)!r} returns {hint!r}, which cannot be recorded "
            f"as JSON ({type(exc).__name__}); return a pydantic model, a "
            f"dataclass or plain JSON types"
        ) from None


def _is_async(fn: Callable[..., Any]) -> bool:
    target = fn.func if isinstance(fn, functools.partial) else fn
    return inspect.iscoroutinefunction(target) or inspect.iscoroutinefunction(
        type(target).__call__  # an instance whose __call__ is an async def
    )


def _name_of(fn: Callable[..., Any]) -> str:
    target = fn.func if isinstance(fn, functools.partial) else fn
    name = getattr(target, "__qualname__", None) or getattr(target, "__name__", None)
    return name if isinstance(name, str) else type(target).__qualname__


def _check_options(
    retries: int, backoff: float, retry_on: tuple[type[BaseException], ...]
) -> None:
    if not (isinstance(retries, int) and retries >= 0):
        raise InvalidEffect(f"step: retries must be an int >= 0, got {retries!r}")
    if not (isinstance(backoff, int | float) and math.isfinite(backoff)) or backoff < 0:
        raise InvalidEffect(f"step: backoff must be seconds >= 0, got {backoff!r}")
    if not all(isinstance(t, type) and issubclass(t, Exception) for t in retry_on):
        raise InvalidEffect(
            f"step: retry_on must be a tuple of Exception types, got {retry_on!r}"
        )


def step_op(
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
    *,
    name: str | None = None,
    retries: int = 0,
    backoff: float = 0.5,
    retry_on: tuple[type[BaseException], ...] = (Exception,),
) -> Op[Any]:
    """The program of one step (see the module doc)."""
    if not callable(fn):
        raise InvalidEffect(f"step: {fn!r} is not callable")
    step = Step(
        name=_name_of(fn) if name is None else name,
        fn=fn,
        args=args,
        kwargs=kwargs,
        adapter=adapter_of(fn),
        is_async=_is_async(fn),
        retries=retries,
        backoff=backoff,
        retry_on=retry_on,
    )
    reply: StepReply = yield step
    for number, failure in enumerate(reply.attempts, start=1):
        yield Log(
            level="warning",
            data=f"step {step.name!r}: attempt {number} failed: {failure}",
            logger="yieldmcp.steps",
        )
    return step_outcome(step, reply)


def _step_as_op(
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
    options: Mapping[str, Any],
) -> Op[Any]:
    """:func:`step_op` with options: its own generator, so a step made by
    ``ctx.step_as`` and never run is reported as such."""
    return (yield from step_op(fn, args, kwargs, **options))


@final
class StepCall:
    """A step with options: ``ctx.step_as("charge", retries=3)(charge, card)``."""

    __slots__ = ("_options",)

    def __init__(
        self,
        name: str | None,
        retries: int,
        backoff: float,
        retry_on: tuple[type[BaseException], ...],
    ) -> None:
        _check_options(retries, backoff, retry_on)
        self._options: dict[str, Any] = {
            "name": name,
            "retries": retries,
            "backoff": backoff,
            "retry_on": retry_on,
        }

    @overload
    def __call__(
        self,
        fn: Callable[P, Coroutine[Any, Any, R]],
        /,
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> Op[R]: ...

    @overload
    def __call__(
        self, fn: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs
    ) -> Op[R]: ...

    def __call__(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Op[Any]:
        # Noted, as the context's effects are: run or reported (made.py).
        return note(_step_as_op(fn, args, kwargs, self._options))


class StepMethods:
    """The step half of :class:`~runtime.context.Context`."""

    __slots__ = ()

    @overload
    def step(
        self,
        fn: Callable[P, Coroutine[Any, Any, R]],
        /,
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> Op[R]: ...

    @overload
    def step(
        self, fn: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs
    ) -> Op[R]: ...

    def step(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Op[Any]:
        """Run ``fn(*args, **kwargs)`` once for this call and record its result.

        ``result = yield from ctx.step(fn, ...)`` evaluates to ``fn``'s return
        value: a sync function runs in a worker thread, an ``async def`` as a
        trio task in the call's cancel scope. The value is recorded in the
        journal (as JSON, through ``fn``'s return annotation), so a replay of
        the call gets it back without running ``fn`` again. An exception is
        recorded too, and raised as ``StepFailed`` (also on replay). Code
        between yields may run again on replay; work done in a step does not.
        See ``docs/steps.md``.
        """
        # Noted, as the context's effects are: run or reported (made.py).
        return note(step_op(fn, args, kwargs))

    def step_as(
        self,
        name: str | None = None,
        *,
        retries: int = 0,
        backoff: float = 0.5,
        retry_on: tuple[type[BaseException], ...] = (Exception,),
    ) -> StepCall:
        """:meth:`step` with a ``name`` (default: the function's qualified
        name), and ``retries`` of a failure that is one of ``retry_on``,
        ``backoff`` seconds apart, doubling each time. Each failed attempt is
        logged as a notice."""
        return StepCall(name, retries, backoff, retry_on)

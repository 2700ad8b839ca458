"""Steps: a tool's own work (I/O, a slow computation), run once and recorded.

Owns :class:`Step`, the question a tool asks to run a function of its own
(``yield from ctx.step(fn, *args)``), and :class:`StepReply`, what running it
gave: the return value as JSON, or the failure's type name and message, and
the failed attempts before it. A step is answered by the runtime (a worker
thread for a sync function, a trio task for an ``async def``:
:mod:`runtime.steps.runner`), and recorded in the journal like a peer's
answer, so a replay gets the recorded reply and never runs the function again.

What a step evaluates to, its value read back through the return annotation or
:class:`~runtime.errors.StepFailed`, is :func:`step_outcome`'s. It does not run
functions, decide retries or build steps from a call's arguments
(:mod:`runtime.steps.spelling` does, for the context).
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable, Mapping
from typing import Any, final

import attrs
from pydantic import TypeAdapter, ValidationError
from pydantic_core import PydanticSerializationError

from ..effects.base import JSON, Question
from ..effects.canonical import digest
from ..errors import (
    InvalidAnswer,
    StepFailed,
    StepNotRecordable,
    summarize_validation_error,
)

__all__ = ["Step", "StepReply", "record_value", "step_outcome"]

_NOTHING: Any = object()
_NO_KWARGS: Mapping[str, Any] = types.MappingProxyType({})


@final
@attrs.frozen(kw_only=True)
class StepReply:
    """What running a step gave, as recorded.

    Attributes:
        value: the return value as JSON (when it did not fail).
        error: the failure's ``(type name, message)``, or None.
        attempts: each failed attempt before the outcome, ``"Type: message"``.
        decoded: the value read back from ``value`` (not recorded; a replay
            reads ``value`` again).
        cause: the live exception of a failure (not recorded).
    """

    value: JSON = None
    error: tuple[str, str] | None = None
    attempts: tuple[str, ...] = ()
    decoded: Any = attrs.field(default=_NOTHING, eq=False, repr=False)
    cause: BaseException | None = attrs.field(default=None, eq=False, repr=False)

    def to_json(self) -> JSON:
        data: dict[str, Any] = {}
        if self.error is not None:
            data["error"] = list(self.error)
        else:
            data["value"] = self.value
        if self.attempts:
            data["attempts"] = list(self.attempts)
        return data

    @classmethod
    def from_json(cls, data: JSON) -> StepReply:
        if not isinstance(data, dict) or ("value" in data) == ("error" in data):
            raise InvalidAnswer(f"a recorded step reply is malformed: {data!r}")
        raw: dict[str, Any] = data  # pyright: ignore[reportUnknownVariableType]
        attempts = tuple(str(a) for a in raw.get("attempts", ()))
        if "error" in raw:
            type_name, message = raw["error"]
            return cls(error=(str(type_name), str(message)), attempts=attempts)
        return cls(value=raw["value"], attempts=attempts)


@final
@attrs.frozen(kw_only=True, eq=False)
class Step(Question[StepReply]):
    """Run ``fn(*args, **kwargs)`` once for this call; its reply is journaled.

    ``name`` is the step's name (the function's qualified name unless given):
    with the step's position it keys the journal entry and the idempotency
    key. ``adapter`` (from ``fn``'s return annotation) stores the value as JSON
    and reads it back. A failure whose exception is one of ``retry_on`` is
    retried up to ``retries`` times, ``backoff`` seconds apart, doubling.
    """

    name: str
    fn: Callable[..., Any] = attrs.field(repr=False)
    args: tuple[Any, ...] = attrs.field(default=(), repr=False)
    kwargs: Mapping[str, Any] = attrs.field(default=_NO_KWARGS, repr=False)
    adapter: TypeAdapter[Any] = attrs.field(repr=False)
    is_async: bool = False
    retries: int = 0
    backoff: float = 0.5
    retry_on: tuple[type[BaseException], ...] = (Exception,)

    def fingerprint(self) -> JSON:
        # The name only: arguments need not be JSON, and a step is the same
        # step with other arguments (as a Temporal activity is, on replay).
        return {"effect": "step", "name": self.name}

    def digest(self) -> str:
        return _digest_of(self.name)

    def label(self) -> str:
        return f"step {self.name!r}"

    def resolve(self, reply: Any, key: str) -> StepReply:
        if not isinstance(reply, StepReply):
            raise InvalidAnswer(f"step {self.name!r} was answered with {reply!r}")
        return reply

    def reply_to_json(self, reply: Any) -> JSON:
        return reply.to_json() if isinstance(reply, StepReply) else reply

    def reply_from_json(self, data: JSON) -> Any:
        return StepReply.from_json(data)


@functools.lru_cache(maxsize=4096)
def _digest_of(name: str) -> str:
    """A step's digest, by name (its whole fingerprint): a replay digests every
    recorded step again each round, and hashing costs more than the lookup."""
    return digest({"effect": "step", "name": name})


def record_value(step: Step, value: Any, attempts: tuple[str, ...]) -> StepReply:
    """The reply for ``value``, stored as JSON through the step's annotation
    and read back at once, so a value a replay could not reproduce fails now.

    Raises:
        StepNotRecordable: the value cannot be stored, or not read back.
    """
    adapter = step.adapter
    try:
        data = adapter.dump_python(value, mode="json", warnings="error")
        decoded = adapter.validate_python(data)
    except (PydanticSerializationError, ValidationError, TypeError, ValueError) as exc:
        detail = (
            summarize_validation_error(exc)
            if isinstance(exc, ValidationError)
            else str(exc).splitlines()[0]
        )
        raise StepNotRecordable(
            f"step {step.name!r} returned {type(value).__name__}, which its "
            f"return annotation cannot record as JSON: {detail}; annotate the "
            f"function's return type with a type pydantic can serialise"
        ) from None
    return StepReply(value=data, attempts=attempts, decoded=decoded)


def step_outcome(step: Step, reply: StepReply) -> Any:
    """What ``yield from ctx.step(...)`` evaluates to for ``reply``.

    Raises:
        StepFailed: the step failed (live, or as recorded).
    """
    if reply.error is not None:
        type_name, message = reply.error
        raise StepFailed(step.name, type_name, message) from reply.cause
    if reply.decoded is not _NOTHING:
        return reply.decoded
    return step.adapter.validate_python(reply.value)

"""Local questions: effects the runtime answers itself, journaled for replay.

Owns :class:`Clock` (the wall clock), :class:`RandomBits` (random integers)
and :class:`RunBefore` (a handoff tool's ``before`` step). Each is answered by
:meth:`~runtime.effects.LocalQuestion.compute` and recorded like a peer's
answer, so a replayed tool sees the same time, the same random numbers and the
same ``before()`` result.

It does not read a clock or a random source itself (the driver hands them to
``compute``), and does not decide when a recorded answer is used (the stepper
does).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, final

import attrs
from pydantic import BaseModel, TypeAdapter

from ._effect_base import JSON, LocalQuestion

__all__ = ["Clock", "RandomBits", "RunBefore"]


@final
@attrs.frozen
class Clock(LocalQuestion[float]):
    """Read the wall clock (seconds since the epoch), recorded for replay."""

    def fingerprint(self) -> JSON:
        return {"effect": "clock"}

    def resolve(self, reply: Any, key: str) -> float:
        return float(reply)

    def compute(self, clock: Callable[[], float], bits: Callable[[int], int]) -> Any:
        return clock()


@final
@attrs.frozen
class RandomBits(LocalQuestion[int]):
    """Draw a random non-negative integer of ``bits`` bits, recorded for replay."""

    bits: int = attrs.field(default=64, validator=attrs.validators.in_(range(1, 257)))

    def fingerprint(self) -> JSON:
        return {"effect": "random", "bits": self.bits}

    def resolve(self, reply: Any, key: str) -> int:
        return int(reply)

    def compute(self, clock: Callable[[], float], bits: Callable[[int], int]) -> Any:
        return bits(self.bits)


@final
@attrs.frozen(kw_only=True)
class RunBefore(LocalQuestion[Any]):
    """Run a handoff tool's ``before(params)`` once; its result is journaled.

    ``adapter`` serialises the result for the journal (built from ``before``'s
    return annotation), so a replayed ``client`` sees an equal value.
    """

    tool: str
    before: Callable[[Any], Any]
    params: BaseModel
    adapter: TypeAdapter[Any] = attrs.field(eq=False, repr=False)

    def fingerprint(self) -> JSON:
        return {
            "effect": "before",
            "tool": self.tool,
            "params": self.params.model_dump(mode="json"),
        }

    def resolve(self, reply: Any, key: str) -> Any:
        return reply

    def compute(self, clock: Callable[[], float], bits: Callable[[int], int]) -> Any:
        return self.before(self.params)

    def reply_to_json(self, reply: Any) -> JSON:
        return self.adapter.dump_python(reply, mode="json")

    def reply_from_json(self, data: JSON) -> Any:
        return self.adapter.validate_python(data)

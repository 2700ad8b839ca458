"""Durable timers: :class:`Sleep`, a question only time answers.

Owns the :class:`Sleep` effect (``yield from ctx.sleep(60)``,
``ctx.sleep(until=datetime)``): a tool waits for a duration, or until a time,
and the wait outlives the process. It is a question, keyed and journaled
like any other, but no peer answers it: the call's machine records its
*deadline* (seconds since the epoch, UTC) the first time the tool reaches
it, and answers it when that deadline passes. So a replay, a restart or
another process waits only for what is left of it.

It does not keep time or wait (the call's machine and its drivers do:
:mod:`runtime.call.machine`), nor decide where a long sleep may run (the
bridge does: a task gives its lease up while it sleeps).
"""

from __future__ import annotations

import math
from typing import Any, Final, final

import attrs

from ..errors import InvalidEffect
from .base import JSON, Question

__all__ = ["Sleep"]


# The last second a datetime holds (9999-12-31T23:59:59Z). A deadline must
# be one a tool can be told back (ctx.now(), a datetime) and that every store
# can keep an expiry past: Redis refuses an expiry of 1e300 seconds as an
# integer out of range, and the task asleep there could not be parked.
LATEST_DEADLINE: Final = 253402300799.0


def _seconds(instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None:
        return
    name = attribute.name
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidEffect(f"sleep: {name} is a number of seconds, got {value!r}")
    # An int is compared as it is: math.isfinite(10**400) is an OverflowError.
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidEffect(f"sleep: {name} must be finite, got {value!r}")
    if value > LATEST_DEADLINE:
        raise InvalidEffect(
            f"sleep: {name} must be at most {LATEST_DEADLINE:.0f} "
            f"(a sleep ends by the year 9999), got {value!r}"
        )


@final
@attrs.frozen
class Sleep(Question[None]):
    """Wait ``seconds`` from when the tool first reaches this point, or until
    ``until`` (seconds since the epoch): exactly one of the two is set. The
    tool gets ``None`` back once the deadline has passed."""

    seconds: float | None = attrs.field(default=None, validator=_seconds)
    until: float | None = attrs.field(default=None, validator=_seconds)

    def __attrs_post_init__(self) -> None:
        if (self.seconds is None) == (self.until is None):
            raise InvalidEffect("sleep: pass exactly one of `seconds` or `until`")
        if self.seconds is not None and self.seconds < 0:
            raise InvalidEffect(f"sleep: seconds must be >= 0, got {self.seconds!r}")

    def deadline(self, now: float) -> float:
        """When this sleep ends, for a tool reaching it at ``now``: by the
        end of the year 9999 at the latest."""
        if self.until is not None:
            return self.until
        assert self.seconds is not None
        return min(now + self.seconds, LATEST_DEADLINE)

    def fingerprint(self) -> JSON:
        if self.until is not None:
            return {"effect": "sleep", "until": self.until}
        return {"effect": "sleep", "seconds": self.seconds}

    def resolve(self, reply: Any, key: str) -> None:
        return None

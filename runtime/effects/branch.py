"""The ``Branch`` effect: run children concurrently, and the ``Limits`` on them.

Owns what a tool says when it branches: the children (callables taking the
context, checked at construction so that a started generator is refused with a
hint) and the optional :class:`Limits` (depth, tokens, time).

It does not say what a branch *does*: starting the children, collecting their
results in child order, cancelling siblings on the first failure and enforcing
the limits are the stepper's rules (:mod:`runtime.call.stepper`, rules 2 to 4).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator
from typing import Any, final

import attrs

from ..errors import InvalidEffect
from .base import Effect

__all__ = ["Branch", "Limits"]


def _positive(instance: Any, attribute: Any, value: float | None) -> None:
    if value is not None and not (
        isinstance(value, int | float) and math.isfinite(value) and value > 0
    ):
        raise InvalidEffect(f"Limits.{attribute.name} must be positive, got {value!r}")


@final
@attrs.frozen(kw_only=True)
class Limits:
    """Bounds on a branch: each is enforced, each with its own error.

    Attributes:
        max_depth: how many levels of branches may nest, counting this one
            (1 means the children may not branch). Exceeding it raises
            :class:`~runtime.errors.BranchDepthExceeded` where the inner branch
            was yielded.
        max_tokens: total tokens the branch's samples may use (reported usage, or
            an estimate of a quarter-token per character when a peer reports
            none). Exceeding it cancels the branch and raises
            :class:`~runtime.errors.TokenBudgetExceeded`.
        timeout: wall-clock seconds; on expiry the branch is cancelled and
            :class:`~runtime.errors.BranchTimeout` raised.
    """

    max_depth: int | None = attrs.field(default=None, validator=_positive)
    max_tokens: int | None = attrs.field(default=None, validator=_positive)
    timeout: float | None = attrs.field(default=None, validator=_positive)


def _check_children(instance: Any, attribute: Any, value: tuple[Any, ...]) -> None:
    for child in value:
        if not callable(child):
            hint = (
                " (it is a started generator: pass the function, e.g. "
                "`lambda ctx: child(ctx)`)"
                if isinstance(child, Generator)
                else ""
            )
            raise InvalidEffect(
                f"branch children must be callables taking the context, got "
                f"{child!r}{hint}"
            )


@final
@attrs.frozen(kw_only=True)
class Branch(Effect[tuple[Any, ...]]):
    """Run ``children`` concurrently, with nursery semantics.

    Each child is a callable taking the context and returning a generator. All
    start together (left to right); the result is their return values *in child
    order*. The first child to fail cancels its siblings (their generators are
    closed, in reverse start order, so ``finally`` blocks run) and the branch
    raises an ``ExceptionGroup`` at the ``yield``. No child outlives the branch.
    """

    children: tuple[Callable[[Any], Generator[Any, Any, Any]], ...] = attrs.field(
        converter=tuple, validator=_check_children
    )
    limits: Limits | None = None

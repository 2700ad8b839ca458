"""What steps add to defining a tool: async tools, code versions, ``before``.

Owns three definition-time helpers that :mod:`runtime.tools` calls, one line
each:

* :func:`as_program`: an ``async def`` tool runs as a single step (its body is
  the step's function, so it may do any async I/O but yields no effects);
  a generator or plain function is returned as it is.
* :func:`code_version`: the fingerprint of a tool's code (a hash of its
  source) that a 2026-07-28 ``requestState`` carries, so a state sealed under
  other code is refused.
* :func:`before_program`: a handoff's ``before`` as a step (so it runs off the
  event loop and is recorded like every step), refusing a ``before`` without
  a return annotation, whose result a replay could not rebuild.

It does not parse signatures or build the :class:`~runtime.tools.value.Tool`.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from ..effects.base import Op
from ..errors import InvalidTool
from .runner import ASYNC_TOOLS
from .spelling import step_op

__all__ = ["as_program", "before_program", "code_version"]


def as_program(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn``, or for an ``async def``, a generator function with its
    signature that runs it as one step named after it."""
    if not inspect.iscoroutinefunction(fn):
        return fn
    ASYNC_TOOLS.add(fn)  # run_scripted runs it, as it cannot be stubbed

    @functools.wraps(fn)
    def program(*args: Any, **kwargs: Any) -> Op[Any]:
        return (yield from step_op(fn, args, kwargs, name=fn.__name__))

    return program


def code_version(fn: Callable[..., Any], explicit: str | None = None) -> str:
    """``explicit``, or a hash of ``fn``'s source (of its bytecode, when the
    source cannot be read)."""
    if explicit is not None:
        if not (isinstance(explicit, str) and explicit):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidTool(f"version must be a non-empty str, got {explicit!r}")
        return explicit
    target: Any = inspect.unwrap(fn)
    try:
        data = inspect.getsource(target).encode()
    except (OSError, TypeError):
        code = getattr(target, "__code__", None)
        data = repr(target).encode() if code is None else code.co_code
    return hashlib.sha256(data).hexdigest()[:16]


def before_program(
    tool_name: str,
    before: Callable[[Any], Any],
    hints: Mapping[str, Any],
) -> Callable[[Any], Op[Any]]:
    """``before(params)`` as a step named ``"{tool}.before"``.

    Raises:
        InvalidTool: ``before`` has no return annotation.
    """
    if "return" not in hints:
        raise InvalidTool(
            f"handoff {tool_name!r}: annotate the return type of "
            f"{before.__qualname__} (e.g. `-> Side`), so its result can be "
            f"recorded and rebuilt on replay"
        )

    def run_before(params: Any) -> Op[Any]:
        return (yield from step_op(before, (params,), {}, name=f"{tool_name}.before"))

    return run_before

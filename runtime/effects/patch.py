"""A patch point: which side of a code change a call is on (``ctx.patched``).

Owns :class:`Patched`, the effect ``yield from ctx.patched("name")`` yields.
Its value says whether the call runs the code written with the change (True)
or must keep to the code it was recorded under (False), as Temporal's
``workflow.patched`` does:

* **False** while replaying a call that went past this point under older
  code: its journal holds effects recorded at or after the point, and no
  marker for ``name``;
* **True** when the point is reached live: every new call, and an old call
  that reaches the point for the first time;
* **recorded**: the first answer for ``name`` in a call is kept in its journal
  as a marker, and every later ``patched(name)`` of the call, in this replay
  or any later one, gives that answer (a True is written to a durable log
  before anything after it; a False follows again from what made it False,
  which stays recorded).

A patch point takes no key: the effects around it keep the keys they had
before the patch was written, so a journal recorded without it replays.

It does not decide the value (the stepper does, from the journal:
:mod:`runtime.call.stepper`), and knows nothing of tool versions
(``@tool(version=, continues=)``).
"""

from __future__ import annotations

from typing import Any, final

import attrs

from .base import Effect

__all__ = ["Patched"]


def _patch_name(_instance: Any, _attribute: Any, value: Any) -> None:
    if not (isinstance(value, str) and value):
        raise TypeError(f"a patch name is a non-empty str, got {value!r}")


@final
@attrs.frozen
class Patched(Effect[bool]):
    """Whether this call takes the patched path at patch point ``name``
    (module doc)."""

    name: str = attrs.field(validator=_patch_name)

    def __bool__(self) -> bool:
        # `if ctx.patched("fee"):`, the `yield from` forgotten (or in a step,
        # where no effect can be asked), was always true: an old call then
        # took the new path on replay. Its value is only what the call says.
        raise TypeError(
            f"ctx.patched({self.name!r}) is an effect, not its answer: write "
            f"`if (yield from ctx.patched({self.name!r})):` in the tool itself "
            f"(not in a step)"
        )

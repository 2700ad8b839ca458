"""How deep JSON may nest and still be read: one number for every MCP reader.

yieldmcp reads every JSON-RPC message with ``pydantic_core.from_json``, which
refuses a document nested past :data:`MAX_MESSAGE_DEPTH` levels of arrays and
objects ("recursion limit exceeded"). JSON a writer can still write, nested
deeper, is lost on the way: the reader cannot tell a reply from a request,
nor whose reply it was, and a request it answered would wait for ever. So a
writer measures what it is about to send (:func:`nesting`) and refuses,
itself, what the reader would (:func:`nested_too_deep`: one line saying so).

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final, cast

__all__ = ["MAX_MESSAGE_DEPTH", "nesting", "nested_too_deep"]

MAX_MESSAGE_DEPTH: Final = 200
"""Levels of arrays and objects a whole JSON-RPC message may nest (the
message's own object is the first): what ``pydantic_core.from_json`` reads."""


def nesting(value: Any, stop: int = MAX_MESSAGE_DEPTH + 1) -> int:
    """Levels of mappings, lists and tuples in ``value`` (a scalar is 0, ``{}``
    is 1, ``{"a": [1]}`` is 2), counted no further than ``stop``; without
    recursion, so a value nested past Python's recursion limit is measured
    too."""
    if not isinstance(value, Mapping | list | tuple):
        return 0
    deepest = 1
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        container, level = stack.pop()
        if level > deepest:
            deepest = level
            if deepest >= stop:
                return stop
        items: Iterable[Any] = (
            cast("Mapping[Any, Any]", container).values()
            if isinstance(container, Mapping)
            else cast("list[Any]", container)
        )
        for item in items:
            if isinstance(item, Mapping | list | tuple):
                stack.append((cast(Any, item), level + 1))
    return deepest


def nested_too_deep(what: str, room: int) -> str:
    """One line: ``what`` nests deeper than the ``room`` levels its place in
    a message leaves, and why that matters."""
    return (
        f"{what}: JSON nested deeper than the {room} levels its place in an "
        f"MCP message leaves (a whole message may nest {MAX_MESSAGE_DEPTH}, the "
        f"most an MCP reader takes; deeper, it cannot be read)"
    )

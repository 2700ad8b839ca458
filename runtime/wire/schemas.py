"""Validators of JSON Schemas that never fetch anything.

A schema can ``$ref`` a document by URL. Given no registry, ``jsonschema``
fetches such a document with a blocking ``urlopen`` (with no timeout) while it
validates: a peer's schema (a tool's ``outputSchema``, an elicitation's
``requestedSchema``) could make a process request any URL, and block its event
loop until that URL answers. Every validator here is made with an empty
:class:`referencing.Registry`: a reference within the schema (``#/$defs/…``)
resolves, one elsewhere raises :class:`~referencing.exceptions.Unresolvable`
(a ``jsonschema`` error too), which the caller handles as a schema it cannot
use.

``referencing`` is imported by the first validator made, not by importing
yieldmcp: most processes never check a schema.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jsonschema.protocols import Validator
    from referencing import Registry
    from referencing.exceptions import Unresolvable as Unresolvable

__all__ = ["Unresolvable", "nothing_elsewhere", "offline_validator"]


@functools.cache
def nothing_elsewhere() -> Registry[Any]:
    """A registry with no documents and no way to retrieve one."""
    from referencing import Registry

    return Registry()


def __getattr__(name: str) -> Any:
    if name == "Unresolvable":  # imported when first named
        from referencing.exceptions import Unresolvable

        return Unresolvable
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def offline_validator(
    schema: Mapping[str, Any],
    *,
    default: type[Validator] | None = None,
    format_checker: Any = None,
) -> Validator:
    """A validator of ``schema`` (its ``$schema``'s draft, else ``default``:
    Draft 2020-12) that resolves no reference outside the schema."""
    # jsonschema is imported by the first schema checked, not by importing
    # yieldmcp: most processes (a server whose tools take typed parameters)
    # never check one, and its import is a tenth of a process's start-up.
    from jsonschema import Draft202012Validator
    from jsonschema.validators import validator_for

    cls = validator_for(schema, default=default or Draft202012Validator)
    registry = nothing_elsewhere()
    return cls(dict(schema), registry=registry, format_checker=format_checker)

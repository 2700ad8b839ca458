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
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from referencing import Registry
from referencing.exceptions import Unresolvable

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

__all__ = ["NOTHING_ELSEWHERE", "Unresolvable", "offline_validator"]

NOTHING_ELSEWHERE: Final[Registry[Any]] = Registry()
"""A registry with no documents and no way to retrieve one."""


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
    return cls(dict(schema), registry=NOTHING_ELSEWHERE, format_checker=format_checker)

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
from typing import Any, Final

from jsonschema import Draft202012Validator
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for
from referencing import Registry
from referencing.exceptions import Unresolvable

__all__ = ["NOTHING_ELSEWHERE", "Unresolvable", "offline_validator"]

NOTHING_ELSEWHERE: Final[Registry[Any]] = Registry()
"""A registry with no documents and no way to retrieve one."""


def offline_validator(
    schema: Mapping[str, Any],
    *,
    default: type[Validator] = Draft202012Validator,
    format_checker: Any = None,
) -> Validator:
    """A validator of ``schema`` (its ``$schema``'s draft, else ``default``)
    that resolves no reference outside the schema."""
    cls = validator_for(schema, default=default)
    return cls(dict(schema), registry=NOTHING_ELSEWHERE, format_checker=format_checker)

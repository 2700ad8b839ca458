"""Validators of JSON Schemas that never fetch anything, nor backtrack.

A schema can ``$ref`` a document by URL. Given no registry, ``jsonschema``
fetches such a document with a blocking ``urlopen`` (with no timeout) while it
validates: a peer's schema (a tool's ``outputSchema``, an elicitation's
``requestedSchema``) could make a process request any URL, and block its event
loop until that URL answers. Every validator here is made with an empty
:class:`referencing.Registry`: a reference within the schema (``#/$defs/…``)
resolves, one elsewhere raises :class:`~referencing.exceptions.Unresolvable`
(a ``jsonschema`` error too), which the caller handles as a schema it cannot
use.

Nor does a validator here backtrack: its ``pattern``,
``patternProperties``, ``additionalProperties`` and ``unevaluatedProperties``
search with jsonschema-rs's engine, in time linear in the text
(:func:`_search`), since the text is often a peer's and the check runs on the
event loop.

``referencing`` is imported by the first validator made, not by importing
yieldmcp: most processes never check a schema.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, cast

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

    cls = _linear(validator_for(schema, default=default or Draft202012Validator))
    registry = nothing_elsewhere()
    return cls(dict(schema), registry=registry, format_checker=format_checker)


@functools.cache
def _linear(cls: type[Validator]) -> type[Validator]:
    """``cls`` whose ``pattern``, ``patternProperties`` and (beside those)
    ``additionalProperties`` and ``unevaluatedProperties`` search in time
    linear in the text (:func:`_search`), with jsonschema's own words."""
    from jsonschema.validators import extend  # pyright: ignore[reportUnknownVariableType]

    mine: dict[str, Any] = {
        "pattern": _pattern,
        "patternProperties": _pattern_properties,
        "unevaluatedProperties": _unevaluated_properties,
    }
    theirs = cls.VALIDATORS.get("additionalProperties")
    if theirs is not None:
        mine["additionalProperties"] = functools.partial(_additional_properties, theirs)
    kept = {k: v for k, v in mine.items() if k in cls.VALIDATORS}
    return cast("type[Validator]", extend(cls, kept))


def _pattern(validator: Any, pattern: Any, instance: Any, schema: Any) -> Any:
    # jsonschema's own "pattern", but for the search (and its message)
    from jsonschema import ValidationError

    if validator.is_type(instance, "string") and not _search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, properties: Any, instance: Any, schema: Any
) -> Any:
    # jsonschema's own "patternProperties", but for the search
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in properties.items():
        for key, value in instance.items():
            if _search(pattern, key):
                yield from validator.descend(
                    value, subschema, path=key, schema_path=pattern
                )


def _additional_properties(
    theirs: Any, validator: Any, allowed: Any, instance: Any, schema: Any
) -> Any:
    # jsonschema's own "additionalProperties" (``theirs``, which searches
    # keys only beside patternProperties), but for that search, and its words
    from jsonschema import ValidationError

    patterns: Any = schema.get("patternProperties")
    if not patterns or not validator.is_type(instance, "object"):
        yield from theirs(validator, allowed, instance, schema)
        return
    properties = schema.get("properties", {})
    extras = {
        key
        for key in instance
        if key not in properties and not any(_search(p, key) for p in patterns)
    }
    if validator.is_type(allowed, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], allowed, path=extra)
    elif not allowed and extras:
        listed = _listed(sorted(extras), "does", "do")
        shown = ", ".join(repr(each) for each in sorted(patterns))
        yield ValidationError(f"{listed} not match any of the regexes: {shown}")


def _unevaluated_properties(
    validator: Any, unevaluated: Any, instance: Any, schema: Any
) -> Any:
    # jsonschema's own "unevaluatedProperties" (4.26), with its words, but
    # for the search of the keys that patternProperties evaluate
    from jsonschema import ValidationError

    if not validator.is_type(instance, "object"):
        return
    evaluated = _evaluated_keys(validator, instance, schema)
    failed = [
        key
        for key in instance
        if key not in evaluated and not _valid(validator, instance[key], unevaluated)
    ]
    if not failed:
        return
    if unevaluated is False:
        listed = _listed(sorted(failed, key=str), "was", "were")
        yield ValidationError(
            f"Unevaluated properties are not allowed ({listed} unexpected)"
        )
    else:
        listed = _listed(failed, "was", "were")
        yield ValidationError(
            "Unevaluated properties are not valid under the given schema "
            f"({listed} unevaluated and invalid)"
        )


def _listed(keys: list[str], one: str, many: str) -> str:
    """``'a', 'b' were``: keys quoted, and the verb that agrees with them
    (jsonschema's ``extras_msg``)."""
    joined = ", ".join(repr(key) for key in keys)
    return f"{joined} {one if len(keys) == 1 else many}"


def _valid(validator: Any, instance: Any, schema: Any) -> bool:
    """Whether ``instance`` is valid under the subschema ``schema``."""
    return next(validator.descend(instance, schema), None) is None


def _evaluated_keys(validator: Any, instance: Any, schema: Any) -> set[str]:
    """The keys of ``instance`` that ``schema`` evaluates: jsonschema's
    ``find_evaluated_property_keys_by_schema`` (4.26), but for the search."""
    if validator.is_type(schema, "boolean"):
        return set()
    keys: set[str] = set()

    def within(subschema: Any, by: Any = validator) -> None:
        keys.update(_evaluated_keys(by, instance, subschema))

    for keyword in ("$ref", "$dynamicRef"):
        if (reference := schema.get(keyword)) is not None:
            # jsonschema keeps the resolver private; its own function uses it too
            resolved = validator._resolver.lookup(reference)
            by = validator.evolve(
                schema=resolved.contents,
                _resolver=resolved.resolver,
            )
            within(resolved.contents, by)
    properties = schema.get("properties")
    if validator.is_type(properties, "object"):
        keys.update(properties.keys() & instance.keys())
    for keyword in ("additionalProperties", "unevaluatedProperties"):
        if (subschema := schema.get(keyword)) is not None:
            keys.update(
                key
                for key, value in instance.items()
                if _valid(validator, value, subschema)
            )
    for pattern in schema.get("patternProperties", ()):
        keys.update(key for key in instance if _search(pattern, key))
    for name, subschema in schema.get("dependentSchemas", {}).items():
        if name in instance:
            within(subschema)
    for keyword in ("allOf", "oneOf", "anyOf"):
        for subschema in schema.get(keyword, []):
            if _valid(validator, instance, subschema):
                within(subschema)
    if "if" in schema:
        if validator.evolve(schema=schema["if"]).is_valid(instance):
            within(schema["if"])
            if "then" in schema:
                within(schema["then"])
        elif "else" in schema:
            within(schema["else"])
    return keys


def _search(pattern: str, text: str) -> bool:
    r"""Whether ``pattern`` (ECMA-262, as JSON Schema says) matches somewhere
    in ``text``.

    A schema's author picks the pattern, a peer the text (a client's
    arguments or answers, a model's output), and the check runs on the event
    loop. Python's ``re`` backtracks: 30 characters against ``^(\w+\s?)*$``,
    an ordinary "a name" pattern, took minutes, and every other call waited.
    jsonschema-rs's engine needs no backtracking for such a pattern, and
    stops at a bound for one that does (lookarounds, backreferences): the
    text then does not match. Only a pattern jsonschema-rs cannot compile
    (no ECMA-262 regex) is searched with ``re``, as jsonschema did.
    """
    matches = _matcher(pattern)
    if matches is None:
        return re.search(pattern, text) is not None
    try:
        return matches(text)
    except ValueError:  # a lone surrogate, which no UTF-8 text holds
        return matches(_LONE_SURROGATE.sub("\ufffd", text))


@functools.lru_cache(maxsize=1024)
def _matcher(pattern: str) -> Callable[[str], bool] | None:
    from jsonschema_rs import validator_for

    try:
        check = validator_for({"pattern": pattern}, offline=True)
    except ValueError:
        return None
    return check.is_valid


_LONE_SURROGATE: Final = re.compile("[\ud800-\udfff]")

"""Validation of recorded provider JSON against the official SDKs' own types.

Responses and stream events are validated with the SDKs' pydantic models, and
then walked key by key against the validated model, because several SDK models
accept (or silently drop) unknown keys: a typo in a recording must fail.
Requests are checked with a strict walker over the SDKs' request ``TypedDict``
types (required keys, unknown keys, literals, unions, recursion).

Ollama has no typed SDK for the server's full shape (the ``ollama`` package's
models drop ``tool_calls[].id``, ``function.index`` and ``tool_call_id``), so
those server-only fields are allow-listed here, from the server's Go types.

The checks against each SDK's types are in :mod:`.sdk_checks`, imported when a
check first runs: the SDKs take seconds to import, and every pytest worker
imports every test module at collection. The test modules that run them share
one worker (``pytest.mark.xdist_group(SDK_GROUP)``), so one worker pays.
"""

from __future__ import annotations

import collections.abc
import re
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NotRequired, Required

from pydantic import BaseModel
from typing_extensions import ReadOnly, is_typeddict

from tests.bridge.providers.recordings import PROVIDERS as PROVIDERS

SDK_GROUP = "provider-sdks"  # the xdist group of the modules that run the checks

# --- strict TypedDict walker (requests) ------------------------------------------

_SEQUENCES = {
    list,
    collections.abc.Iterable,
    collections.abc.Sequence,
    typing.Iterable,
    typing.Sequence,
    typing.List,  # noqa: UP006
}
_MAPPINGS = {dict, collections.abc.Mapping, typing.Dict, typing.Mapping}  # noqa: UP006


def typed_errors(value: Any, tp: Any, path: str = "$") -> list[str]:
    """Where ``value`` breaks the TypedDict-based type ``tp`` (empty: it fits)."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any or tp is object:
        return []
    if origin in (typing.Annotated, Required, NotRequired, ReadOnly):
        return typed_errors(value, args[0], path)
    if origin in (typing.Union, types.UnionType):
        return _union_errors(value, args, path)
    if origin is typing.Literal:
        ok = any(value == a and type(value) is type(a) for a in args)
        return [] if ok else [f"{path}: {value!r} not in {args}"]
    if tp is type(None):
        return [] if value is None else [f"{path}: expected null"]
    if is_typeddict(tp):
        return _typeddict_errors(value, tp, path)
    if origin in _SEQUENCES:
        if not isinstance(value, list):
            return [f"{path}: expected a list"]
        return [
            e
            for i, v in enumerate(value)
            for e in typed_errors(v, args[0], f"{path}[{i}]")
        ]
    if origin in _MAPPINGS or tp in _MAPPINGS:
        if not isinstance(value, dict):
            return [f"{path}: expected an object"]
        inner = args[1] if args else Any
        return [
            e for k, v in value.items() for e in typed_errors(v, inner, f"{path}.{k}")
        ]
    return _scalar_errors(value, tp, path)


def _scalar_errors(value: Any, tp: Any, path: str) -> list[str]:
    if tp is bool:
        ok = isinstance(value, bool)
    elif tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif tp is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    elif isinstance(tp, type):
        ok = isinstance(value, tp)
    else:
        ok = True  # TypeVars and exotic forms: not used by the shapes we emit
    return [] if ok else [f"{path}: {value!r} is not {tp}"]


def _union_errors(value: Any, members: Iterable[Any], path: str) -> list[str]:
    attempts = [typed_errors(value, m, path) for m in members]
    if any(not a for a in attempts):
        return []
    return min(attempts, key=len)


def _typeddict_errors(value: Any, tp: Any, path: str) -> list[str]:
    if not isinstance(value, dict):
        return [f"{path}: expected an object for {tp.__name__}"]
    hints = typing.get_type_hints(tp, include_extras=True)
    wire = {_alias(name, hint): name for name, hint in hints.items()}
    errors = [
        f"{path}: missing required key {name!r} of {tp.__name__}"
        for name in tp.__required_keys__
        if _alias(name, hints[name]) not in value
    ]
    for key, item in value.items():
        if key not in wire:
            errors.append(f"{path}.{key}: unknown key for {tp.__name__}")
        else:
            errors += typed_errors(item, hints[wire[key]], f"{path}.{key}")
    return errors


def _alias(name: str, hint: Any) -> str:
    for meta in getattr(hint, "__metadata__", ()):
        alias = getattr(meta, "alias", None)
        if isinstance(alias, str):
            return alias
    return name


# --- pydantic key walker (responses, events) --------------------------------------


def unknown_keys(data: Any, instance: Any, path: str = "$") -> list[str]:
    """Keys of ``data`` that the validated model ``instance`` has no field for."""
    if isinstance(instance, BaseModel) and isinstance(data, dict):
        fields = type(instance).model_fields
        wire = {name: name for name in fields}
        wire.update({f.alias: name for name, f in fields.items() if f.alias})
        found: list[str] = []
        for key, item in data.items():
            if key not in wire:
                found.append(f"{path}.{key}")
            else:
                found += unknown_keys(
                    item, getattr(instance, wire[key]), f"{path}.{key}"
                )
        return found
    if isinstance(instance, list | tuple) and isinstance(data, list):
        return [
            e
            for i, (d, v) in enumerate(zip(data, instance, strict=False))
            for e in unknown_keys(d, v, f"{path}[{i}]")
        ]
    if isinstance(instance, dict) and isinstance(data, dict):
        return [
            e
            for k, d in data.items()
            if k in instance
            for e in unknown_keys(d, instance[k], f"{path}.{k}")
        ]
    return []


def _generic(path: str) -> str:
    return re.sub(r"\[\d+\]", "[]", path)


def check_model(
    data: Any, validate: Callable[[Any], Any], allow: Iterable[str] = ()
) -> Any:
    """Validate ``data`` and fail on any key the model does not know."""
    instance = validate(data)
    extra = [p for p in unknown_keys(data, instance) if _generic(p) not in set(allow)]
    assert extra == [], f"keys unknown to the SDK model: {extra}"
    return instance


# --- per provider (tests/bridge/providers/sdk_checks.py, imported on first use) ----


def validate_response(provider: str, body: Mapping[str, Any]) -> None:
    """``body`` is a whole (non-streamed) response of ``provider``."""
    from tests.bridge.providers import sdk_checks

    sdk_checks.validate_response(provider, body)


def validate_event(provider: str, event: Mapping[str, Any]) -> None:
    """``event`` is one parsed stream event (SSE data or NDJSON line)."""
    from tests.bridge.providers import sdk_checks

    sdk_checks.validate_event(provider, event)


def request_errors(provider: str, body: Mapping[str, Any]) -> list[str]:
    """Where ``body`` breaks ``provider``'s request types (empty: it fits)."""
    from tests.bridge.providers import sdk_checks

    return sdk_checks.request_errors(provider, body)

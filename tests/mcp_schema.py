"""Validate JSON against the official, vendored MCP schemas (test helper).

The schemas live in ``tests/data/mcp-schema/<era>/schema.json``, pinned in
``PINNED.json``. Use :func:`validate` for one type and :func:`validate_message`
for a whole JSON-RPC message; both raise :class:`SchemaViolation` (an
``AssertionError``) listing every error, so a failing test says exactly what is
wrong::

    from tests.mcp_schema import validate, validate_message

    validate("2025-11-25", "CreateMessageRequestParams", params)
    validate_message("2025-11-25", frame)                        # request/notification
    validate_message("2025-11-25", reply, answering="tools/call")  # response

Validators are built once per (era, type) and cached. Formats are annotations
only (``jsonschema``'s default), as the official examples assume. This module
does not know yieldmcp's encoders; it only knows the schemas.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, TypeAlias, cast

import jsonschema

__all__ = [
    "DATA",
    "ERAS",
    "EXAMPLES",
    "EXAMPLE_FILES",
    "Era",
    "SchemaViolation",
    "errors",
    "example_id",
    "is_valid",
    "load_example",
    "method_type",
    "result_type",
    "root",
    "validate",
    "validate_message",
]

Era: TypeAlias = Literal["2025-11-25", "2026-07-28"]
ERAS: tuple[Era, ...] = ("2025-11-25", "2026-07-28")
DATA = Path(__file__).resolve().parent / "data" / "mcp-schema"
EXAMPLES = DATA / "2026-07-28" / "examples"
"""The official 2026-07-28 example messages, one folder per schema type."""
EXAMPLE_FILES = sorted(EXAMPLES.rglob("*.json"))


def example_id(path: Path) -> str:
    """A test id for an example: its path below :data:`EXAMPLES`."""
    return path.relative_to(EXAMPLES).as_posix()


def load_example(path: Path | str) -> Any:
    """An example's JSON, by path or by its name below :data:`EXAMPLES`."""
    full = EXAMPLES / path if isinstance(path, str) else path
    return json.loads(full.read_text(encoding="utf-8"))


class SchemaViolation(AssertionError):
    """An instance does not validate against the official MCP schema."""


@functools.cache
def root(era: str) -> dict[str, Any]:
    """The parsed official schema of ``era`` (``{"$schema", "$defs"}``)."""
    if era not in ERAS:
        raise ValueError(f"unknown MCP era {era!r}; expected one of {ERAS}")
    return json.loads((DATA / era / "schema.json").read_text(encoding="utf-8"))


@functools.cache
def _validator(era: str, type_name: str) -> jsonschema.Draft202012Validator:
    schema = root(era)
    if type_name not in schema["$defs"]:
        raise KeyError(f"{type_name!r} is not a type of the {era} schema")
    return jsonschema.Draft202012Validator(
        {
            "$schema": schema["$schema"],
            "$defs": schema["$defs"],
            "$ref": f"#/$defs/{type_name}",
        }
    )


def errors(era: str, type_name: str, instance: Any) -> list[str]:
    """Every violation of ``type_name`` by ``instance``, as ``path: message``."""
    validator = _validator(era, type_name)
    found = validator.iter_errors(instance)  # pyright: ignore[reportUnknownMemberType]
    return sorted(f"{e.json_path}: {e.message}" for e in found)


def is_valid(era: str, type_name: str, instance: Any) -> bool:
    """Whether ``instance`` is a valid ``type_name`` of ``era``."""
    validator = _validator(era, type_name)
    return bool(validator.is_valid(instance))  # pyright: ignore[reportUnknownMemberType]


def validate(era: str, type_name: str, instance: Any) -> None:
    """Raise :class:`SchemaViolation` unless ``instance`` is a ``type_name``."""
    problems = errors(era, type_name, instance)
    if problems:
        raise SchemaViolation(
            f"not a valid {era} {type_name}:\n  " + "\n  ".join(problems)
        )


# --- whole messages -------------------------------------------------------------------


@functools.cache
def _methods(era: str) -> dict[str, str]:
    table: dict[str, str] = {}
    for name, schema in root(era)["$defs"].items():
        method = schema.get("properties", {}).get("method", {}).get("const")
        if method is None or name.startswith(("Client", "Server", "JSONRPC")):
            continue
        table[method] = name
    return table


def method_type(era: str, method: str) -> str:
    """The schema type of a ``method`` request or notification in ``era``."""
    try:
        return _methods(era)[method]
    except KeyError:
        raise SchemaViolation(f"{method!r} is not a method of {era}") from None


def _is_jsonrpc_request(era: str, type_name: str) -> bool:
    return "id" in root(era)["$defs"][type_name].get("required", ())


def result_type(era: str, method: str, result: Any = None) -> str:
    """The schema type of a result answering ``method`` in ``era``.

    ``XRequest`` is answered by ``XResult`` (``EmptyResult`` when the schema has
    none, e.g. ``ping``). In 2026-07-28 a result whose ``resultType`` is
    ``"input_required"`` is an ``InputRequiredResult``.
    """
    request = method_type(era, method)
    if not _is_jsonrpc_request(era, request):
        raise SchemaViolation(_not_a_request(era, method))
    if era == "2026-07-28" and _result_kind(result) == "input_required":
        return "InputRequiredResult"
    name = request.removesuffix("Request") + "Result"
    return name if name in root(era)["$defs"] else "EmptyResult"


def _result_kind(result: Any) -> Any:
    return (
        cast(dict[str, Any], result).get("resultType")
        if isinstance(result, dict)
        else None
    )


def _not_a_request(era: str, method: str) -> str:
    return (
        f"{method!r} is not a JSON-RPC request in {era}; in 2026-07-28 it travels "
        f"inside InputRequiredResult.inputRequests (validate it there, or as the "
        f"bare {{method, params}} type)"
    )


def validate_message(
    era: str,
    message: Mapping[str, Any],
    *,
    answering: str | None = None,
    result_type_name: str | None = None,
) -> str:
    """Validate a whole JSON-RPC ``message``; return the type it was checked as.

    A request or notification is checked as the JSON-RPC envelope and as its
    method's type (``tools/call`` -> ``CallToolRequest``). A result response is
    checked as the envelope and its ``result`` as the type answering the method
    given as ``answering`` (or as ``result_type_name`` when given, e.g.
    ``CreateTaskResult``). An error response is checked as
    ``JSONRPCErrorResponse``.

    Raises:
        SchemaViolation: the message is not valid in ``era`` (or not a request
            there, such as ``sampling/createMessage`` in 2026-07-28).
    """
    if "method" in message:
        name = method_type(era, str(message["method"]))
        if "id" in message:
            if not _is_jsonrpc_request(era, name):
                raise SchemaViolation(_not_a_request(era, str(message["method"])))
            validate(era, "JSONRPCRequest", message)
        else:
            validate(era, "JSONRPCNotification", message)
        validate(era, name, message)
        return name
    if "error" in message:
        validate(era, "JSONRPCErrorResponse", message)
        return "JSONRPCErrorResponse"
    if answering is None and result_type_name is None:
        raise TypeError(
            "validate_message: a result response needs answering=<the method it "
            "answers> (or result_type_name=...)"
        )
    validate(era, "JSONRPCResultResponse", message)
    if result_type_name is None:
        assert answering is not None
        result_type_name = result_type(era, answering, message.get("result"))
    validate(era, result_type_name, message["result"])
    return result_type_name

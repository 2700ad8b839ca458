"""Strict validation of wire JSON against pydantic models, unions by tag.

Owns :func:`check_json` (a wire model's verdict, validating one member of a
tagged union instead of all of them), :func:`check_form_properties` (an
elicitation form's properties against the MCP wire schema),
:func:`plain_form_properties`, :func:`plain_requested_schema` and
:func:`plain_form_content` (a form whose fields are each exactly one of
MCP's shapes, and its plain answers, recognised without any era's models) and
:func:`offline_validator` (a JSON Schema validator that fetches no
``$ref``), and what no JSON message can carry (:mod:`.sendable`:
:func:`sendable_schema`, a schema with no non-finite ``default``, and
:func:`unsendable`, the first non-finite number or lone surrogate in a value)
and how deep a JSON-RPC message may nest and still be read (:mod:`.depth`:
:data:`MAX_MESSAGE_DEPTH`, :func:`nesting`, :func:`nested_too_deep`),
which ``encoders``, ``decoders`` and ``bridge`` use through
:mod:`runtime.lowlevel`.

It does not know MCP's models (the caller passes them) or the JSON forms of
the runtime's values (:mod:`runtime.codec`).
"""

from .check import check_form_properties as check_form_properties
from .check import check_json as check_json
from .check import plain_form_content as plain_form_content
from .check import plain_form_properties as plain_form_properties
from .check import plain_requested_schema as plain_requested_schema
from .check import tagged_model as tagged_model

__all__ = [
    "check_form_properties",
    "check_json",
    "plain_form_content",
    "plain_form_properties",
    "plain_requested_schema",
    "tagged_model",
]

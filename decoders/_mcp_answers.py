"""Reading a client's answers, server side: ``CreateMessageResult``, ``ElicitResult``.

Owns :func:`sample_reply` (the result must come from the ``assistant``; usage
read from ``_meta``), :func:`elicit_reply` and :func:`form_reply` (accepted form
content checked against the requested schema, JSON Schema 2020-12 with formats
not asserted; content sent with a decline, a cancel or a URL-mode answer is
dropped). Numbers follow the TypeScript schema: a float answers a ``number``
field although the generated ``schema.json`` types answers as ``integer``
(PROTOCOL.md §3.2); ``30.0`` answers an ``integer`` field.

It does not decide what a declined or malformed answer means for the tool (the
runtime does), and reads no request (``_mcp_requests``).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from runtime.codec import USAGE_META_KEY, sample_reply_from_json
from runtime.errors import RemoteProtocolError
from runtime.lowlevel import offline_validator, plain_form_content
from runtime.replies import ElicitReply, SampleReply
from runtime.requests import ElicitationRequest

from ._forms import surely_valid
from ._mcp_wire import (
    JSONObject,
    check_blocks,
    content_list,
    json_object,
    plain_text_block,
    short,
    validate,
)

if TYPE_CHECKING:
    import jsonschema
    from jsonschema.protocols import Validator

__all__ = ["elicit_reply", "form_reply", "sample_reply"]


def sample_reply(result: object) -> SampleReply:
    """The reply in a client's ``CreateMessageResult``.

    Content may be one block or a list; usage is read from
    ``_meta["io.yieldmcp/usage"]`` when present.

    Raises:
        RemoteProtocolError: ``result`` is not a valid sampling result.
    """
    data = json_object(result, "sampling result")
    if not plain_sampling_result(data):
        validate("CreateMessageResult", data, "sampling result")
    if data["role"] != "assistant":
        raise RemoteProtocolError(
            f"a sampling result must have role 'assistant', got {data['role']!r}"
        )
    check_blocks(content_list(data["content"]))
    _check_usage(data.get("_meta"))
    return sample_reply_from_json(data)


# The answers most clients send, recognised without building either era's
# models (a fifth of a process's start-up, paid at the first answer
# otherwise): each shape below is valid in both eras, spelled with only the
# keys it defines and values of their exact JSON types. Anything else is
# validated as before (a False here says only "not sure").


def plain_sampling_result(data: JSONObject) -> bool:
    """A ``CreateMessageResult`` of one plain text block."""
    return (
        data.keys() <= {"role", "content", "model", "stopReason", "_meta"}
        and data.get("role") in ("assistant", "user")
        and type(data.get("model")) is str
        and type(data.get("stopReason", "")) is str
        and type(data.get("_meta", {})) is dict
        and plain_text_block(data.get("content"))
    )


def plain_elicit_result(data: JSONObject) -> bool:
    """An ``ElicitResult`` whose content (if any) holds plain field values."""
    return (
        data.keys() <= {"action", "content", "_meta"}
        and data.get("action") in ("accept", "decline", "cancel")
        and type(data.get("_meta", {})) is dict
        and ("content" not in data or plain_form_content(data["content"]))
    )


def _check_usage(meta: Any) -> None:
    values: JSONObject = cast(JSONObject, meta) if isinstance(meta, dict) else {}
    usage: Any = values.get(USAGE_META_KEY)
    if usage is None:
        return
    counts: JSONObject = cast(JSONObject, usage) if isinstance(usage, dict) else {}
    for name in ("inputTokens", "outputTokens"):
        value: Any = counts.get(name)
        if not (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
            raise RemoteProtocolError(
                f"_meta[{USAGE_META_KEY!r}].{name} must be a non-negative "
                f"integer, got {value!r}"
            )


def elicit_reply(result: object, request: ElicitationRequest) -> ElicitReply:
    """The reply in a client's ``ElicitResult`` to ``request``.

    Accepted form content is validated against ``request.requested_schema``.
    Content sent with ``decline``/``cancel``, or in URL mode, is dropped.

    Raises:
        RemoteProtocolError: ``result`` is not a valid ``ElicitResult``, or the
            accepted content does not match the requested schema (the message
            names the field).
    """
    schema = None if request.mode == "url" else request.requested_schema
    return _elicit_reply(result, schema)


def form_reply(result: object, requested_schema: Mapping[str, Any]) -> ElicitReply:
    """:func:`elicit_reply` to a form-mode request, given only its
    ``requestedSchema``: a server reading the answer to its own form has the
    schema at hand, and need not build the request again to read it."""
    return _elicit_reply(result, requested_schema)


def _elicit_reply(result: object, schema: Mapping[str, Any] | None) -> ElicitReply:
    """The reply; accepted content checked against ``schema`` (None: URL mode)."""
    data = json_object(result, "elicitation result")
    if not plain_elicit_result(data):
        validate("ElicitResult", data, "elicitation result")
    action = data["action"]
    if action != "accept" or schema is None:
        return ElicitReply(action=action)
    content: JSONObject | None = data.get("content")
    _check_answer(schema, content or {})
    return ElicitReply(action="accept", content=content)


def _check_answer(schema: Mapping[str, Any], content: JSONObject) -> None:
    if surely_valid(schema, content):
        return  # the common case, confirmed without a full validation
    validator = _answer_validator(json.dumps(schema, sort_keys=True))
    found: list[jsonschema.ValidationError] = list(
        validator.iter_errors(content)  # pyright: ignore[reportUnknownMemberType]
    )
    if not found:
        return
    error = min(found, key=lambda e: [str(p) for p in e.path])
    expected: Any = error.validator_value
    if error.validator == "required" and isinstance(expected, list):
        missing = [p for p in cast("list[Any]", expected) if p not in content]
        field, reason = (missing or ["?"])[0], "is required but missing"
    else:
        # Name the rule, never the value: elicited content may be private, and
        # this message can reach the model as a tool error.
        rule = short(json.dumps(expected, default=str))
        field, reason = (
            (list(error.path) or ["?"])[0],
            f"breaks {error.validator}: {rule}",
        )
    raise RemoteProtocolError(
        f"the accepted elicitation content does not match the requested schema: "
        f"field {field!r} {reason}"
    )


@functools.lru_cache(maxsize=256)
def _answer_validator(schema_json: str) -> Validator:
    return offline_validator(json.loads(schema_json))

"""JSON-RPC 2.0 messages: parsing, classification, serialisation. Sans-IO.

This module turns bytes into one of six frozen values — :class:`Request`,
:class:`Notification`, :class:`Response`, :class:`ErrorResponse`,
:class:`Invalid` (input that deserves an error reply) or :class:`Ignored` (a
response-shaped message that is unusable; responses are never answered, or two
peers could trade error replies forever) — and values back into compact bytes
with no embedded newline. It knows nothing about MCP.

Id hygiene (after the MCP SDK's dispatcher): ids are ints or strings, never
``null``, floats or booleans (``True`` would alias ``1``). A response id of
``"7"`` correlates with our request ``7``: peers sometimes echo ids as strings.
Batches are refused: MCP since 2025-06-18 sends one message per frame.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from typing import Any, Final, TypeAlias, TypeGuard, cast, final

import attrs
import pydantic_core

from runtime.errors import LocalProtocolError
from runtime.lowlevel import MAX_MESSAGE_DEPTH

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "NESTED_TOO_DEEP",
    "PARSE_ERROR",
    "ErrorData",
    "ErrorResponse",
    "Ignored",
    "Invalid",
    "Message",
    "Notification",
    "Request",
    "RequestId",
    "Response",
    "coerce_id",
    "dumps",
    "parse",
]

log = logging.getLogger("yieldmcp")

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603

RequestId: TypeAlias = int | str


@final
@attrs.frozen
class ErrorData:
    """A JSON-RPC error object."""

    code: int
    message: str
    data: Any = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            out["data"] = self.data
        return out


@final
@attrs.frozen
class Request:
    id: RequestId
    method: str
    params: Mapping[str, Any] | None = None


@final
@attrs.frozen
class Notification:
    method: str
    params: Mapping[str, Any] | None = None


@final
@attrs.frozen
class Response:
    id: RequestId
    result: Any


@final
@attrs.frozen
class ErrorResponse:
    id: RequestId | None
    error: ErrorData


@final
@attrs.frozen
class Invalid:
    """Input we must answer with ``error`` (echoing ``id`` when we could read it).

    ``lost``: it is JSON nested too deep to read, and whether it was a reply,
    and to which request, could not be found either; a request it may have
    answered would wait for ever, so the session fails those it waits on.
    """

    id: RequestId | None
    error: ErrorData
    lost: bool = False


@final
@attrs.frozen
class Ignored:
    """A message we cannot use and must not answer: a response (or a
    notification nested too deep to read).

    ``answers``: the id of the request it is the response to, when that could
    be read though the rest could not be used (JSON nested too deep; both a
    result and an error; a malformed error; another ``jsonrpc``): that
    request fails, saying ``reason``, rather than waits for a reply that has
    come.
    """

    reason: str
    answers: RequestId | None = None
    unmatched: bool = False
    """A response whose id is no request id (``true``, a list, ``null`` with a
    result): it answers something, and what cannot be found."""


Message: TypeAlias = Request | Notification | Response | ErrorResponse


def _is_id(value: object) -> TypeGuard[RequestId]:
    return isinstance(value, str) or (
        isinstance(value, int) and not isinstance(value, bool)
    )


def coerce_id(value: object) -> RequestId | None:
    """A response id as we would have minted it: ``"7"`` becomes ``7``."""
    if isinstance(value, str) and value.isdigit() and value.isascii():
        return int(value)
    return value if _is_id(value) else None


def parse(data: bytes | str) -> Message | Invalid | Ignored:
    """Classify one JSON-RPC message. Never raises: bad input becomes Invalid.

    A lone surrogate escape (``"\\udce9"``, which JavaScript's
    ``JSON.stringify`` writes for a broken string) is read as U+FFFD: the JSON
    grammar allows it, Unicode text cannot hold it, and refusing the whole
    message would leave the request it answers waiting for ever.

    JSON nested deeper than :data:`~runtime.lowlevel.MAX_MESSAGE_DEPTH` levels
    (the parser's limit) is refused saying so, and, for the same reason, its
    id is looked for with Python's ``json``, which reads deeper (up to its
    recursion limit; the transport has bounded the message's size already):
    a request is answered ``-32700`` with its id, a response is
    :class:`Ignored` naming the request it answers, a notification is
    :class:`Ignored`; one whose id cannot be found is :class:`Invalid` and
    ``lost``.
    """
    try:
        value: Any = pydantic_core.from_json(data)
    except ValueError as exc:
        raw = data.encode() if isinstance(data, str) else data
        if _TOO_DEEP in str(exc):
            return _too_deep(raw)
        if b"\\ud" not in raw.lower():
            return Invalid(None, ErrorData(PARSE_ERROR, "Parse error: not valid JSON"))
        try:
            value = pydantic_core.from_json(_SURROGATE_ESCAPE.sub(_lone_to_fffd, raw))
        except ValueError as again:
            if _TOO_DEEP in str(again):
                return _too_deep(raw)
            return Invalid(None, ErrorData(PARSE_ERROR, "Parse error: not valid JSON"))
    if not isinstance(value, dict):
        kind = (
            "batches are not supported" if isinstance(value, list) else "not an object"
        )
        return Invalid(None, ErrorData(INVALID_REQUEST, f"Invalid request: {kind}"))
    return _classify(cast("dict[str, Any]", value))


_TOO_DEEP: Final = "recursion limit exceeded"  # pydantic_core's (jiter's) words

_DEEPER: Final = (
    f"nested deeper than {MAX_MESSAGE_DEPTH} levels, the most a message may"
)

NESTED_TOO_DEEP: Final = f"Parse error: JSON {_DEEPER}"
"""Why a message nested past the parser's depth was refused."""


def _too_deep(raw: bytes) -> Invalid | Ignored:
    """A message ``pydantic_core`` refused as nested too deep: what its
    envelope says, read by ``json`` (see :func:`parse`)."""
    error = ErrorData(PARSE_ERROR, NESTED_TOO_DEEP)
    try:
        value: Any = json.loads(raw)
    except (ValueError, RecursionError):
        return Invalid(None, error, lost=True)
    if not isinstance(value, dict):
        return Invalid(None, error)  # not a message: a batch, say
    envelope = cast("dict[str, Any]", value)
    raw_id = envelope.get("id")
    if isinstance(envelope.get("method"), str):
        if "id" not in envelope:
            return Ignored(f"a notification {_DEEPER}")
        return Invalid(raw_id if _is_id(raw_id) else None, error)
    if "result" in envelope or "error" in envelope:
        reason = f"a response {_DEEPER}"
        request_id = coerce_id(raw_id)
        if request_id is None:
            return Invalid(None, error, lost=True)
        return Ignored(reason, answers=request_id)
    return Invalid(raw_id if _is_id(raw_id) else None, error)


_SURROGATE_ESCAPE: Final = re.compile(
    rb"\\\\"  # an escaped backslash: what follows it is no escape
    rb"|\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}"  # a pair
    rb"|\\u[dD][89a-fA-F][0-9a-fA-F]{2}"  # a surrogate alone
)


def _lone_to_fffd(match: re.Match[bytes]) -> bytes:
    token = match.group()
    return token if token == b"\\\\" or len(token) == 12 else b"\\ufffd"


def _classify(value: dict[str, Any]) -> Message | Invalid | Ignored:
    raw_id = value.get("id")
    has_id = "id" in value
    if value.get("jsonrpc") != "2.0" and "method" in value:
        return _invalid(raw_id, 'jsonrpc must be "2.0"')
    method = value.get("method")
    if method is not None:
        return _request_or_notification(value, method, raw_id, has_id)
    if "result" in value or "error" in value:
        return _response(value, raw_id)
    return _invalid(raw_id, "a message needs a method, or a result or an error")


def _response(value: dict[str, Any], raw_id: Any) -> Message | Ignored:
    """A response is never answered, however malformed: that way lie loops.
    One that names its request, and cannot be used, fails that request. An
    integral number id (``7.0``: JSON has one kind of number) is ``7``."""
    if isinstance(raw_id, float) and raw_id.is_integer():
        raw_id = int(raw_id)
    answers = raw_id if _is_id(raw_id) else None
    if value.get("jsonrpc") != "2.0":
        return Ignored('a response with jsonrpc other than "2.0"', answers=answers)
    if "result" in value and "error" in value:
        return Ignored("a response with both result and error", answers=answers)
    if "result" in value:
        if not _is_id(raw_id):
            return Ignored("a result without an int or string id", unmatched=True)
        return Response(raw_id, value["result"])
    error = _error_data(value["error"])
    if error is None:
        return Ignored("a response with a malformed error object", answers=answers)
    if raw_id is None or _is_id(raw_id):
        return ErrorResponse(raw_id, error)
    return Ignored(
        "an error response whose id is not an int, a string or null", unmatched=True
    )


def _request_or_notification(
    value: dict[str, Any], method: Any, raw_id: Any, has_id: bool
) -> Message | Invalid:
    if not isinstance(method, str):
        return _invalid(raw_id, "method must be a string")
    params: Any = value.get("params")
    if params is not None and not isinstance(params, dict):
        return _invalid(raw_id, "params must be an object")
    params = cast("dict[str, Any] | None", params)
    if not has_id:
        return Notification(method, params)
    if not _is_id(raw_id):
        return _invalid(None, "id must be an int or a string")
    return Request(raw_id, method, params)


def _invalid(raw_id: Any, why: str) -> Invalid:
    request_id = raw_id if _is_id(raw_id) else None
    return Invalid(request_id, ErrorData(INVALID_REQUEST, f"Invalid request: {why}"))


def _error_data(value: Any) -> ErrorData | None:
    if not isinstance(value, dict):
        return None
    error = cast("dict[str, Any]", value)
    code, message = error.get("code"), error.get("message")
    if not (isinstance(code, int) and not isinstance(code, bool)):
        return None
    return ErrorData(
        code, message if isinstance(message, str) else "", error.get("data")
    )


def to_json(message: Message) -> dict[str, Any]:
    """The JSON object for ``message``."""
    match message:
        case Request(id=request_id, method=method, params=params):
            out: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
            if params is not None:
                out["params"] = params
            return out
        case Notification(method=method, params=params):
            out = {"jsonrpc": "2.0", "method": method}
            if params is not None:
                out["params"] = params
            return out
        case Response(id=request_id, result=result):
            return {"jsonrpc": "2.0", "id": request_id, "result": result}
        case ErrorResponse(id=request_id, error=error):
            # An unknown id is left out: MCP's schemas refuse a null id.
            out = {"jsonrpc": "2.0", "error": error.to_json()}
            if request_id is not None:
                out["id"] = request_id
            return out


def dumps(message: Message) -> bytes:
    """Compact UTF-8 JSON for ``message``; never contains a newline.

    A reply whose result JSON cannot carry (an object pydantic cannot write,
    text UTF-8 cannot hold) becomes ``-32603`` for its request, and the
    server's log says why: one handler's bad value must not end the session,
    or the process, that was writing it. Any other message raises
    :class:`~runtime.errors.LocalProtocolError`.
    """
    try:
        return pydantic_core.to_json(to_json(message))
    except (pydantic_core.PydanticSerializationError, ValueError) as exc:
        if not isinstance(message, Response):
            raise LocalProtocolError(f"a message could not be written: {exc}") from None
        log.exception("the reply to request %r could not be written", message.id)
        failed = ErrorResponse(
            message.id,
            ErrorData(INTERNAL_ERROR, "Internal error: the reply could not be written"),
        )
        return pydantic_core.to_json(to_json(failed))

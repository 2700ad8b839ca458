"""The one place exceptions become JSON-RPC error objects.

Request handlers raise; the session calls :func:`error_data` and sends what it
returns. pydantic's and jsonschema's texts never reach the wire: invalid params
say which fields were wrong, not how the validator phrased it. Anything
unexpected is an opaque ``Internal error`` (the traceback goes to the server's
log, not to the peer). A store's failure is ``Internal error`` too, saying the
store failed and not where it is; the log has the store's words in one line,
with no traceback (an outage is expected, and the operator's).
"""

from __future__ import annotations

import logging

import pydantic

from bridge.durable import StoreError, StoreUnreadable
from runtime.errors import (
    CapabilityError,
    InvalidAnswer,
    RequestError,
    RequestTimeout,
    UrlElicitationRequired,
)

from .messages import INTERNAL_ERROR, INVALID_PARAMS, ErrorData

__all__ = [
    "STORE_FAILED",
    "STORE_UNREADABLE",
    "URL_ELICITATION_REQUIRED",
    "error_data",
    "store_failed",
]

URL_ELICITATION_REQUIRED = -32042

log = logging.getLogger("yieldmcp")


def error_data(exc: BaseException) -> ErrorData:
    """The JSON-RPC error a handler's exception is answered with."""
    match exc:
        case RequestError(code=code, message=message, data=data):
            return ErrorData(code, message, data)
        case pydantic.ValidationError():
            return ErrorData(INVALID_PARAMS, f"Invalid params: {_fields(exc)}")
        case UrlElicitationRequired():
            return ErrorData(
                URL_ELICITATION_REQUIRED,
                str(exc),
                {"elicitations": [_url_elicitation(e) for e in exc.elicitations]},
            )
        case CapabilityError() | InvalidAnswer() | RequestTimeout():
            return ErrorData(INVALID_PARAMS, str(exc))
        case StoreError():
            log.warning("the store failed while handling a request: %s", exc)
            return store_failed(exc)
        case _:
            log.error("internal error while handling a request", exc_info=exc)
            return ErrorData(INTERNAL_ERROR, "Internal error")


STORE_FAILED = "Internal error: the server's store failed; try again"
"""What a client is told of a store's failure (never where the store is)."""

STORE_UNREADABLE = (
    "Internal error: the server's store holds a record this server did not "
    "write and cannot read; asking again will not help"
)
"""What a client is told of a record no writer of ours made
(``StoreUnreadable``): unlike an outage, trying again reads it again."""


def store_failed(exc: BaseException | None = None) -> ErrorData:
    """The error of a request the store failed with ``exc`` (if known), the
    store's failure logged already (:func:`error_data` logs it, and says the
    same): :data:`STORE_UNREADABLE` for a record that cannot be read,
    :data:`STORE_FAILED` otherwise."""
    if isinstance(exc, StoreUnreadable):
        return ErrorData(INTERNAL_ERROR, STORE_UNREADABLE)
    return ErrorData(INTERNAL_ERROR, STORE_FAILED)


def _fields(exc: pydantic.ValidationError) -> str:
    problems = sorted(
        {".".join(str(p) for p in e["loc"]) or "<root>" for e in exc.errors()}
    )
    return "invalid or missing " + ", ".join(problems)


def _url_elicitation(effect: object) -> dict[str, str]:
    return {
        "mode": "url",
        "elicitationId": getattr(effect, "elicitation_id", ""),
        "url": getattr(effect, "url", ""),
        "message": getattr(effect, "message", ""),
    }

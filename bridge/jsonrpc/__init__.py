"""JSON-RPC 2.0, not MCP-aware: messages, the session, and error mapping.

Owns: parsing and serialising messages (:mod:`.messages`), the one place an
exception becomes a JSON-RPC error object (:mod:`.errors`), the session that
correlates ids, cancels in both directions and times out our requests
(:mod:`.session`), the protocols a transport implements (:mod:`.transport`),
and the timers of code that never waits (:mod:`.timers`).

Does not own: any MCP method, capability or era (``bridge.server``,
``bridge.client``), or how bytes move (``bridge.transports``). Imports nothing
else from ``bridge``.
"""

from .messages import INTERNAL_ERROR as INTERNAL_ERROR
from .messages import INVALID_PARAMS as INVALID_PARAMS
from .messages import INVALID_REQUEST as INVALID_REQUEST
from .messages import METHOD_NOT_FOUND as METHOD_NOT_FOUND
from .messages import PARSE_ERROR as PARSE_ERROR
from .messages import ErrorData as ErrorData
from .messages import ErrorResponse as ErrorResponse
from .messages import Ignored as Ignored
from .messages import Invalid as Invalid
from .messages import Message as Message
from .messages import Notification as Notification
from .messages import Request as Request
from .messages import RequestId as RequestId
from .messages import Response as Response
from .messages import coerce_id as coerce_id
from .messages import dumps as dumps
from .messages import parse as parse

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
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

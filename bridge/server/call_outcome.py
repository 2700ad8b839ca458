"""How a live 2025-11-25 call is answered with its outcome.

One function for both ways a call without a task ends (at once, or driven by
the session: :mod:`.live_calls`): a result, an ``isError`` result, or a
JSON-RPC error, as :func:`bridge.server.methods.tool_call_result` and
:mod:`bridge.jsonrpc.errors` say.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from bridge.jsonrpc.errors import error_data
from bridge.jsonrpc.messages import ErrorData
from bridge.jsonrpc.session import Session
from runtime import Tool
from runtime.lowlevel import Raised, Returned

from .methods import tool_call_result
from .questions import CallScope

if TYPE_CHECKING:
    from .offer import Offer

__all__ = ["outcome_json", "respond", "send"]


def respond(
    server: Offer,
    session: Session,
    scope: CallScope,
    tool: Tool[Any, Any],
    outcome: Returned | Raised,
) -> None:
    """Answer the call with its outcome."""
    send(session, scope, outcome_json(server, scope, tool, outcome))


def outcome_json(
    server: Offer, scope: CallScope, tool: Tool[Any, Any], outcome: Returned | Raised
) -> dict[str, Any]:
    """The response the outcome makes, less its id: ``{"result": ...}`` or
    ``{"error": ...}`` (kept as is by a durable call, so a later process can
    send it)."""
    debug = server.debug
    try:
        if isinstance(outcome, Returned):
            result = tool_call_result(tool, scope, value=outcome.value, debug=debug)
        else:
            error = cast(Exception, outcome.error)
            result = tool_call_result(tool, scope, error=error, debug=debug)
    except Exception as exc:
        return {"error": error_data(exc).to_json()}
    return {"result": result}


def send(session: Session, scope: CallScope, response: Mapping[str, Any]) -> None:
    """Send the response :func:`outcome_json` made."""
    if "error" in response:
        error: Mapping[str, Any] = response["error"]
        data = ErrorData(error["code"], error["message"], error.get("data"))
        session.respond_nowait(scope.request_id, error=data)
    else:
        session.respond_nowait(scope.request_id, response["result"])

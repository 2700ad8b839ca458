"""How a live 2025-11-25 call is answered with its outcome.

One function for both ways a call without a task ends (at once, or driven by
the session: :mod:`.live_calls`): a result, an ``isError`` result, or a
JSON-RPC error, as :func:`bridge.server.methods.tool_call_result` and
:mod:`bridge.jsonrpc.errors` say.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from bridge.jsonrpc.errors import error_data
from bridge.jsonrpc.session import Session
from runtime import Tool
from runtime._stepper import Raised, Returned

from .methods import tool_call_result
from .questions import CallScope

if TYPE_CHECKING:
    from .offer import Offer

__all__ = ["respond"]


def respond(
    server: Offer,
    session: Session,
    scope: CallScope,
    tool: Tool[Any, Any],
    outcome: Returned | Raised,
) -> dict[str, Any]:
    """Answer the call with its outcome; return what was sent (``{"result":
    ...}`` or ``{"error": ...}``, the response's JSON less its id)."""
    debug = server.debug
    try:
        if isinstance(outcome, Returned):
            result = tool_call_result(tool, scope, value=outcome.value, debug=debug)
        else:
            error = cast(Exception, outcome.error)
            result = tool_call_result(tool, scope, error=error, debug=debug)
    except Exception as exc:
        data = error_data(exc)
        session.respond_nowait(scope.request_id, error=data)
        return {"error": data.to_json()}
    session.respond_nowait(scope.request_id, result)
    return {"result": result}

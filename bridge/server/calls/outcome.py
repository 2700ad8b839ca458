"""What a finished call answers: a result, an ``isError`` result, or an error.

One place for both eras and both kinds of call:

* a **tool**'s value becomes its ``CallToolResult`` (:func:`tool_call_result`);
  its failure an ``isError`` result whose text :mod:`bridge.server.failures`
  writes; a :class:`~runtime.errors.RequestError` (and, for a client that
  declared URL elicitation, :class:`~runtime.errors.UrlElicitationRequired`:
  ``-32042``) a JSON-RPC error instead;
* a **prompt**'s value becomes its ``GetPromptResult``; its failure a
  JSON-RPC error (:func:`~bridge.server.failures.prompt_failure`).

:func:`outcome_json` gives the response less its id, as JSON (``{"result":
...}`` or ``{"error": ...}``), so a durable call can keep it for a later
process to send; :func:`send` sends it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from bridge.jsonrpc.errors import error_data
from bridge.jsonrpc.messages import ErrorData
from bridge.jsonrpc.session import Session
from encoders import mcp as mcp_encode
from runtime import Tool
from runtime.errors import RequestError, UrlElicitationRequired
from runtime.lowlevel import Outcome, Raised, Returned

from ..failures import prompt_failure, tool_failure
from ..questions import CallScope, url_required

if TYPE_CHECKING:
    from ..catalog import Prompt
    from ..offer import Offer

__all__ = ["outcome_json", "prompt_outcome", "send", "tool_call_result"]


def tool_call_result(
    tool: Tool[Any, Any],
    scope: CallScope,
    *,
    value: Any = None,
    error: Exception | None = None,
    debug: bool = False,
) -> dict[str, Any]:
    """The ``CallToolResult`` for a call that returned ``value`` or raised
    ``error``: a failure (or a value that cannot be sent) is an isError result,
    described by :func:`~bridge.server.failures.tool_failure` (``debug``: with
    the details of an unexpected exception).

    Raises:
        RequestError: ``error``, to be answered as a JSON-RPC error instead.
        UrlElicitationRequired: likewise (``-32042``), for a client that
            declared URL-mode elicitation (see
            :func:`bridge.server.questions.url_required`; for another client it
            is an isError result naming the capability).
    """
    era = scope.era
    if error is None:
        try:
            return mcp_encode.tool_result(value, tool, era=era)
        except Exception as exc:
            error = exc
    if isinstance(error, UrlElicitationRequired):
        error = url_required(error, scope)
    if isinstance(error, RequestError | UrlElicitationRequired):
        raise error
    text = tool_failure(tool.name, error, debug=debug)
    return mcp_encode.tool_error(text, era=era)


def prompt_outcome(
    prompt: Prompt, scope: CallScope, outcome: Returned | Raised, *, debug: bool
) -> dict[str, Any]:
    """The ``GetPromptResult`` of a prompt that ended with ``outcome``.

    Raises:
        RequestError: the prompt failed (or asked for what the client lacks).
        UrlElicitationRequired: ``-32042``, for a client with URL elicitation.
    """
    from ..methods import prompt_result  # the prompt's shape lives with listing

    if isinstance(outcome, Returned):
        return prompt_result(outcome.value, prompt.description)
    error = outcome.error
    if isinstance(error, UrlElicitationRequired):
        raise url_required(error, scope) from None
    if isinstance(error, RequestError):
        raise error
    raise prompt_failure(prompt.name, cast(Exception, error), debug=debug) from None


def outcome_json(
    server: Offer,
    scope: CallScope,
    program: Tool[Any, Any] | Prompt,
    outcome: Outcome,
) -> dict[str, Any]:
    """The response ``outcome`` makes, less its id: ``{"result": ...}`` or
    ``{"error": ...}`` (kept as is by a durable call, so a later process can
    send it)."""
    assert isinstance(outcome, Returned | Raised)
    debug = server.debug
    try:
        if not isinstance(program, Tool):
            result = prompt_outcome(program, scope, outcome, debug=debug)
        elif isinstance(outcome, Returned):
            result = tool_call_result(program, scope, value=outcome.value, debug=debug)
        else:
            error = cast(Exception, outcome.error)
            result = tool_call_result(program, scope, error=error, debug=debug)
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

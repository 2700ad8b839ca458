"""Taking a live 2025-11-25 ``tools/call`` on, fresh or again after a restart.

:func:`begin` takes a call the client just sent; :func:`revive` takes on a
call another process began and wrote down in the store
(:mod:`.durable_calls`): its generator is run again against its journal, so
every recorded answer and step result is reused, notices already sent are not
sent again, and questions the client has already seen are not asked again
(their answers will arrive under the same request ids). Either way the call
is then a :class:`~bridge.server.live_calls.LiveCall`, or with a store a
:class:`~bridge.server.live_durable.DurableCall`.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from bridge.jsonrpc.messages import Request
from bridge.jsonrpc.session import Session
from runtime import Tool
from runtime.errors import InvalidArguments
from runtime.lowlevel import Journal, Raised, Returned, Stepper, start

from .call_outcome import respond
from .call_records import journal_from_records
from .durable_calls import CallLog, Home, Revived
from .live_calls import LiveCall
from .live_durable import DurableCall
from .methods import resolve_tool
from .questions import CallScope

if TYPE_CHECKING:
    from .offer import Offer

__all__ = ["begin", "revive"]


def begin(
    server: Offer,
    request: Request,
    session: Session,
    scope: CallScope,
    home: Home | None = None,
) -> None:
    """Take live ``tools/call`` ``request`` on, with no task; with ``home``
    (a durable session), written down in its store as it goes.

    A tool that ends before it starts (a plain function's value, or an error)
    is answered at once: with nothing to step or wait for, there is no call
    to keep. Arguments that fail the tool's input schema are answered at once,
    as an isError result.

    Raises:
        RequestError: -32602 for an unknown tool (answered as an error).
    """
    params = request.params or {}
    tool = resolve_tool(server, params)
    try:
        arguments = tool.check_arguments(params.get("arguments"))
    except InvalidArguments as exc:
        respond(server, session, scope, tool, Raised(exc))
        return
    call_id = uuid.uuid4().hex
    journal = None if home is None else journal_from_records([], call_id)
    started = _start(server, session, scope, tool, arguments, journal)
    if not isinstance(started, Stepper):
        return
    if home is None:
        LiveCall(server, session, scope, tool, started).start()
        return
    doc = {
        "session": home.session_id,
        "request": request.id,
        "params": dict(params),
        "stream": home.stream_of(request.id),
        "tag": call_id,
        "worker": home.worker,
    }
    log = CallLog(home, call_id, call_id, doc)
    DurableCall(server, session, scope, tool, started, log).start()


def revive(
    server: Offer,
    session: Session,
    scope: CallScope,
    home: Home,
    doc: Mapping[str, Any],
    records: Sequence[Mapping[str, Any]],
    revived: Revived,
) -> None:
    """Take on again the call ``doc`` describes, replaying ``records``.

    Raises:
        RequestError: its tool is gone (answered as an error).
        ValueError: the records are malformed.
    """
    params: Mapping[str, Any] = doc["params"]
    tool = resolve_tool(server, params)
    arguments = tool.check_arguments(params.get("arguments"))
    journal = journal_from_records(records, revived.call_id)
    log = CallLog(home, revived.call_id, revived.tag, doc, revived)
    started = _start(server, session, scope, tool, arguments, journal)
    if isinstance(started, Stepper):
        DurableCall(server, session, scope, tool, started, log).start()
    else:
        log.forget()


def _start(
    server: Offer,
    session: Session,
    scope: CallScope,
    tool: Tool[Any, Any],
    arguments: Any,
    journal: Journal | None,
) -> Stepper | None:
    """The call's stepper, started; or None once it is answered already."""
    server.calls.admit(session.in_flight)
    try:
        context = tool.context(scope.principal)
        started = start(tool.program(arguments), context, journal=journal)
    except BaseException:
        server.calls.leave()
        raise
    if isinstance(started, Stepper):
        return started
    server.calls.leave()
    outcome: Returned | Raised = started
    respond(server, session, scope, tool, outcome)
    return None

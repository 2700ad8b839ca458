"""``yieldmcp serve -v``: one log line per request the server answers.

A session tap (:mod:`bridge.jsonrpc.tap`) that notes when each incoming
request is taken on and, when it is answered, logs its method, its tool (for
``tools/call``), how long it took and how it ended::

    tools/call add 3.1 ms ok
    tools/call fetch 812.0 ms input_required
    tools/call nope 0.4 ms error -32602 Unknown tool: nope
    tools/call div 1.2 ms tool error

The tap sees both eras (the session's requests, and each 2026-07-28 HTTP
request), so the lines do too. Logged at INFO on ``yieldmcp.requests``: shown
with ``-v`` and ``-vv``.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Generator, Mapping
from typing import Any, cast, final

from bridge.elicit import printable_line
from bridge.jsonrpc import tap
from bridge.jsonrpc.messages import ErrorResponse, Notification, Request, RequestId

__all__ = ["logging_requests", "outcome", "request_line"]

log = logging.getLogger("yieldmcp.requests")

_MESSAGE_CHARS = 120
"""An error message is cut here: the line stays one line of a log."""


@contextlib.contextmanager
def logging_requests() -> Generator[None]:
    """Within: every request the sessions made meanwhile answer is logged."""
    tap.install("request-log", _factory)
    try:
        yield
    finally:
        tap.install("request-log", None)


def _factory(handler: object, transport: object) -> _RequestLog:
    return _RequestLog()


def outcome(reply: object) -> str:
    """How a request ended, in a word or three: ``ok``, ``tool error``,
    ``input_required``, ``error CODE MESSAGE`` or ``cancelled``."""
    if reply is None:
        return "cancelled"
    if isinstance(reply, ErrorResponse):
        message = printable_line(reply.error.message)
        if len(message) > _MESSAGE_CHARS:
            message = message[: _MESSAGE_CHARS - 1] + "…"
        return f"error {reply.error.code} {message}"
    result: Any = getattr(reply, "result", None)
    if isinstance(result, dict):
        fields = cast("dict[str, Any]", result)
        if fields.get("isError") is True:
            return "tool error"
        kind = fields.get("resultType")
        if isinstance(kind, str) and kind != "complete":
            return printable_line(kind)
    return "ok"


def request_line(
    method: str, params: Mapping[str, Any] | None, seconds: float, ended: str
) -> str:
    """The line logged for one request."""
    name: Any = (params or {}).get("name") if method == "tools/call" else None
    tool = f" {printable_line(name)}" if isinstance(name, str) else ""
    return f"{printable_line(method)}{tool} {seconds * 1000:.1f} ms {ended}"


@final
class _RequestLog:
    """The tap of one session: the requests it has taken on and not answered."""

    def __init__(self) -> None:
        self._open: dict[RequestId, tuple[Request, float]] = {}

    @contextlib.contextmanager
    def incoming(self, request: Request) -> Generator[object]:
        self._open[request.id] = (request, time.monotonic())
        yield None

    def answered(self, request_id: RequestId, reply: object) -> None:
        taken = self._open.pop(request_id, None)
        if taken is None:  # told twice: logged once
            return
        request, started = taken
        seconds = time.monotonic() - started
        log.info(request_line(request.method, request.params, seconds, outcome(reply)))

    def outgoing(
        self, request_id: RequestId, method: str, params: Mapping[str, Any] | None
    ) -> Mapping[str, Any] | None:
        return params

    def settled(
        self, request_id: RequestId, result: Any, error: BaseException | None
    ) -> None:
        return None

    def notified(self, notification: Notification) -> None:
        return None

    def closed(self) -> None:
        self._open.clear()

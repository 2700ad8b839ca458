"""Notices: effects that are sent and not answered (log messages, progress).

Owns :class:`Log` (with the MCP log levels, :data:`LOG_LEVELS`),
:class:`Progress` (finite numbers, checked at construction) and
:class:`ReleaseStream`. A tool gets ``None`` back at the yield of each.

It does not enforce that progress increases within a call (the stepper does,
raising ``ProgressNotIncreasing``), filter by the client's log level or send
anything (the bridge does).
"""

from __future__ import annotations

import math
from typing import Any, Literal, TypeAlias, final

import attrs

from ..errors import InvalidEffect
from .base import Notice

__all__ = ["LOG_LEVELS", "Log", "LogLevel", "Progress", "ReleaseStream"]

LogLevel: TypeAlias = Literal[
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"
]
LOG_LEVELS: tuple[LogLevel, ...] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)


def _log_level(instance: Any, attribute: Any, value: object) -> None:
    if value not in LOG_LEVELS:
        raise InvalidEffect(
            f"log: level must be one of {', '.join(LOG_LEVELS)} (MCP's, in lower "
            f"case), got {str(value)[:40]!r}"
        )


def _text_or_none(instance: Any, attribute: Any, value: object) -> None:
    # The wire takes a string here: a number was sent, and peers dropped it.
    if value is not None and not isinstance(value, str):
        raise InvalidEffect(
            f"{type(instance).__name__.lower()}: {attribute.name} must be a str or "
            f"None, got {type(value).__name__}"
        )


@final
@attrs.frozen(kw_only=True)
class Log(Notice):
    """Send a log message (MCP ``notifications/message``) at ``level``.

    Messages below the client's chosen level are dropped by the server layer.
    """

    level: LogLevel = attrs.field(validator=_log_level)
    data: Any
    logger: str | None = attrs.field(default=None, validator=_text_or_none)


def _finite(instance: Any, attribute: Any, value: float | None) -> None:
    if value is not None and not (
        isinstance(value, int | float) and math.isfinite(value)
    ):
        raise InvalidEffect(f"progress: {attribute.name} must be a finite number")


@final
@attrs.frozen(kw_only=True)
class Progress(Notice):
    """Report progress (MCP ``notifications/progress``); must increase per call."""

    progress: float = attrs.field(validator=_finite)
    total: float | None = attrs.field(default=None, validator=_finite)
    message: str | None = attrs.field(default=None, validator=_text_or_none)


@final
@attrs.frozen
class ReleaseStream(Notice):
    """Let the transport close this call's response stream; the call goes on.

    Over 2025-11-25 Streamable HTTP the call's SSE stream is closed after its
    priming event, and the client resumes it later (``GET`` + ``Last-Event-ID``)
    to receive what the call sent meanwhile and its result: SSE polling
    (SEP-1699). Yield it before a long wait so the client does not hold a
    connection open. Transports that cannot resume a stream (stdio, the
    2026-07-28 path, clients older than 2025-11-25) ignore it.
    """

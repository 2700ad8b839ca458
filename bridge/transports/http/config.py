"""The bounds and settings of the Streamable HTTP endpoint, in one value.

Every queue and store the transport keeps is bounded by a field here, so a
misbehaving client costs a known amount of memory. Nothing here does I/O.
"""

from __future__ import annotations

from typing import Any, Literal, final

import attrs

__all__ = ["HttpLimits"]


def _positive(instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not value > 0:
        raise ValueError(f"HttpLimits.{attribute.name} must be positive, got {value!r}")


@final
@attrs.frozen(kw_only=True)
class HttpLimits:
    """Bounds of the HTTP transport. The defaults suit one local user.

    Attributes:
        max_body: largest request body in bytes (larger: 413).
        max_sessions: live 2025-11-25 sessions at once (more: 503).
        session_idle_timeout: seconds a session with no request and no open
            stream lives on; then it ends and its calls are cancelled.
        event_capacity: SSE events kept per session for resumption; a client
            that falls further behind loses its stream (never silently).
        inbox_size: client messages per session waiting for the session's task
            (most notifications; requests and responses need not wait)
            before a POST waits.
        retry_ms: the ``retry:`` sent in priming events (how long a client
            waits before resuming a stream the server closed).
        stream_responses: how a 2025-11-25 request is answered: ``"always"``
            as an SSE stream with a priming event, so every response can be
            resumed after a dropped connection (what the reference SDK does);
            ``"when-needed"`` as plain JSON when the response is the first
            thing the server sends for it (cheaper, not resumable).
    """

    max_body: int = attrs.field(default=4 * 1024 * 1024, validator=_positive)
    max_sessions: int = attrs.field(default=256, validator=_positive)
    session_idle_timeout: float = attrs.field(default=30 * 60.0, validator=_positive)
    event_capacity: int = attrs.field(default=1024, validator=_positive)
    inbox_size: int = attrs.field(default=32, validator=_positive)
    retry_ms: int = attrs.field(default=1000, validator=_positive)
    stream_responses: Literal["always", "when-needed"] = attrs.field(
        default="always", validator=attrs.validators.in_(("always", "when-needed"))
    )

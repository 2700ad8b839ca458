"""The ``ElicitationHandler`` protocol, and the two trivial handlers.

Owns the contract every elicitation UI meets (an ``ElicitationRequest`` in, an
``ElicitReply`` out), :class:`Always` (one fixed action for every request) and
:func:`form_defaults` (the ``default`` of each field of a form). It does no I/O
and shows nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, final

import attrs

from runtime.replies import ElicitAction, ElicitReply
from runtime.requests import ElicitationRequest

__all__ = ["Always", "ElicitationHandler", "form_defaults"]


class ElicitationHandler(Protocol):
    """Anything that answers an elicitation: a terminal form, a UI, a script.

    ``handle`` may wait as long as the user takes; it is cancelled (with
    ``trio.Cancelled``) when the tool withdraws the question. Decline and cancel
    are replies, not exceptions. An exception means the handler itself failed.
    """

    async def handle(self, request: ElicitationRequest) -> ElicitReply:
        """The user's answer to ``request``."""
        ...


@final
@attrs.frozen
class Always:
    """Answers every request with ``action``.

    ``Always("accept")`` accepts forms with their defaults (see
    :func:`form_defaults`) and consents to every URL; ``Always("decline")`` and
    ``Always("cancel")`` refuse everything.
    """

    action: ElicitAction = attrs.field(
        validator=attrs.validators.in_(("accept", "decline", "cancel"))
    )

    async def handle(self, request: ElicitationRequest) -> ElicitReply:
        """The fixed answer to ``request``."""
        if self.action != "accept":
            return ElicitReply(action=self.action)
        if request.mode == "url":
            return ElicitReply(action="accept")
        return ElicitReply(
            action="accept", content=form_defaults(request.requested_schema)
        )


def form_defaults(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The ``default`` of every field of a form schema that declares one."""
    properties: Mapping[str, Any] = schema.get("properties") or {}
    return {
        name: field["default"]
        for name, field in properties.items()
        if isinstance(field, Mapping) and "default" in field
    }

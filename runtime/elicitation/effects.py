"""The questions for the client's user and host: form and URL elicitation, roots.

Owns :class:`Elicit` (a form, validated against its pydantic model when
accepted; its digest made from the form's canonical schema, once per model),
:class:`ElicitUrl` (a flow the user completes out of band) and
:class:`ListRoots` (the roots the client exposes): the peer questions that no
model answers.

It does not build the form's JSON Schema (:mod:`runtime.elicitation.schema` does),
decide which key a form is asked under (the context does), or check a reply's
wire shape (``decoders`` do).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any, Generic, TypeVar, cast, final

import attrs
from pydantic import BaseModel, ValidationError

from ..codec import (
    elicit_reply_from_json,
    elicit_reply_to_json,
    roots_reply_from_json,
    roots_reply_to_json,
)
from ..effects.base import JSON, PeerQuestion
from ..effects.canonical import canonical_json, digest_of_json
from ..errors import (
    InvalidAnswer,
    InvalidEffect,
    RemoteProtocolError,
    summarize_validation_error,
)
from ..messages import Message, ToolResult, ToolUse
from ..replies import ElicitReply, Root, RootsReply
from ..requests import ElicitationRequest
from ..results import ElicitResult, ElicitUrlResult, Exchange
from .schema import elicitation_schema

__all__ = ["Elicit", "ElicitUrl", "ListRoots"]

M = TypeVar("M", bound=BaseModel)


_NOT_ID = re.compile(r"[^A-Za-z0-9_-]")


def _id_safe(key: str) -> str:
    return _NOT_ID.sub("_", key)


# --- elicit -------------------------------------------------------------------------


def _non_empty(instance: Any, attribute: attrs.Attribute[str], value: str) -> None:
    # attrs.validators.min_len(1), as a function: a replay makes its URL
    # elicitations and forms with context again, and calling a validator
    # instance costs more.
    if not value:
        raise ValueError(f"{attribute.name!r} must be a non-empty string: {value!r}")


def _json_context(instance: Any, attribute: Any, value: Mapping[str, Any]) -> None:
    if not value:
        return  # {} is JSON; most elicitations carry no context
    try:
        canonical_json(dict(value))
    except (TypeError, ValueError) as exc:
        raise InvalidEffect(
            f"elicit: context values must be JSON-serialisable: {exc}"
        ) from None


@final
@attrs.frozen(kw_only=True)
class Elicit(PeerQuestion[ElicitResult[M]], Generic[M]):
    """Ask the user to fill in a form (MCP ``elicitation/create``, form mode).

    ``key`` names one of the tool's declared ``elicits``; ``model`` is its pydantic
    model, whose flat JSON Schema is the ``requestedSchema``. Accepted content is
    validated against ``model`` (failure raises :class:`InvalidAnswer` at the
    ``yield``); decline and cancel are results, not exceptions. ``context`` is
    extra JSON travelling with the request as ``x-model-context``.

    Never elicit secrets (passwords, API keys, payment data) in form mode; use
    :class:`ElicitUrl` for those.
    """

    key: str
    message: str = attrs.field(validator=_non_empty)
    model: type[M]
    context: Mapping[str, Any] = attrs.field(
        factory=dict[str, Any], validator=_json_context
    )
    _digest: str | None = attrs.field(
        init=False, default=None, eq=False, hash=False, repr=False
    )

    @property
    def requested_schema(self) -> Mapping[str, Any]:
        return elicitation_schema(self.model)

    def request(self) -> ElicitationRequest:
        """This elicitation as data: the form's JSON Schema, key and context.

        The context is a copy: ``ctx.elicit`` serves a form without context
        as one shared value, which whoever answers must not be able to change.
        """
        return ElicitationRequest(
            message=self.message,
            requested_schema=self.requested_schema,
            key=self.key,
            context=dict(self.context),
        )

    def fingerprint(self) -> JSON:
        return {
            "effect": "elicit",
            "key": self.key,
            "message": self.message,
            "requestedSchema": self.requested_schema,
            "context": dict(self.context),
        }

    def digest(self) -> str:
        """``digest(self.fingerprint())``, made once per effect, from the
        canonical JSON of the form's schema made once per model: the same
        bytes, in sorted-key order, without encoding the schema every time.

        Kept on the effect: ``ctx.elicit`` serves a recent form without
        context as the value it made before, so a replay asks for this digest
        again on every round."""
        made = self._digest
        if made is None:
            context = canonical_json(dict(self.context)) if self.context else b"{}"
            made = _elicit_digest(self.model, self.key, self.message, context)
            object.__setattr__(self, "_digest", made)
        return made

    def resolve(self, reply: Any, key: str) -> ElicitResult[M]:
        if not isinstance(reply, ElicitReply):
            raise RemoteProtocolError(f"an elicitation was answered with {reply!r}")
        content: M | None = None
        if reply.action == "accept":
            content = self._content(dict(reply.content or {}))
        return ElicitResult(
            action=reply.action,
            content=content,
            exchange=functools.partial(self._exchange, reply, key),
        )

    def resolve_recorded(self, data: JSON, key: str) -> ElicitResult[M]:
        """:meth:`resolve` for a recorded reply, validated again without first
        building the reply value (made only if the exchange is looked at)."""
        try:
            accepted = data["action"] == "accept"
            content = data["content"]
        except (TypeError, KeyError):  # not an accepted form: the general path
            return super().resolve_recorded(data, key)
        if not accepted or type(content) is not dict:
            return super().resolve_recorded(data, key)
        return ElicitResult(
            action="accept",
            # No copy: validation neither changes nor keeps it (forms are flat).
            content=self._content(content),
            exchange=functools.partial(self._recorded_exchange, data, key),
        )

    def _content(self, data: Any) -> M:
        try:
            return self.model.__pydantic_validator__.validate_python(data)
        except ValidationError as exc:
            raise InvalidAnswer(
                f"elicitation {self.key!r}: the accepted content does not match "
                f"{self.model.__name__}: {summarize_validation_error(exc)}"
            ) from None

    def _recorded_exchange(self, data: JSON, key: str) -> Exchange:
        return self._exchange(elicit_reply_from_json(data), key)

    def _exchange(self, reply: ElicitReply, key: str) -> Exchange:
        use = ToolUse(
            f"elicit_{_id_safe(key)}",
            self.key,
            {"message": self.message, **self.context},
        )
        answer = elicit_reply_to_json(reply)
        result = ToolResult(use.id, canonical_json(answer).decode())
        messages = (Message("assistant", (use,)), Message("user", (result,)))
        return Exchange(messages=messages, history=messages)

    def reply_to_json(self, reply: Any) -> JSON:
        return elicit_reply_to_json(cast(ElicitReply, reply))

    def reply_from_json(self, data: JSON) -> Any:
        return elicit_reply_from_json(data)


@functools.cache
def _schema_json(model: type[BaseModel]) -> bytes:
    return canonical_json(elicitation_schema(model))


def _elicit_digest(
    model: type[BaseModel], key: str, message: str, context: bytes
) -> str:
    """The digest of an elicitation's fingerprint, from its canonical parts."""
    text = b"".join((
        b'{"context":', context, b',"effect":"elicit","key":', canonical_json(key),
        b',"message":', canonical_json(message), b',"requestedSchema":',
        _schema_json(model), b"}",
    ))  # fmt: skip
    return digest_of_json(text)


@final
@attrs.frozen(kw_only=True)
class ElicitUrl(PeerQuestion[ElicitUrlResult]):
    """Ask the user to complete a flow at ``url`` out of band (URL-mode elicitation).

    Use this, not a form, for anything sensitive. ``elicitation_id`` identifies the
    flow; it is not part of the fingerprint, so replays with a fresh id still match.
    """

    message: str = attrs.field(validator=_non_empty)
    url: str = attrs.field(validator=_non_empty)
    elicitation_id: str

    def request(self) -> ElicitationRequest:
        """This URL elicitation as data."""
        return ElicitationRequest(
            message=self.message,
            mode="url",
            url=self.url,
            elicitation_id=self.elicitation_id,
        )

    def fingerprint(self) -> JSON:
        return {"effect": "elicit_url", "message": self.message, "url": self.url}

    def resolve(self, reply: Any, key: str) -> ElicitUrlResult:
        if not isinstance(reply, ElicitReply):
            raise RemoteProtocolError(f"a URL elicitation was answered with {reply!r}")
        return ElicitUrlResult(action=reply.action, elicitation_id=self.elicitation_id)

    def reply_to_json(self, reply: Any) -> JSON:
        return elicit_reply_to_json(cast(ElicitReply, reply))

    def reply_from_json(self, data: JSON) -> Any:
        return elicit_reply_from_json(data)


@final
@attrs.frozen
class ListRoots(PeerQuestion[tuple[Root, ...]]):
    """Ask the client which roots (directories, repositories) it exposes."""

    def fingerprint(self) -> JSON:
        return {"effect": "roots"}

    def resolve(self, reply: Any, key: str) -> tuple[Root, ...]:
        if not isinstance(reply, RootsReply):
            raise RemoteProtocolError(f"roots/list was answered with {reply!r}")
        return reply.roots

    def reply_to_json(self, reply: Any) -> JSON:
        return roots_reply_to_json(cast(RootsReply, reply))

    def reply_from_json(self, data: JSON) -> Any:
        return roots_reply_from_json(data)

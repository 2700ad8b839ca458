"""What a 2026-07-28 round reads from its request before it runs.

Owns opening the sealed ``requestState`` for the call it was sealed for
(:func:`open_state`: the binding of :func:`~bridge.server.state_token.binding`),
the digest that pins a state to the call's arguments
(:func:`arguments_digest`) and the shape of ``inputResponses``
(:func:`parse_responses`), what a round starts from (:class:`Carried`) and
the ``inputRequests`` key of a question (:func:`wire_key`).

It does not run the tool (:mod:`bridge.server.calls.rounds`) nor keep anything in a
store (:mod:`bridge.durable.rounds`), nor check the tool's version
(:mod:`bridge.server.versions`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, cast, final

import attrs
from pydantic import BaseModel

from bridge.jsonrpc.messages import INVALID_PARAMS
from runtime.errors import RequestError
from runtime.lowlevel import Elicit, ElicitUrl, Journal, PeerQuestion, Sample

from .state_token import Sealer, invalid_state

__all__ = [
    "Carried",
    "arguments_digest",
    "open_state",
    "parse_responses",
    "responses_digest",
    "wire_key",
]


def arguments_digest(arguments: BaseModel) -> str:
    """What pins a state to the call's arguments: the sha256 of their JSON
    (``model_dump_json``, the bytes of ``to_json(model_dump(mode="json"))``)."""
    data = type(arguments).__pydantic_serializer__.to_json(arguments)
    return hashlib.sha256(data).hexdigest()[:32]


def responses_digest(responses: Mapping[str, Any]) -> str:
    """What tells a retry of a round from another request with the same
    state: the sha256 of its ``inputResponses`` as canonical JSON."""
    data = json.dumps(responses, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(data.encode()).hexdigest()[:32]


def parse_responses(params: Mapping[str, Any]) -> dict[str, Any]:
    """``inputResponses`` as a dict; ``null``/absent is empty; bad shapes -32602."""
    raw: Any = params.get("inputResponses")
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise RequestError(INVALID_PARAMS, "inputResponses must be an object")
    responses = cast("dict[str, Any]", raw)
    for key, value in responses.items():
        if not isinstance(value, dict):
            raise RequestError(
                INVALID_PARAMS, f"inputResponses[{key!r}] must be an object"
            )
    return responses


def open_state(
    params: Mapping[str, Any],
    sealer: Sealer,
    purpose: str,
    bound: Mapping[str, str | None],
) -> dict[str, Any] | None:
    """The payload of the request's ``requestState`` (None: it has none).

    Raises:
        RequestError: :func:`~bridge.server.state_token.invalid_state`, for a
            tampered or expired state, or one from another call or caller.
    """
    token: Any = params.get("requestState")
    if token is None:
        return None
    state = sealer.open(token, purpose=purpose)
    # An absent field reads as None: a state made for no principal opens only
    # for none, and one made for a principal only for that principal.
    if any(state.get(field) != value for field, value in bound.items()):
        raise invalid_state()  # a state from another call, or another caller
    return state


def wire_key(
    effect_key: str, question: PeerQuestion[Any], *, placed: bool = False
) -> str:
    """The ``inputRequests`` key for the question at ``effect_key``; with
    ``placed``, the effect key is in it even at the root.

    A task's keys are placed: its ``tasks/update`` carries no state to say which
    question an answer is for, so a key must name one question only. Otherwise
    an update sent again (a lost reply) would answer the task's next question
    of the same form with the answer to the one before."""
    if isinstance(question, Elicit):
        base = cast("Elicit[Any]", question).key
    elif isinstance(question, Sample):
        base = "sample"
    elif isinstance(question, ElicitUrl):
        base = "url"
    else:
        base = "roots"
    return base if "/" not in effect_key and not placed else f"{base}@{effect_key}"


@final
@attrs.frozen
class Carried:
    """What a round starts from: the journal, what was asked, deadlines."""

    journal: Journal
    asked: Mapping[str, Any]
    deadlines: dict[str, float]
    stateful: bool  # whether the request carried a state

    @classmethod
    def from_state(cls, state: Mapping[str, Any] | None) -> Carried:
        """From a stateless round's ``requestState`` (None: the first round).

        Raises:
            RequestError: :func:`invalid_state`, for a reference to a call in
                a store (sealed by a server with a store: this one has none).
        """
        if state is None:
            return cls(Journal(), {}, {}, stateful=False)
        if "call" in state:
            raise invalid_state()
        journal_json = state.get("journal")
        journal = Journal.from_json(journal_json) if journal_json else Journal()
        deadlines = dict(state.get("deadlines", {}))
        return cls(journal, state.get("asked", {}), deadlines, stateful=True)

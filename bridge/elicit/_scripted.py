"""``ScriptedAnswers``: elicitation answered from a dict or a JSON file.

Owns non-interactive answering (the CLI's non-interactive mode, CI): answers
are looked up by elicitation key and consumed in order when a key is asked
several times. The script is a JSON object::

    {
      "dates": {"depart": "2026-05-01"},          // accept, every time
      "pick_move": [{"cell": 4}, {"cell": 0}, "cancel"],   // in order
      "seat": {"action": "decline"},
      "$url": "accept",                            // URL-mode requests
      "*": "decline"                               // any other request
    }

Each answer is content to accept (merged over the form's defaults), one of
``"accept"`` (the defaults), ``"decline"``, ``"cancel"``, or an explicit reply
``{"action": ..., "content": {...}}`` (an object whose only keys are
``action`` and ``content``; use this spelling for a form with a field named
``action``). A list is consumed in order; anything else answers every time.
URL-mode requests use the key ``"$url"``; ``"*"`` answers whatever has no
entry of its own. When the script has nothing left for a request it goes to
``fallback``, or raises :class:`~runtime.errors.ScriptExhausted`.

It does not validate content against the schema (the tool does), so a script
can also play a user who answers wrongly.
"""

from __future__ import annotations

import collections
import json
import os
from collections.abc import Mapping
from typing import Any, cast, final

from runtime.errors import ScriptExhausted
from runtime.replies import ElicitReply
from runtime.requests import ElicitationRequest

from ._handler import ElicitationHandler, form_defaults

__all__ = ["ANY_KEY", "URL_KEY", "ScriptedAnswers"]

URL_KEY = "$url"
ANY_KEY = "*"
_ACTIONS = ("accept", "decline", "cancel")


@final
class ScriptedAnswers:
    """An :class:`~bridge.elicit.ElicitationHandler` reading from a script.

    Args:
        answers: per key, one answer (used every time) or a list (in order).
        fallback: answers what the script does not; without it, such a request
            raises ``ScriptExhausted``.

    Raises:
        ValueError: an answer is neither content, an action, nor a reply.
    """

    def __init__(
        self,
        answers: Mapping[str, Any],
        *,
        fallback: ElicitationHandler | None = None,
    ) -> None:
        self._queues: dict[str, collections.deque[Any]] = {}
        self._repeat: dict[str, Any] = {}
        for key, value in answers.items():
            if isinstance(value, list):
                items = cast(list[Any], value)
                for item in items:
                    _check(key, item)
                self._queues[key] = collections.deque(items)
            else:
                self._repeat[key] = _check(key, value)
        self._fallback = fallback
        self._asked: list[str] = []  # the keys asked, in order, once each
        self._used: set[str] = set()

    @classmethod
    def from_json(
        cls, text: str, *, fallback: ElicitationHandler | None = None
    ) -> ScriptedAnswers:
        """A script from JSON text (an object of key → answer or answers).

        Raises:
            ValueError: the text is not a JSON object of valid answers.
        """
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError(  # noqa: TRY004 - bad input text, not a bad argument
                "an answers script must be a JSON object of key: answer"
            )
        return cls(cast(dict[str, Any], data), fallback=fallback)

    @classmethod
    def from_file(
        cls, path: str | os.PathLike[str], *, fallback: ElicitationHandler | None = None
    ) -> ScriptedAnswers:
        """A script from a JSON file (see :meth:`from_json`)."""
        with open(path, encoding="utf-8") as file:
            return cls.from_json(file.read(), fallback=fallback)

    def remaining(self) -> dict[str, int]:
        """How many listed answers each key has left (not the repeating ones)."""
        return {key: len(queue) for key, queue in self._queues.items()}

    def asked_keys(self) -> list[str]:
        """The keys of the requests answered or asked so far, in order."""
        return list(self._asked)

    def form_keys(self) -> list[str]:
        """The script's form keys (``"*"`` and ``"$url"`` aside)."""
        keys = [*self._queues, *self._repeat]
        return [k for k in keys if k not in (ANY_KEY, URL_KEY)]

    def unused_keys(self) -> list[str]:
        """Script keys no request has used (``"*"`` aside): usually typos."""
        keys = [*self._queues, *self._repeat]
        return [k for k in keys if k not in self._used and k != ANY_KEY]

    async def handle(self, request: ElicitationRequest) -> ElicitReply:
        """The next scripted answer for ``request``.

        Raises:
            ScriptExhausted: nothing is left for it and there is no fallback.
        """
        key = URL_KEY if request.mode == "url" else request.key
        if key is not None and key not in self._asked:
            self._asked.append(key)
        for candidate in (key, ANY_KEY):
            if candidate is None:
                continue
            queue = self._queues.get(candidate)
            if queue:
                self._used.add(candidate)
                return _reply(queue.popleft(), request)
            if candidate in self._repeat:
                self._used.add(candidate)
                return _reply(self._repeat[candidate], request)
        if self._fallback is not None:
            return await self._fallback.handle(request)
        raise ScriptExhausted(
            f"the answers script has nothing left for elicitation "
            f"{key or '(no key)'!r}: {request.message!r}"
        )


def _check(key: str, answer: Any) -> Any:
    valid = isinstance(answer, Mapping) or (
        isinstance(answer, str) and answer in _ACTIONS
    )
    if valid:
        return cast(Any, answer)
    raise ValueError(
        f"answer for {key!r} must be content (an object), one of {list(_ACTIONS)} "
        f"or {{'action': ..., 'content': ...}}, got {answer!r}"
    )


def _is_reply(answer: Any) -> bool:
    if not isinstance(answer, Mapping):
        return False
    fields = cast(Mapping[str, Any], answer)
    return (
        fields.get("action") in _ACTIONS
        and set(fields) <= {"action", "content"}
        and isinstance(fields.get("content", {}), Mapping)
    )


def _reply(answer: Any, request: ElicitationRequest) -> ElicitReply:
    if isinstance(answer, str):
        answer = {"action": answer}
    elif not _is_reply(answer):
        answer = {"action": "accept", "content": answer}
    action = answer["action"]
    if action != "accept" or request.mode == "url":
        return ElicitReply(action=action)
    content = {**form_defaults(request.requested_schema), **answer.get("content", {})}
    return ElicitReply(action="accept", content=content)

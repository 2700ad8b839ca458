"""``KeyedHandlers``: one typed handler per elicitation key (``onElicit``).

Owns routing a form to the handler registered for its key (``request.key``,
which yieldmcp servers send) and turning what the handler returns into a
reply: an instance of the key's model is accepted with its JSON, an explicit
``ElicitReply`` (decline, cancel) is passed through, and for plain string keys
a mapping is accepted as the content. Handlers may be sync or async, and get
the request and its context (``x-model-context``)::

    handlers = KeyedHandlers(fallback=TerminalForm())
    handlers.on(PICK_MOVE, lambda request, ctx: UserMove(cell=min(ctx["empty"])))

Requests with no registered key (URL mode, unknown keys, servers that send no
key) go to ``fallback``, which declines by default. It does not validate
content against the schema (the tool does) and shows nothing.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeAlias, TypeVar, final, overload

from pydantic import BaseModel

from runtime.context import ElicitKey
from runtime.replies import ElicitReply
from runtime.requests import ElicitationRequest

from ._handler import Always, ElicitationHandler

__all__ = ["KeyedHandlers"]

M = TypeVar("M", bound=BaseModel)

Answer: TypeAlias = BaseModel | Mapping[str, Any] | ElicitReply
_Handler: TypeAlias = Callable[[ElicitationRequest, Mapping[str, Any]], Any]


@final
class KeyedHandlers:
    """An :class:`~bridge.elicit.ElicitationHandler` routing forms by key.

    Args:
        fallback: answers requests no handler is registered for; declines them
            when not given.
    """

    def __init__(self, *, fallback: ElicitationHandler | None = None) -> None:
        self._fallback: ElicitationHandler = fallback or Always("decline")
        self._handlers: dict[str, tuple[type[BaseModel] | None, _Handler]] = {}

    @overload
    def on(
        self,
        key: ElicitKey[M],
        handler: Callable[
            [ElicitationRequest, Mapping[str, Any]],
            M | ElicitReply | Awaitable[M | ElicitReply],
        ],
    ) -> KeyedHandlers: ...

    @overload
    def on(
        self,
        key: str,
        handler: Callable[
            [ElicitationRequest, Mapping[str, Any]], Answer | Awaitable[Answer]
        ],
    ) -> KeyedHandlers: ...

    def on(self, key: ElicitKey[Any] | str, handler: _Handler) -> KeyedHandlers:
        """Answer forms with ``key`` by calling ``handler(request, context)``.

        Returns this object, so registrations chain.

        Raises:
            ValueError: ``key`` already has a handler.
        """
        name, model = (
            (key.name, key.model) if isinstance(key, ElicitKey) else (key, None)
        )
        if name in self._handlers:
            raise ValueError(f"elicitation key {name!r} already has a handler")
        self._handlers[name] = (model, handler)
        return self

    @property
    def keys(self) -> frozenset[str]:
        """The keys with a registered handler."""
        return frozenset(self._handlers)

    async def handle(self, request: ElicitationRequest) -> ElicitReply:
        """The registered handler's answer, or the fallback's.

        Raises:
            TypeError: the handler returned something other than its key's
                model, a mapping (string keys) or an ``ElicitReply``.
        """
        entry = None if request.mode == "url" else self._handlers.get(request.key or "")
        if entry is None:
            return await self._fallback.handle(request)
        model, handler = entry
        answer = handler(request, request.context)
        if inspect.isawaitable(answer):
            answer = await answer
        return _reply(request.key or "", model, answer)


def _reply(key: str, model: type[BaseModel] | None, answer: Any) -> ElicitReply:
    if isinstance(answer, ElicitReply):
        return answer
    if isinstance(answer, model or BaseModel):
        # None is how a form leaves a field empty: absent, not null.
        content = answer.model_dump(mode="json", exclude_none=True)
        return ElicitReply(action="accept", content=content)
    if model is None and isinstance(answer, Mapping):
        return ElicitReply(action="accept", content=dict(answer))  # pyright: ignore[reportUnknownArgumentType]
    expected = "a mapping" if model is None else model.__name__
    raise TypeError(
        f"the handler for elicitation {key!r} returned {answer!r}; expected "
        f"{expected} (accept) or an ElicitReply (decline, cancel)"
    )

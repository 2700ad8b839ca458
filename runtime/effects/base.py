"""The effect protocol: what an effect is, and the families effects fall into.

Owns :class:`Effect` (``yield from effect`` evaluates to its result), the
families the interpreter dispatches on (:class:`Question`, answered and
journaled, which is a :class:`PeerQuestion` or a :class:`LocalQuestion`; and
:class:`Notice`, sent and not answered), and the program types :data:`Op` and
:class:`AtOnce`.

It defines no concrete effect: each kind has its own module, and
:mod:`runtime.effects` gathers them all. It knows nothing of how an effect is
encoded, sent or stepped.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from types import GeneratorType
from typing import TYPE_CHECKING, Any, Final, Generic, TypeAlias, TypeVar, final

from ..errors import InvalidEffect
from .canonical import digest

__all__ = [
    "JSON",
    "AtOnce",
    "Effect",
    "LocalQuestion",
    "Notice",
    "Op",
    "PeerQuestion",
    "Question",
]

R = TypeVar("R", covariant=True)
P = TypeVar("P")
JSON: TypeAlias = Any


# What a tool writes to make each kind of effect, for the hints below; and
# each op (a generator a context method returns), by its generator
# function's name.
_SPELLINGS: Final = {
    "Sample": "ctx.sample",
    "Elicit": "ctx.elicit",
    "ElicitUrl": "ctx.elicit_url",
    "ListRoots": "ctx.list_roots",
    "Log": "ctx.log",
    "Progress": "ctx.progress",
    "ReleaseStream": "ctx.release_stream",
    "Clock": "ctx.now",
    "RandomBits": "ctx.random",
    "Branch": "ctx.branch",
    "Patched": "ctx.patched",
    "Step": "ctx.step",
    "Sleep": "ctx.sleep",
    "step_op": "ctx.step",
    "_step_as_op": "ctx.step_as(...)",
    "_sample_schema_op": "ctx.sample_schema",
    "_sample_tools_op": "ctx.sample_tools",
    "_random_op": "ctx.random",
    "_choice_op": "ctx.choice",
}


def spelling(effect: object) -> str:
    """How a tool makes ``effect`` (or an op): ``ctx.sample(...)``, for a hint."""
    if type(effect) is GeneratorType:
        name: str = effect.gi_code.co_name  # pyright: ignore[reportUnknownMemberType]
    else:
        name = type(effect).__name__
    return f"{_SPELLINGS.get(name, name)}(...)"


class Effect(Generic[R]):
    """Base of every effect. ``yield from effect`` evaluates to its result ``R``."""

    __slots__ = ()

    def __iter__(self) -> Generator[Effect[R], Any, R]:
        # What the stepper sends back is what resolve() made for this effect.
        result: R = yield self
        return result

    if not TYPE_CHECKING:
        # Hidden from type checkers, which then still flag both mistakes; at
        # run time each names its fix. __getattr__ runs only when an attribute
        # is missing, so an effect's own fields cost nothing more.

        def __getattr__(self, name: str) -> Any:
            # A missing attribute read off an effect is, almost always, a
            # result read off the question: `answer = ctx.elicit(...)` then
            # `answer.content`, the `yield from` forgotten.
            said = f"{type(self).__name__!r} object has no attribute {name!r}"
            if name.startswith("__"):
                raise AttributeError(said)  # copy, pickle and friends probing
            made = spelling(self)
            raise AttributeError(
                f"{said}: {made} returns an effect, not its result: write "
                f"`answer = yield from {made}`"
            )

        def __await__(self) -> Any:
            made = spelling(self)
            raise InvalidEffect(
                f"{type(self).__name__} can't be used in 'await' expression: effects "
                f"are yielded, not awaited: write the tool as a generator (`def`, "
                f"`answer = yield from {made}`)"
            )


Op: TypeAlias = Generator[Effect[Any], Any, P]
"""A computation that yields effects and returns ``P`` (a tool body, a helper)."""


@final
class AtOnce(Generator[Effect[Any], Any, P]):
    """A program that returns ``value`` without yielding an effect: what a tool
    whose body is a plain function runs.

    It behaves as the generator ``return value`` would, so anything that steps
    programs can step it; a stepper that recognises it takes ``value`` without
    stepping anything.
    """

    __slots__ = ("value",)

    def __init__(self, value: P) -> None:
        self.value = value

    def send(self, value: Any, /) -> Effect[Any]:
        raise StopIteration(self.value)

    def throw(self, typ: Any, val: Any = None, tb: Any = None, /) -> Effect[Any]:
        # Like a generator that has not started: the exception comes straight out.
        raise typ if val is None else val


class Question(Effect[R]):
    """An effect that waits for an answer (a *reply*), which the journal records."""

    __slots__ = ()

    def fingerprint(self) -> JSON:
        """Canonical JSON of what is asked; its digest pins recorded answers."""
        raise NotImplementedError

    def label(self) -> str:
        """What kind of question this is, in words: a journal keeps it beside
        the answer, so a replay that meets another kind at the same key can
        say so (:class:`~runtime.errors.ReplayDivergence`)."""
        return type(self).__name__

    def digest(self) -> str:
        """The digest that pins answers to this question: the sha256 of its
        fingerprint's canonical JSON (:func:`runtime.effects.canonical.digest`)."""
        return digest(self.fingerprint())

    def resolve(self, reply: Any, key: str) -> R:
        """The tool's result for ``reply`` (validates; may raise InvalidAnswer)."""
        raise NotImplementedError

    def reply_to_json(self, reply: Any) -> JSON:
        return reply

    def reply_from_json(self, data: JSON) -> Any:
        return data

    def resolve_recorded(self, data: JSON, key: str) -> R:
        """:meth:`resolve` for a reply recorded as ``data`` (a journal's JSON)."""
        return self.resolve(self.reply_from_json(data), key)


class PeerQuestion(Question[R]):
    """A question answered by the executor (the MCP peer, a provider, a script)."""

    __slots__ = ()


class LocalQuestion(Question[R]):
    """A question the runtime answers itself; journaled so replays agree."""

    __slots__ = ()

    def compute(self, clock: Callable[[], float], bits: Callable[[int], int]) -> Any:
        raise NotImplementedError


class Notice(Effect[None]):
    """A fire-and-forget effect (log, progress); the tool gets ``None`` back."""

    __slots__ = ()

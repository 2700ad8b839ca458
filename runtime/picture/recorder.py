"""The runtime's recorder of a timeline: an observer of the stepper.

In process there is no wire, so a question is shown as its fingerprint (the
canonical JSON that pins its answers) and an answer as the journal records it.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Generator
from typing import Any, final

import attrs

from ..call.observe import effect_kind
from .timeline import Bar, Timeline

__all__ = ["Recorder"]


def _label(effect: Any, kind: str) -> str:
    for name in ("name", "key"):
        value = getattr(effect, name, None)
        if isinstance(value, str) and value:
            return f"{kind} {value}"
    return kind


def _fields(notice: object) -> Any:
    if attrs.has(notice.__class__):
        return attrs.asdict(notice, recurse=False)
    return repr(notice)


@final
class Recorder:
    """Fills a :class:`Timeline` from what a stepper reports (an
    :class:`~runtime.lowlevel.Observer`)."""

    def __init__(self, title: str, clock: Callable[[], float] = time.monotonic):
        self.clock = clock
        self.timeline = Timeline(title, started=clock())
        self._asked: dict[str, Any] = {}

    def began(self, call_id: str) -> None:
        pass

    def asked(self, key: str, question: Any) -> None:
        self._asked[key] = question
        kind = effect_kind(question)
        self.timeline.open(
            Bar(key, kind, _label(question, kind), self.clock(), None, _json(question))
        )

    def replayed(self, key: str, question: Any, recorded: Any) -> None:
        kind, now = effect_kind(question), self.clock()
        bar = Bar(key, kind, _label(question, kind), now, now, _json(question))
        bar.answer, bar.replayed = recorded, True
        self.timeline.open(bar)

    def answered(self, key: str, reply: Any) -> None:
        question = self._asked.pop(key, None)
        answer = reply if question is None else question.reply_to_json(reply)
        failure: Any = getattr(reply, "error", None)  # a step that failed
        error = None if failure is None else str(failure)
        self.timeline.close(key, self.clock(), answer, error)

    def failed(self, key: str, error: BaseException) -> None:
        self._asked.pop(key, None)
        self.timeline.close(key, self.clock(), error=f"{type(error).__name__}: {error}")

    def withdrawn(self, key: str) -> None:
        self._asked.pop(key, None)
        self.timeline.close(key, self.clock(), error="withdrawn")

    def told(self, key: str, notice: Any, fresh: bool) -> None:
        kind, now = effect_kind(notice), self.clock()
        bar = Bar(key, kind, kind, now, now, _fields(notice))
        bar.replayed = not fresh
        self.timeline.open(bar)

    def branched(self, key: str, limits: Any, children: int) -> None:
        text = f"{children} children"
        if limits is not None:
            text += ", " + ", ".join(
                f"{k}={v}" for k, v in attrs.asdict(limits).items() if v is not None
            )
        self.timeline.branches[key] = text

    def joined(self, key: str, error: BaseException | None) -> None:
        pass

    def finished(self, outcome: Any) -> None:
        error: Any = getattr(outcome, "error", None)
        text = None if error is None else f"{type(error).__name__}: {error}"
        self.timeline.finish(self.clock(), text)

    @contextlib.contextmanager
    def performing(self, key: str) -> Generator[None]:
        yield


def _json(question: Any) -> Any:
    try:
        return question.fingerprint()
    except NotImplementedError:
        return repr(question)

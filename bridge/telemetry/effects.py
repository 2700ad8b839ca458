"""One child span per effect of a call: the runtime's observer, as spans.

:class:`EffectSpans` is the :class:`~runtime.lowlevel.Observer` of one call
(the stepper finds it in :data:`~runtime.lowlevel.OBSERVING`, set by the tap
while the request is taken on). Rules:

* A question asked (fresh work) is a span from the ask to its answer, failure
  or withdrawal, named by its kind (``sample``, ``elicit``, ``step``...: the
  effect's class name, so a new kind needs no code here) and its ``name`` or
  ``key`` if it has one. ``yieldmcp.effect.key`` is its effect key.
* While its question is sent, its span is the current context, so the request
  that carries it is a child, and carries the span's context to the client.
* A question answered from the journal (a 2026-07-28 round replaying earlier
  answers, a step that already ran) is not fresh work: its span is instant
  and marked ``yieldmcp.effect.replayed = true``.
* A reply that reports failed attempts (a step's retries) adds an event per
  retry and ``yieldmcp.effect.attempts``; one that reports an error (a failed
  step) marks the span failed.
* The request span gets ``yieldmcp.call.id``, the call's id, the same in every
  round of a 2026-07-28 call (it travels in the sealed state).
* A branch is a span with its limits as attributes, and each child a span
  under it; they are made when the first effect under them is, so a branch a
  round only replays is marked replayed too.
* Notices (log, progress) are span events on the enclosing span; an invalid
  model answer (the tool may ask again: a retry) is a ``yieldmcp.retry`` event.
* When the request is answered, spans still open end with
  ``yieldmcp.effect.outcome`` = the result type (``input_required``: the
  question went back to the client in ``inputRequests``).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Generator
from typing import Any, cast, final

from runtime.lowlevel import effect_kind

from ._otel import Api
from .gen_ai import answer_attributes, question_attributes

__all__ = ["EffectSpans"]


class _Branch:
    __slots__ = ("attributes", "children", "span", "started")

    def __init__(self, attributes: dict[str, Any]) -> None:
        self.attributes = attributes
        self.started = time.time_ns()
        self.span: Any = None
        self.children: dict[str, Any] = {}


@final
class EffectSpans:
    """The observer of one call (see the module doc)."""

    def __init__(self, otel: Api, tracer: Any, root: Any) -> None:
        self._otel = otel
        self._tracer = tracer
        self._root = root  # the request span's context
        self._open: dict[str, tuple[Any, Any]] = {}  # key -> (span, question)
        self._branches: dict[str, _Branch] = {}

    # --- the Observer protocol -------------------------------------------------------

    def began(self, call_id: str) -> None:
        request = self._otel.trace.get_current_span(self._root)
        request.set_attribute("yieldmcp.call.id", call_id)

    def asked(self, key: str, question: Any) -> None:
        self._open[key] = (self._start(key, question, replayed=False), question)

    def replayed(self, key: str, question: Any, recorded: Any) -> None:
        span = self._start(key, question, replayed=True)
        span.end()

    def answered(self, key: str, reply: Any) -> None:
        entry = self._open.pop(key, None)
        if entry is None:
            return
        span, question = entry
        span.set_attributes(answer_attributes(question, reply))
        span.set_attribute("yieldmcp.effect.outcome", "answered")
        invalid = _invalid(question, reply, key)
        if invalid is not None:
            span.add_event("yieldmcp.retry", {"yieldmcp.retry.reason": invalid})
        self._attempts(span, reply)
        span.end()

    def _attempts(self, span: Any, reply: Any) -> None:
        """A reply that tells of failed attempts (a step's retries) and of
        its own failure: an event per retry, the attempt count, the error."""
        attempts: Any = getattr(reply, "attempts", None)
        if isinstance(attempts, tuple) and attempts:
            failures = [str(f) for f in cast("tuple[Any, ...]", attempts)]
            span.set_attribute("yieldmcp.effect.attempts", len(failures) + 1)
            for failure in failures:
                span.add_event("yieldmcp.retry", {"yieldmcp.retry.reason": failure})
        error: Any = getattr(reply, "error", None)
        if isinstance(error, tuple) and error:
            kind = str(cast("tuple[Any, ...]", error)[0])
            span.set_attribute("error.type", kind)
            span.set_attribute("yieldmcp.effect.outcome", "failed")
            span.set_status(self._otel.Status(self._otel.StatusCode.ERROR, kind))

    def failed(self, key: str, error: BaseException) -> None:
        entry = self._open.pop(key, None)
        if entry is not None:
            self._fail(entry[0], error)
            entry[0].end()

    def withdrawn(self, key: str) -> None:
        entry = self._open.pop(key, None)
        if entry is not None:
            entry[0].set_attribute("yieldmcp.effect.outcome", "withdrawn")
            entry[0].end()

    def told(self, key: str, notice: Any, fresh: bool) -> None:
        if not fresh:
            return
        parent = self._otel.trace.get_current_span(self._parent(key, replayed=False))
        attributes: dict[str, Any] = {"yieldmcp.effect.key": key}
        for name in ("level", "data", "message", "progress", "total"):
            value = getattr(notice, name, None)
            if isinstance(value, str | int | float) and not isinstance(value, bool):
                attributes[f"yieldmcp.{effect_kind(notice)}.{name}"] = value
        parent.add_event(effect_kind(notice), attributes)

    def branched(self, key: str, limits: Any, children: int) -> None:
        attributes: dict[str, Any] = {
            "yieldmcp.effect.key": key,
            "yieldmcp.effect.kind": "branch",
            "yieldmcp.branch.children": children,
        }
        for name in ("max_depth", "max_tokens", "timeout"):
            value = getattr(limits, name, None)
            if value is not None:
                attributes[f"yieldmcp.branch.{name}"] = value
        self._branches[key] = _Branch(attributes)

    def joined(self, key: str, error: BaseException | None) -> None:
        branch = self._branches.pop(key, None)
        if branch is None or branch.span is None:
            return
        for child in branch.children.values():
            child.end()
        if error is not None:
            self._fail(branch.span, error)
        branch.span.end()

    def finished(self, outcome: Any) -> None:
        pass  # the request's span says how the call ended

    @contextlib.contextmanager
    def performing(self, key: str) -> Generator[None]:
        entry = self._open.get(key)
        if entry is None:
            yield
            return
        context = self._otel.context
        token = context.attach(self._otel.trace.set_span_in_context(entry[0]))
        try:
            yield
        finally:
            context.detach(token)

    # --- for the tap -----------------------------------------------------------------

    def close(self, outcome: str) -> None:
        """The request is answered: end what is still open."""
        for span, _question in self._open.values():
            span.set_attribute("yieldmcp.effect.outcome", outcome)
            span.end()
        self._open.clear()
        for key in sorted(self._branches, key=len, reverse=True):
            self.joined(key, None)

    # --- internals -------------------------------------------------------------------

    def _start(self, key: str, question: Any, *, replayed: bool) -> Any:
        kind = effect_kind(question)
        label = _label(question)
        attributes: dict[str, Any] = {
            "yieldmcp.effect.key": key,
            "yieldmcp.effect.kind": kind,
            "yieldmcp.effect.replayed": replayed,
        }
        if label is not None:
            attributes["yieldmcp.effect.name"] = label
        attributes.update(question_attributes(question))
        return self._tracer.start_span(
            kind if label is None else f"{kind} {label}",
            context=self._parent(key, replayed=replayed),
            attributes=attributes,
        )

    def _parent(self, key: str, *, replayed: bool) -> Any:
        """The context an effect at ``key`` starts in: its branch child's span
        (made, with its branch's, when first needed), or the request's."""
        prefix = key.rpartition("/")[0]  # "3.1/0" -> "3.1"; "0" -> ""
        if not prefix:
            return self._root
        branch_key, _dot, index = prefix.rpartition(".")
        branch = self._branches.get(branch_key)
        if branch is None:
            return self._root
        trace = self._otel.trace
        if branch.span is None:
            branch.span = self._tracer.start_span(
                "branch",
                context=self._parent(branch_key, replayed=replayed),
                attributes={**branch.attributes, "yieldmcp.effect.replayed": replayed},
                start_time=branch.started,
            )
        elif not replayed:
            branch.span.set_attribute("yieldmcp.effect.replayed", False)
        child = branch.children.get(index)
        if child is None:
            child = branch.children[index] = self._tracer.start_span(
                f"branch child {index}",
                context=trace.set_span_in_context(branch.span),
                attributes={
                    "yieldmcp.effect.key": prefix,
                    "yieldmcp.branch.child": int(index),
                    "yieldmcp.effect.replayed": replayed,
                },
                start_time=branch.started,
            )
        elif not replayed:
            child.set_attribute("yieldmcp.effect.replayed", False)
        return trace.set_span_in_context(child)

    def _fail(self, span: Any, error: BaseException) -> None:
        otel = self._otel
        span.set_attribute("error.type", type(error).__name__)
        span.set_attribute("yieldmcp.effect.outcome", "failed")
        span.set_status(otel.Status(otel.StatusCode.ERROR, str(error)))


def _label(effect: Any) -> str | None:
    for name in ("name", "key"):
        value = getattr(effect, name, None)
        if isinstance(value, str) and value:
            return value
    return None


def _invalid(question: Any, reply: Any, key: str) -> str | None:
    """Why a model's answer is unusable (the tool may retry), if it is."""
    if effect_kind(question) != "sample":
        return None
    try:
        result = question.resolve(reply, key)
    except Exception as exc:
        return type(exc).__name__
    error = getattr(result, "parse_error", None)
    return None if error is None else str(getattr(error, "message", error))

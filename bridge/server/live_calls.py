"""Live ``tools/call`` without a task: a 2025-11-25 call driven by the session.

A live call spends nearly all its life waiting on the client — a model, a
person. Run in a task (``runtime.lowlevel.run`` with
:class:`~bridge.server.live.LiveExecutor`), waiting costs a task, its cancel
scopes and a stack of coroutine frames for as long as the call is parked. Here
a call is a record instead: the sans-IO stepper, and which of our requests in
flight asks which of its questions. The session drives it from its receive
path: a reply is decoded and handed to the stepper, whatever the stepper asks
next is sent at once, and the response is sent when the stepper finishes.
Nothing waits: a parked call is its stepper, its generators and a table entry
per open question.

It is used when the session can send without waiting
(:attr:`~bridge.jsonrpc.session.Session.immediate`); the task-based driver stays the
general path (other transports, prompts, in-process hosts). The two behave the
same, because the stepper makes every decision and this module only carries
its events out, as the driver does:

* in the order produced; questions asked in a step are sent after that step's
  notices, and one withdrawn in the same step is never sent;
* each question is a request related to the call, under the server's sampling
  or elicitation timeout; a reply to a withdrawn question is ignored;
* a question that is withdrawn (a failed, timed-out or over-budget branch
  sibling; a cancelled call) is withdrawn from the client with
  ``notifications/cancelled``;
* a missing capability, a malformed answer, an error reply or a timeout is
  raised into the tool at its ``yield``;
* ``notifications/cancelled`` for the call, or the client leaving, closes its
  generators, withdraws its questions and sends no response;
* the outcome becomes a result or an error as in the task path
  (:func:`bridge.server.methods.tool_call_result`, then :mod:`bridge.jsonrpc.errors`);
* a step (``ctx.step``) must wait, so it runs in a task of its own (a trio
  system task, cancelled with the call), under the server's step limiter;
  its reply comes back as a timer's callback does, one piece at a time.
"""

from __future__ import annotations

import contextlib
import random
import time
from typing import TYPE_CHECKING, Any, Final, cast

import trio

from bridge.jsonrpc.messages import RequestId
from bridge.jsonrpc.session import Session
from bridge.jsonrpc.timers import Timer
from runtime import Tool
from runtime.errors import BrokenSessionError, ClosedSessionError
from runtime.lowlevel import (
    Ask,
    Cancelled,
    Event,
    LocalQuestion,
    Notice,
    PeerQuestion,
    Raised,
    ReleaseStream,
    Returned,
    StartTimer,
    Step,
    Stepper,
    StopTimer,
    Tell,
    Withdraw,
    perform_step,
    performing,
    step_key,
)

from .call_outcome import respond
from .questions import CallScope, ask, decode_answer, notice_notification

if TYPE_CHECKING:
    from .offer import Offer

__all__ = ["LiveCall"]

_SAMPLING: Final = "sampling/createMessage"


class LiveCall:
    """One live call, parked between the client's replies (see the module doc)."""

    __slots__ = (
        "_asked",
        "_key",
        "_rid",
        "_scope",
        "_server",
        "_session",
        "_stepper",
        "_steps",
        "_timers",
        "_tool",
    )

    def __init__(
        self,
        server: Offer,
        session: Session,
        scope: CallScope,
        tool: Tool[Any, Any],
        stepper: Stepper,
    ) -> None:
        self._server = server
        self._session = session
        self._scope = scope
        self._tool = tool
        self._stepper = stepper
        # Which of our requests asks which question (effect key): the first
        # in two slots, more (concurrent branches) in a dict made when needed.
        self._rid: RequestId | None = None
        self._key = ""
        self._asked: dict[RequestId, str] | None = None
        self._timers: dict[str, Timer] | None = None  # branch time limits, by key
        self._steps: dict[str, trio.CancelScope] | None = None  # running, by key

    def start(self) -> None:
        """Take the call on: its stepper has started."""
        self._session.adopt(self._scope.request_id, self)
        self._advance()

    # --- what the session calls ------------------------------------------------------

    def replied(self, request_id: RequestId, result: Any, error: Any) -> None:
        """The client answered question ``request_id`` (or it failed)."""
        key = self._forget(request_id)
        stepper = self._stepper
        question = None if key is None else stepper.question(key)
        if key is None or question is None:
            return  # withdrawn while the reply was on its way
        if error is not None:
            stepper.fail(key, error)
        else:
            try:
                reply = decode_answer(cast("PeerQuestion[Any]", question), result)
            except Exception as exc:
                stepper.fail(key, exc)
            else:
                self._settle(key, reply)
        self._advance()

    def cancel(self) -> None:
        """The client cancelled the call, or left: close it, answer nothing."""
        stepper = self._stepper
        if stepper.outcome is not None:
            return
        stepper.cancel()
        for event in stepper.events():
            if isinstance(event, Withdraw):
                self._withdraw(event.key)
        self._end()

    # --- carrying out the stepper's events -------------------------------------------

    def _advance(self) -> None:
        """Carry out events until the call waits on the client, or is over."""
        stepper = self._stepper
        asks: list[Ask] = []
        while True:
            events = stepper.events()
            for event in events:
                if isinstance(stepper.outcome, Cancelled):
                    return  # cancel() ended the call meanwhile
                self._carry_out(event, asks)
            if events:
                continue
            outcome = stepper.outcome
            if isinstance(outcome, Cancelled):
                return
            if outcome is not None:
                self._end()
                return
            if not asks:
                return
            batch, asks = asks, []
            for event in batch:
                if stepper.outcome is None:
                    self._ask(event.key, cast("PeerQuestion[Any]", event.question))

    def _carry_out(self, event: Event, asks: list[Ask]) -> None:
        match event:
            case Ask(key, question) if isinstance(question, LocalQuestion):
                self._answer_locally(key, question)
            case Ask(key, question) if type(question) is Step:
                self._start_step(key, question)
            case Ask():
                asks.append(event)
            case Tell(key, notice):
                self._tell(key, notice)
            case Withdraw(key):
                unsent = [a for a in asks if a.key != key]
                if len(unsent) < len(asks):
                    asks[:] = unsent  # asked in this same step: never sent
                else:
                    self._withdraw(key)
            case StartTimer(key, seconds):
                if self._timers is None:
                    self._timers = {}
                self._timers[key] = self._session.call_later(seconds, self._expire, key)
            case StopTimer(key):
                timer = self._timers.pop(key, None) if self._timers else None
                if timer is not None:  # None once the timer itself fired
                    timer.cancel()
            case _:
                pass

    def _ask(self, key: str, question: PeerQuestion[Any]) -> None:
        self._send_question(key, question)

    def _send_question(
        self,
        key: str,
        question: PeerQuestion[Any],
        rid: RequestId | None = None,
        send: bool = True,
    ) -> None:
        """Ask ``question`` (``rid``: with that request id; ``send=False``:
        only wait for the answer to it, asked before)."""
        scope, session = self._scope, self._session
        try:
            method, params = ask(question, scope, key)
            server = self._server
            with performing(self._stepper.observer, key):  # the effect's span
                request_id = session.request_nowait(
                    method,
                    params,
                    owner=self,
                    related=scope.request_id,
                    timeout=server.sampling_timeout
                    if method == _SAMPLING
                    else server.elicitation_timeout,
                    request_id=rid,
                    send=send,
                )
        except (BrokenSessionError, ClosedSessionError) as exc:
            if session.peer_gone or session.closed:
                self.cancel()  # the call needs a peer that has left
            else:
                self._stepper.fail(key, exc)
            return
        except Exception as exc:
            self._stepper.fail(key, exc)
            return
        if self._rid is None:
            self._rid, self._key = request_id, key
        else:
            if self._asked is None:
                self._asked = {}
            self._asked[request_id] = key

    def _answer_locally(self, key: str, question: LocalQuestion[Any]) -> None:
        try:
            # The random module's shared generator: seeding one per call
            # would cost more than the rest of a plain call.
            reply = question.compute(time.time, random.getrandbits)
        except Exception as exc:
            self._stepper.fail(key, exc)
        else:
            self._settle(key, reply)

    def _settle(self, key: str, reply: Any) -> None:
        """Give the stepper the answer at ``key``."""
        self._stepper.answer(key, reply)

    def _start_step(self, key: str, step: Step) -> None:
        scope = trio.CancelScope()
        if self._steps is None:
            self._steps = {}
        self._steps[key] = scope
        idempotency = step_key(self._stepper.call_id, step, key)
        trio.lowlevel.spawn_system_task(self._run_step, key, step, idempotency, scope)

    async def _run_step(
        self, key: str, step: Step, idempotency: str, scope: trio.CancelScope
    ) -> None:
        with scope:
            limiter = self._server.step_limiter
            try:
                reply: Any = await perform_step(step, idempotency, limiter=limiter)
            except Exception as exc:
                reply = exc
            # If the session has ended, it has cancelled the call already.
            with contextlib.suppress(Exception):
                self._session.call_later(0, self._step_done, (key, reply))

    def _step_done(self, done: tuple[str, Any]) -> None:
        key, reply = done
        if self._steps is not None:
            self._steps.pop(key, None)
        stepper = self._stepper
        if stepper.outcome is not None or not stepper.is_pending(key):
            return  # withdrawn, or the call ended, while it ran
        if isinstance(reply, Exception):
            stepper.fail(key, reply)
        else:
            self._settle(key, reply)
        self._advance()

    def _tell(self, key: str, notice: Notice) -> None:
        self._send_notice(key, notice)

    def _send_notice(self, key: str, notice: Notice) -> None:
        session, scope = self._session, self._scope
        try:
            if isinstance(notice, ReleaseStream):
                session.release_stream_nowait(scope.request_id)
                return
            notification = notice_notification(notice, scope, key)
            if notification is not None:
                method, params = notification
                session.notify_nowait(method, params, related=scope.request_id)
        except BrokenSessionError:
            self.cancel()  # nothing more can reach the client

    def _withdraw(self, key: str) -> None:
        step = self._steps.pop(key, None) if self._steps else None
        if step is not None:
            step.cancel()  # an async step stops; a thread step is abandoned
            return
        request_id: RequestId | None = None
        if self._rid is not None and self._key == key:
            request_id = self._rid
        elif self._asked:
            request_id = next((r for r, k in self._asked.items() if k == key), None)
        if request_id is not None:
            self._forget(request_id)
            self._session.cancel_nowait(request_id)

    def _forget(self, request_id: RequestId) -> str | None:
        """The effect key request ``request_id`` asks (None if not ours now)."""
        if request_id == self._rid:
            self._rid = None
            return self._key
        return self._asked.pop(request_id, None) if self._asked else None

    def _expire(self, key: str) -> None:
        if self._timers is not None:
            self._timers.pop(key, None)
        if self._stepper.outcome is None:
            self._stepper.expire(key)
            self._advance()

    # --- the end ---------------------------------------------------------------------

    def _end(self) -> None:
        """Answer the call (unless cancelled) and let the session forget it."""
        if self._timers:
            for timer in self._timers.values():
                timer.cancel()
        self._timers = None
        self._server.calls.leave()
        self._finish(self._stepper.outcome)

    def _finish(self, outcome: object) -> None:
        """Answer with ``outcome`` (nothing if cancelled); the call is over."""
        if isinstance(outcome, Returned | Raised):
            respond(self._server, self._session, self._scope, self._tool, outcome)
        self._session.release(self._scope.request_id, self)

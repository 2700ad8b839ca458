"""A live 2025-11-25 call that is written down as it goes (with a store).

:class:`DurableCall` is a :class:`~bridge.server.live_calls.LiveCall` whose
every step outward waits for its record in the store
(:class:`~bridge.server.durable_calls.CallLog`): the call's document before it
starts, an answer or step result before the stepper gets it, a notice's key
before it is sent, a question (under its stable id, ``"<call id>/<key>"``)
before it is sent, and the response before it is sent. A call taken on by
another process does not send again the questions the client has seen: it
waits for their answers under the same ids.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast, final

from bridge.jsonrpc.session import Session
from runtime import Tool
from runtime.lowlevel import Notice, PeerQuestion, Question, Raised, Returned, Stepper

from .call_outcome import outcome_json, send
from .call_records import answer_record
from .durable_calls import CallLog, question_id
from .live_calls import LiveCall
from .questions import CallScope

if TYPE_CHECKING:
    from .offer import Offer

__all__ = ["DurableCall"]


@final
class DurableCall(LiveCall):
    """A live call with a write-ahead record (see the module docstring)."""

    __slots__ = ("_log",)

    def __init__(
        self,
        server: Offer,
        session: Session,
        scope: CallScope,
        tool: Tool[Any, Any],
        stepper: Stepper,
        log: CallLog,
    ) -> None:
        super().__init__(server, session, scope, tool, stepper)
        self._log = log

    def start(self) -> None:
        self._session.adopt(self._scope.request_id, self)
        if self._log.revived is None:
            self._log.open(self._written, None)  # in the store before it runs
        else:
            self._advance()

    def _written(self, _arg: object, _error: BaseException | None) -> None:
        self._advance()

    # --- answers -------------------------------------------------------------------

    def _settle(self, key: str, reply: Any) -> None:
        stepper = self._stepper
        question = cast("Question[Any]", stepper.question(key))
        digest, label = stepper.digest(key), question.label()
        record = answer_record(key, digest, question.reply_to_json(reply), label)
        self._log.write([record], self._recorded, (key, reply))

    def _recorded(self, done: tuple[str, Any], error: BaseException | None) -> None:
        key, reply = done
        stepper = self._stepper
        if stepper.outcome is not None or not stepper.is_pending(key):
            return  # withdrawn, or the call ended, while it was written
        if error is not None:
            stepper.fail(key, error)  # not recorded: the tool must not go on
        else:
            stepper.answer(key, reply)
        self._advance()

    # --- questions and notices -------------------------------------------------------

    def _ask(self, key: str, question: PeerQuestion[Any]) -> None:
        log = self._log
        rid = question_id(log.tag, key)  # the same in every process
        if log.seen(key):
            self._send_question(key, question, rid, send=False)
        else:
            log.asking(key, self._asked_now, (key, question, rid))

    def _asked_now(
        self, args: tuple[str, PeerQuestion[Any], str], error: BaseException | None
    ) -> None:
        key, question, rid = args
        stepper = self._stepper
        if stepper.outcome is not None or not stepper.is_pending(key):
            return  # withdrawn before it went out
        if error is not None:
            stepper.fail(key, error)
        else:
            self._send_question(key, question, rid)
        self._advance()

    def _tell(self, key: str, notice: Notice) -> None:
        self._log.noting(key, self._told, (key, notice))

    def _told(self, args: tuple[str, Notice], _error: BaseException | None) -> None:
        if self._stepper.outcome is None or not self._cancelled():
            self._send_notice(*args)

    def _cancelled(self) -> bool:
        outcome = self._stepper.outcome
        return outcome is not None and not isinstance(outcome, Returned | Raised)

    # --- the end -------------------------------------------------------------------

    def _finish(self, outcome: object) -> None:
        session, log = self._session, self._log
        if isinstance(outcome, Returned | Raised):
            response = outcome_json(self._server, self._scope, self._tool, outcome)
            log.finishing(response, self._respond, response)
            return
        if session.closed or session.peer_gone:
            log.leave()  # the session ended here, not the call
        else:
            log.forget()  # the client cancelled it
        session.release(self._scope.request_id, self)

    def _respond(self, response: Any, _error: BaseException | None) -> None:
        send(self._session, self._scope, response)
        self._session.release(self._scope.request_id, self)

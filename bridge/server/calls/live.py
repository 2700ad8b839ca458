"""A live 2025-11-25 call: driven by its session, with no task while it waits.

A live call spends nearly all its life waiting on the client: a model, a
person. So it is not a task but a record: its machine
(:class:`~runtime.call.machine.CallMachine`) and which of our requests in
flight asks which of its questions. The session drives it from its receive
path: a reply is decoded and handed to the machine, whatever the machine asks
next is sent at once, and the response is sent when it finishes. A parked
call is its machine, its generators and a table entry per open question.

What it does with each command:

* **ask**: a request related to the call (over HTTP it travels on the call's
  stream), under the server's sampling or elicitation timeout; or, for a
  sample the server's own model answers (:mod:`bridge.server.fallback`), that
  model, in a task. A missing capability, a malformed answer, an error reply
  or a timeout is raised into the tool at its ``yield``. At most
  ``ServerLimits.max_questions_per_round`` (64, what our client answers at
  once) of a call's questions are out at once: the others wait, unsent and
  untimed, first come first sent, as a 2026-07-28 call's wait for its next
  round (:class:`_Gate`);
* **run a step**: in a task of the session's nursery, under the server's step
  threads (:mod:`.work`); its reply comes back like a timer's callback, one
  piece at a time;
* **withdraw**: ``notifications/cancelled`` for a request (a late reply is
  ignored), or the step's task is cancelled;
* **notify**: a notification on the call's stream;
* **persist**: with a store, written down by the call's log
  (:class:`~bridge.durable.live.LiveLog`) before anything after it;
* **timers**: the session's;
* **finish**: the response (:mod:`.outcome`), written down first with a store.
  A call that ends because the store failed to record it is answered as a
  2026-07-28 request the store fails: ``-32603`` "Internal error: the server's
  store failed; try again", not a tool's failure; and while the store is
  known to be away its response does not wait on it again
  (:class:`~bridge.durable.presence.Outage`).

``notifications/cancelled`` for the call, or the client leaving, cancels the
machine: its generators close, its questions are withdrawn, nothing is sent.

With a store, a call on a *durable* session (HTTP) is written down as it goes
(:mod:`bridge.durable.live`): its document before it starts, every
record before what follows it, each question (under its stable id,
``"<call id>/<key>"``) before it is sent, and the response before it is sent.
:func:`revive` takes such a call on in another process (or after a restart):
its generator is replayed against its records, so every recorded answer and
step result is reused, notices already sent are not sent again, and the
questions the client has already seen are not asked again (their answers
will arrive under the same ids). The document keeps the tool's version: a
call is taken on only by code of that version or of a tool that continues it
(:func:`~bridge.server.versions.check_version`); otherwise its client is
answered with that check's error.
"""

from __future__ import annotations

import collections
import contextvars
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, TypeAlias, cast, final

import trio

from bridge.durable import StoreError
from bridge.durable.live import Home, LiveLog, Revived, call_id_of, question_id
from bridge.durable.log import size_of
from bridge.jsonrpc.errors import error_data, store_failed
from bridge.jsonrpc.messages import Request, RequestId
from bridge.jsonrpc.session import Session
from bridge.jsonrpc.timers import Timer
from runtime import Tool
from runtime.codec import naming_server_models, with_model_name
from runtime.errors import (
    BrokenSessionError,
    ClosedSessionError,
    InvalidArguments,
    RequestError,
)
from runtime.lowlevel import (
    AskPeer,
    CallMachine,
    Cancelled,
    CancelTimer,
    Finish,
    Journal,
    Notify,
    Outcome,
    PeerQuestion,
    Persist,
    Raised,
    ReleaseStream,
    RunStep,
    Sample,
    SetTimer,
    WithdrawQuestion,
    carry_out,
    open_call,
    performing,
)

from ..fallback import answer_here
from ..methods import arguments as arguments_of
from ..methods import resolve_prompt, resolve_tool
from ..questions import CallScope, ask, decode_answer, notice_notification
from ..versions import check_version
from .outcome import outcome_json, send
from .work import perform, within

if TYPE_CHECKING:
    from ..catalog import Prompt
    from ..offer import Offer

__all__ = ["LiveCall", "begin", "begin_prompt", "revive"]

_SAMPLING: Final = "sampling/createMessage"

Program: TypeAlias = "Tool[Any, Any] | Prompt"


def begin(
    server: Offer,
    request: Request,
    session: Session,
    scope: CallScope,
    home: Home | None = None,
) -> None:
    """Take live ``tools/call`` ``request`` on; with ``home`` (a durable
    session), written down in its store as it goes.

    A tool that ends before it starts (a plain function's value, or an error)
    is answered at once: nothing to step or wait for, so no call is kept.
    Arguments that fail the tool's input schema are answered at once, as an
    isError result.

    Raises:
        RequestError: -32602 for an unknown tool (answered as an error).
    """
    params = request.params or {}
    tool = resolve_tool(server, params)
    try:
        arguments = tool.check_arguments(params.get("arguments"))
    except InvalidArguments as exc:
        send(session, scope, outcome_json(server, scope, tool, Raised(exc)))
        return
    log: LiveLog | None = None
    journal: Journal | None = None
    if home is not None:
        call_id = call_id_of(home.session_id, request.id)
        journal = Journal.from_records((), call_id)
        doc = {
            "session": home.session_id,
            "request": request.id,
            "params": dict(params),
            "stream": home.stream_of(request.id),
            "tag": call_id,
            "worker": home.worker,
        }
        if tool.version is not None:
            doc["version"] = tool.version
        log = LiveLog(session.start_soon, home, call_id, call_id, doc)
    _start(server, session, scope, tool, arguments, journal, log)


def begin_prompt(
    server: Offer, request: Request, session: Session, scope: CallScope
) -> None:
    """Take live ``prompts/get`` ``request`` on, as a call of its program.

    Raises:
        RequestError: -32602 for an unknown prompt or bad arguments.
    """
    params = request.params or {}
    prompt = resolve_prompt(server, params)
    arguments = prompt.program.parse_arguments(arguments_of(params))
    _start(server, session, scope, prompt, arguments, None, None)


def revive(
    server: Offer,
    session: Session,
    scope: CallScope,
    home: Home,
    doc: Mapping[str, Any],
    records: Sequence[Mapping[str, Any]],
    revived: Revived,
) -> None:
    """Take on again the call ``doc`` describes, replaying ``records``.

    Raises:
        RequestError: its tool is gone (answered as an error).
        ValueError: the records are malformed.
    """
    params: Mapping[str, Any] = doc["params"]
    tool = resolve_tool(server, params)
    recorded: Any = doc.get("version")
    refused: RequestError | None = None
    if isinstance(recorded, str):  # absent: written before calls kept one
        try:
            check_version(tool, recorded, made="call", again="call the tool again")
        except RequestError as exc:
            refused = exc
    if refused is None and tool.version is not None:
        doc = {**doc, "version": tool.version}  # continued: run by this code now
    log = LiveLog(session.start_soon, home, revived.call_id, revived.tag, doc, revived)
    if refused is not None:  # the call ends with it, kept as it ends
        response = {"error": error_data(refused).to_json()}
        log.finishing(response, lambda r, _e: send(session, scope, r), response)
        return
    arguments = tool.check_arguments(params.get("arguments"))
    journal = Journal.from_records(records, revived.call_id)
    journal.reach(revived.asked)  # questions sent: the call went past them
    log.journal.written = size_of(records)  # the bound counts what was written
    models = _answered_here(journal, revived.asked)
    if not _start(server, session, scope, tool, arguments, journal, log, models):
        log.forget()


def _answered_here(journal: Journal, asked: Mapping[str, int]) -> tuple[str, ...]:
    """The models of the server's own that answered the samples ``journal``
    records, first first: a sample no client was asked (``asked``: every
    question sent is written down before it goes) was answered here."""
    names: tuple[str, ...] = ()
    recorded = journal.keys()  # in the order recorded
    for key in recorded:
        entry = journal.entry(key)
        if entry is None or entry[2] != Sample.__name__ or key in asked:
            continue
        reply: Any = entry[1]
        model: Any = (
            cast("dict[str, Any]", reply).get("model")
            if isinstance(reply, dict)
            else None
        )
        if isinstance(model, str):
            names = with_model_name(names, model)
    return names


def _start(
    server: Offer,
    session: Session,
    scope: CallScope,
    program: Program,
    arguments: Any,
    journal: Journal | None,
    log: LiveLog | None,
    models: tuple[str, ...] = (),
) -> bool:
    """Start the call; False if it was answered at once (nothing to keep).
    ``models``: the server's own that answered its samples already (a call
    taken on again)."""
    server.calls.admit(session.in_flight)
    tool = program if isinstance(program, Tool) else program.program
    try:
        opened = open_call(
            tool.program(arguments),
            tool.context(scope.principal),
            journal=journal,
            durable=log is not None,
        )
    except BaseException:
        server.calls.leave()
        raise
    if isinstance(opened, CallMachine):
        LiveCall(server, session, scope, program, opened, log, models).start()
        return True
    server.calls.leave()
    send(session, scope, outcome_json(server, scope, program, opened))
    return False


@final
class _Gate:
    """A live call's questions out at once, and those held back until fewer
    are: a client answers only so many at once (ours 64, refusing the rest
    "Client busy"), so a wide branch would fail there. ``waiting`` says
    whether a question is still unanswered: answered or withdrawn ones leave."""

    __slots__ = ("held", "out", "waiting")

    def __init__(self, waiting: Callable[[str], bool]) -> None:
        self.waiting = waiting
        self.out: list[str] = []
        self.held: collections.deque[tuple[str, PeerQuestion[Any]]] = (
            collections.deque()
        )

    def admits(self, key: str, limit: int) -> bool:
        """Whether question ``key`` may be sent now (it is then counted out);
        never ahead of questions held back."""
        if self.held or not self._room(limit):
            return False
        self.out.append(key)
        return True

    def _room(self, limit: int) -> bool:
        if len(self.out) >= limit:
            self.out = [key for key in self.out if self.waiting(key)]
        return len(self.out) < limit

    def next_fitting(self, limit: int) -> tuple[str, PeerQuestion[Any]] | None:
        """The first question held back, if one fits now (counted out); one
        withdrawn meanwhile is dropped."""
        while self.held and self._room(limit):
            key, question = self.held.popleft()
            if self.waiting(key):
                self.out.append(key)
                return key, question
        return None


@final
class LiveCall:
    """One live call, parked between the client's replies (see the module doc):
    the session's handle on it, and the carrier of its machine's commands."""

    __slots__ = (
        "_asked",
        "_context",
        "_gate",
        "_key",
        "_log",
        "_machine",
        "_models",
        "_over",
        "_program",
        "_rid",
        "_running",
        "_scope",
        "_server",
        "_session",
        "_timers",
    )

    def __init__(
        self,
        server: Offer,
        session: Session,
        scope: CallScope,
        program: Program,
        machine: CallMachine,
        log: LiveLog | None,
        models: tuple[str, ...] = (),
    ) -> None:
        self._server = server
        self._session = session
        self._scope = scope
        self._program = program
        self._machine = machine
        self._log = log
        # Which of our requests asks which question (effect key): the first
        # in two slots, more (concurrent branches) in a dict made when needed.
        self._rid: RequestId | None = None
        self._key = ""
        self._asked: dict[RequestId, str] | None = None
        self._timers: dict[str, Timer] | None = None  # branch deadlines, by key
        self._running: dict[str, trio.CancelScope] | None = None  # steps, samples
        self._models = models  # the server's own, that answered samples
        self._over = False
        self._gate: _Gate | None = None  # made when it first asks
        # The call's context variables (its span...), for the work it starts
        # later from the session's receive path.
        self._context = contextvars.copy_context()

    def start(self) -> None:
        """Take the call on: its machine has started."""
        self._session.adopt(self._scope.request_id, self)
        log = self._log
        if log is not None and log.revived is None:
            log.open(self._opened, None)  # in the store before it shows anything
        else:
            self._advance()

    def _opened(self, _arg: object, error: BaseException | None) -> None:
        if error is not None:
            self._machine.persist_failed(error)
        self._advance()

    # --- what the session calls ------------------------------------------------------

    def replied(self, request_id: RequestId, result: Any, error: Any) -> None:
        """The client answered question ``request_id`` (or it failed)."""
        key = self._forget(request_id)
        machine = self._machine
        question = None if key is None else machine.question(key)
        if key is None or question is None:
            return  # withdrawn while the reply was on its way
        if error is not None:
            machine.fail(key, error)
        else:
            try:
                reply = decode_answer(cast("PeerQuestion[Any]", question), result)
            except Exception as exc:
                machine.fail(key, exc)
            else:
                machine.answer(key, reply)
        self._advance()

    def cancel(self) -> None:
        """The client cancelled the call, or left: close it, answer nothing."""
        if self._over:
            return
        self._over = True
        machine = self._machine
        machine.cancel()
        for command in machine.commands():
            if type(command) is WithdrawQuestion or type(command) is Finish:
                carry_out(command, self)

    # --- carrying the machine's commands out -----------------------------------------

    def _advance(self) -> None:
        """Carry out commands until the call waits on the client, or is over;
        then send its questions held back that now fit."""
        machine = self._machine
        while not self._over:
            commands = machine.commands()
            if not commands:
                gate, limit = self._gate, self._server.limits.max_questions_per_round
                fitting = None if gate is None else gate.next_fitting(limit)
                if fitting is None:
                    return
                self._put(*fitting)
                continue
            for command in commands:
                carry_out(command, self)
                if self._over:
                    return  # cancel() carried out what was left

    def ask(self, command: AskPeer) -> None:
        key, question = command.key, command.question
        server = self._server
        if server.sampler is not None and answer_here(
            question, self._scope, server.sampler, always=server.sample_always
        ):
            self._run(key, command)  # the server's own model answers it
            return
        log = self._log
        gate = self._gate
        if gate is None:
            gate = self._gate = _Gate(self._machine.is_pending)
        if log is not None and log.seen(key):
            # Out already, from an earlier process: only its answer is awaited,
            # and it counts among the questions out.
            gate.out.append(key)
            rid = question_id(log.tag, key)
            waited = log.waited(key)  # its timeout ran on between processes
            self._send_question(key, question, rid, send=False, waited=waited)
            return
        if not gate.admits(key, self._server.limits.max_questions_per_round):
            gate.held.append((key, question))
            return
        self._put(key, question)

    def _put(self, key: str, question: PeerQuestion[Any]) -> None:
        """Send ``question``: at once, or once the call's log has it."""
        log = self._log
        if log is None:
            self._send_question(key, question)
            return
        rid = question_id(log.tag, key)  # the same in every process
        log.asking(key, self._asked_now, (key, question, rid))

    def _asked_now(
        self, args: tuple[str, PeerQuestion[Any], str], error: BaseException | None
    ) -> None:
        key, question, rid = args
        machine = self._machine
        if self._over or not machine.is_pending(key):
            return  # withdrawn before it went out
        if error is not None:
            machine.fail(key, error)
        else:
            self._send_question(key, question, rid)
        self._advance()

    def _send_question(
        self,
        key: str,
        question: PeerQuestion[Any],
        rid: RequestId | None = None,
        send: bool = True,
        waited: float = 0.0,
    ) -> None:
        """AskPeer ``question`` (``rid``: with that request id; ``send=False``:
        only wait for the answer to it, asked ``waited`` seconds before)."""
        scope, session, server = self._scope, self._session, self._server
        machine = self._machine
        try:
            method, params = ask(question, scope, key)
            with performing(machine.observer, key):  # the effect's span
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
                    waited=waited,
                )
        except (BrokenSessionError, ClosedSessionError) as exc:
            if session.peer_gone or session.closed:
                self.cancel()  # the call needs a peer that has left
            else:
                machine.fail(key, exc)
            return
        except Exception as exc:
            machine.fail(key, exc)
            return
        if self._rid is None:
            self._rid, self._key = request_id, key
        else:
            if self._asked is None:
                self._asked = {}
            self._asked[request_id] = key

    def run_step(self, command: RunStep) -> None:
        self._run(command.key, command)

    def _run(self, key: str, command: RunStep | AskPeer) -> None:
        """Perform ``command`` in a task of the session (a step, or a sample
        the server's model answers); its reply comes back in :meth:`_done`."""
        scope = trio.CancelScope()
        if self._running is None:
            self._running = {}
        self._running[key] = scope
        self._session.start_soon(
            within, self._context, self._perform, key, command, scope
        )

    async def _perform(
        self, key: str, command: RunStep | AskPeer, scope: trio.CancelScope
    ) -> None:
        with scope:
            try:
                reply: Any = await perform(self._server, self._scope, command)
            except Exception as exc:
                reply = exc
            if not self._session.closed:  # else it cancelled the call already
                sampled = isinstance(command, AskPeer)
                self._session.call_later(0, self._done, (key, reply, sampled))

    def _done(self, done: tuple[str, Any, bool]) -> None:
        key, reply, sampled = done
        if self._running is not None:
            self._running.pop(key, None)
        if self._over:
            return
        machine = self._machine
        if isinstance(reply, Exception):
            machine.fail(key, reply)
        else:
            if sampled and machine.is_pending(key):  # the server's model answered
                self._models = with_model_name(self._models, reply.model)
            machine.answer(key, reply)
        self._advance()

    def notify(self, command: Notify) -> None:
        session, scope, notice = self._session, self._scope, command.notice
        try:
            if isinstance(notice, ReleaseStream):
                session.release_stream_nowait(scope.request_id)
                return
            notification = notice_notification(notice, scope, command.key)
            if notification is not None:
                method, params = notification
                session.notify_nowait(method, params, related=scope.request_id)
        except BrokenSessionError:
            self.cancel()  # nothing more can reach the client

    def withdraw(self, command: WithdrawQuestion) -> None:
        key = command.key
        running = self._running.pop(key, None) if self._running else None
        if running is not None:
            running.cancel()  # an async step stops; a thread step is abandoned
            return
        request_id: RequestId | None = None
        if self._rid is not None and self._key == key:
            request_id = self._rid
        elif self._asked:
            request_id = next((r for r, k in self._asked.items() if k == key), None)
        if request_id is not None:
            self._forget(request_id)
            self._session.cancel_nowait(request_id)

    def persist(self, command: Persist) -> None:
        assert self._log is not None  # only a durable machine persists
        self._log.write(command.records, self._persisted, None)

    def _persisted(self, _arg: object, error: BaseException | None) -> None:
        if self._over:
            return
        if error is None:
            self._machine.persisted()
        else:
            self._machine.persist_failed(error)
        self._advance()

    def set_timer(self, command: SetTimer) -> None:
        if self._timers is None:
            self._timers = {}
        timer = self._session.call_later(command.seconds, self._expire, command.key)
        self._timers[command.key] = timer

    def cancel_timer(self, command: CancelTimer) -> None:
        timer = self._timers.pop(command.key, None) if self._timers else None
        if timer is not None:  # None once the timer itself fired
            timer.cancel()

    def _expire(self, key: str) -> None:
        if self._timers is not None:
            self._timers.pop(key, None)
        if not self._over:
            self._machine.timer_fired(key)
            self._advance()

    def finish(self, command: Finish) -> None:
        """Answer the call (unless cancelled) and let the session forget it."""
        self._over = True
        if self._timers:
            for timer in self._timers.values():
                timer.cancel()
        self._timers = None
        self._server.calls.leave()
        self._end(command.outcome)

    def _end(self, outcome: Outcome) -> None:
        session, scope, log = self._session, self._scope, self._log
        if isinstance(outcome, Cancelled):
            if log is not None:
                if session.closed or session.peer_gone:
                    log.leave()  # the session ended here, not the call
                else:
                    log.forget()  # the client cancelled it
            session.release(scope.request_id, self)
            return
        if (
            log is not None
            and log.failed is not None
            and isinstance(outcome, Raised)
            and isinstance(outcome.error, StoreError)
        ):
            # Its record could not be written (the log said why): not the
            # tool's failure, and no tool text for its model to read.
            failed = store_failed(outcome.error)
            response: dict[str, Any] = {"error": failed.to_json()}
        else:
            response = outcome_json(self._server, scope, self._program, outcome)
        if "result" in response:
            response["result"] = naming_server_models(response["result"], self._models)
        if log is None:
            send(session, scope, response)
            session.release(scope.request_id, self)
        else:
            log.finishing(response, self._respond, response)

    def _respond(self, response: Any, _error: BaseException | None) -> None:
        send(self._session, self._scope, response)
        self._session.release(self._scope.request_id, self)

    def _forget(self, request_id: RequestId) -> str | None:
        """The effect key request ``request_id`` asks (None if not ours now)."""
        if request_id == self._rid:
            self._rid = None
            return self._key
        return self._asked.pop(request_id, None) if self._asked else None

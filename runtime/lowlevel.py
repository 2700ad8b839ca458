"""yieldmcp's runtime, as an integrator drives it.

:mod:`runtime` is the tool author's face; this module is the face of whoever
*runs* tools: a server, a host, a test harness, a benchmark. It re-exports,
from the concept folders where they live:

* **A call's life**: the sans-IO :class:`CallMachine` (:func:`open_call`)
  and its commands (:class:`AskPeer`, :class:`RunStep`,
  :class:`WithdrawQuestion`, :class:`Notify`, :class:`Persist`,
  :class:`SetTimer`, :class:`CancelTimer`, :class:`Finish`), carried out by
  a driver (a :class:`Carrier`, through :func:`carry_out`); the journal's
  records (:data:`Record`, :func:`answer_record`, :func:`notice_record`,
  :func:`timer_record`, :func:`patch_record`) and the document of one call's
  journal (:class:`JournalDocument`, in :data:`JOURNAL_FORMAT`).
* **Running a call**: :func:`run` and :func:`drive` against an
  :class:`Executor` (trio), or the sans-IO :class:`Stepper` and :func:`start`
  driven by hand through its events (:class:`Ask`, :class:`Tell`,
  :class:`Withdraw`, :class:`StartTimer`, :class:`StopTimer`,
  :class:`Marked`, :class:`Finished`) to an :data:`Outcome` (:class:`Returned`,
  :class:`Raised`, :class:`Cancelled`); the :class:`Journal` that makes a call
  replayable; the observer API (:class:`Observer`, the :data:`OBSERVING`
  context variable, :func:`performing`, :func:`effect_kind`).
* **Effects**: every effect class and family (:class:`Effect`,
  :class:`Question`, :class:`PeerQuestion`, :class:`LocalQuestion`,
  :class:`Notice`, :class:`AtOnce`, and each kind), and performing a step
  (:func:`perform_step`, :func:`step_key`).
* **Values at the edge**: what a peer question asks and what comes back
  (:class:`SamplingRequest`, :class:`ElicitationRequest`,
  :class:`SampleReply`, :class:`ElicitReply`, :class:`Root`,
  :class:`RootsReply`), the results a tool author rarely names
  (:class:`ElicitUrlResult`, :class:`Exchange`, :class:`ParseError`,
  :class:`Usage`), and the errors an integrator tells apart.
* **Checks** ``encoders``/``decoders`` share: strict wire validation
  (:func:`check_json`, :func:`check_form_properties`), validators of
  JSON Schemas that fetch no ``$ref`` (:func:`offline_validator`,
  :class:`Unresolvable`), an effect's digest
  (:func:`digest`), an elicitation form's schema (:func:`elicitation_schema`),
  a JSON Schema with no non-finite ``default`` (:func:`sendable_schema`),
  how deep a JSON-RPC message may nest and still be read
  (:data:`MAX_MESSAGE_DEPTH`, :func:`nesting`, :func:`nested_too_deep`),
  and the problems of a model's tool calls (:func:`tool_call_problems`).

No name is exported both here and from :mod:`runtime`.
"""

from typing import TYPE_CHECKING, Any

from .call.commands import AskPeer as AskPeer
from .call.commands import CancelTimer as CancelTimer
from .call.commands import Carrier as Carrier
from .call.commands import Command as Command
from .call.commands import Finish as Finish
from .call.commands import Notify as Notify
from .call.commands import Persist as Persist
from .call.commands import RunStep as RunStep
from .call.commands import SetTimer as SetTimer
from .call.commands import WithdrawQuestion as WithdrawQuestion
from .call.commands import carry_out as carry_out
from .call.driver import Executor as Executor
from .call.driver import drive as drive
from .call.driver import run as run
from .call.events import Ask as Ask
from .call.events import Cancelled as Cancelled
from .call.events import Event as Event
from .call.events import Finished as Finished
from .call.events import Marked as Marked
from .call.events import Outcome as Outcome
from .call.events import Raised as Raised
from .call.events import Returned as Returned
from .call.events import StartTimer as StartTimer
from .call.events import StopTimer as StopTimer
from .call.events import Tell as Tell
from .call.events import Withdraw as Withdraw
from .call.journal import JOURNAL_FORMAT as JOURNAL_FORMAT
from .call.journal import Journal as Journal
from .call.journal import JournalDocument as JournalDocument
from .call.journal import JournalEntry as JournalEntry
from .call.journal import Record as Record
from .call.journal import answer_record as answer_record
from .call.journal import notice_record as notice_record
from .call.journal import patch_record as patch_record
from .call.journal import timer_record as timer_record
from .call.machine import CallMachine as CallMachine
from .call.machine import open_call as open_call
from .call.observe import OBSERVING as OBSERVING
from .call.observe import Observer as Observer
from .call.observe import effect_kind as effect_kind
from .call.observe import performing as performing
from .call.stepper import Stepper as Stepper
from .call.stepper import start as start
from .effects.base import AtOnce as AtOnce
from .effects.base import Effect as Effect
from .effects.base import LocalQuestion as LocalQuestion
from .effects.base import Notice as Notice
from .effects.base import PeerQuestion as PeerQuestion
from .effects.base import Question as Question
from .effects.branch import Branch as Branch
from .effects.canonical import digest as digest
from .effects.local import Clock as Clock
from .effects.local import RandomBits as RandomBits
from .effects.notices import Log as Log
from .effects.notices import Progress as Progress
from .effects.notices import ReleaseStream as ReleaseStream
from .effects.patch import Patched as Patched
from .effects.sleep import Sleep as Sleep
from .elicitation.effects import Elicit as Elicit
from .elicitation.effects import ElicitUrl as ElicitUrl
from .elicitation.effects import ListRoots as ListRoots
from .elicitation.schema import elicitation_schema as elicitation_schema
from .errors import BranchDepthExceeded as BranchDepthExceeded
from .errors import BranchTimeout as BranchTimeout
from .errors import CapabilityError as CapabilityError
from .errors import InvalidAnswer as InvalidAnswer
from .errors import InvalidArguments as InvalidArguments
from .errors import InvalidEffect as InvalidEffect
from .errors import InvalidMessages as InvalidMessages
from .errors import InvalidTool as InvalidTool
from .errors import JournalExhausted as JournalExhausted
from .errors import JournalTooLarge as JournalTooLarge
from .errors import LimitExceeded as LimitExceeded
from .errors import PeerError as PeerError
from .errors import ProgressNotIncreasing as ProgressNotIncreasing
from .errors import RequestTimeout as RequestTimeout
from .errors import SleepTooLong as SleepTooLong
from .errors import StepNotRecordable as StepNotRecordable
from .errors import TokenBudgetExceeded as TokenBudgetExceeded
from .messages import Usage as Usage
from .replies import ElicitReply as ElicitReply
from .replies import Root as Root
from .replies import RootsReply as RootsReply
from .replies import SampleReply as SampleReply
from .requests import ElicitationRequest as ElicitationRequest
from .requests import SamplingRequest as SamplingRequest
from .results import ElicitUrlResult as ElicitUrlResult
from .results import Exchange as Exchange
from .results import ParseError as ParseError
from .sampling.effect import Sample as Sample
from .sampling.outcome import tool_call_problems as tool_call_problems
from .steps.effect import Step as Step
from .steps.effect import StepReply as StepReply
from .steps.runner import perform_step as perform_step
from .steps.runner import step_key as step_key
from .wire.check import check_form_properties as check_form_properties
from .wire.check import check_json as check_json
from .wire.check import plain_form_content as plain_form_content
from .wire.check import plain_form_properties as plain_form_properties
from .wire.check import plain_requested_schema as plain_requested_schema
from .wire.check import tagged_model as tagged_model
from .wire.depth import MAX_MESSAGE_DEPTH as MAX_MESSAGE_DEPTH
from .wire.depth import nested_too_deep as nested_too_deep
from .wire.depth import nesting as nesting
from .wire.schemas import offline_validator as offline_validator
from .wire.sendable import sendable_schema as sendable_schema
from .wire.sendable import unsendable as unsendable

if TYPE_CHECKING:
    from .wire.schemas import Unresolvable as Unresolvable

__all__ = [
    "JOURNAL_FORMAT",
    "MAX_MESSAGE_DEPTH",
    "Ask",
    "AskPeer",
    "AtOnce",
    "Branch",
    "BranchDepthExceeded",
    "BranchTimeout",
    "CallMachine",
    "CancelTimer",
    "Cancelled",
    "CapabilityError",
    "Carrier",
    "Clock",
    "Command",
    "Effect",
    "Elicit",
    "ElicitReply",
    "ElicitUrl",
    "ElicitUrlResult",
    "ElicitationRequest",
    "Event",
    "Exchange",
    "Executor",
    "Finish",
    "Finished",
    "InvalidAnswer",
    "InvalidArguments",
    "InvalidEffect",
    "InvalidMessages",
    "InvalidTool",
    "Journal",
    "JournalDocument",
    "JournalEntry",
    "JournalExhausted",
    "JournalTooLarge",
    "LimitExceeded",
    "ListRoots",
    "LocalQuestion",
    "Log",
    "Notice",
    "Marked",
    "Notify",
    "OBSERVING",
    "Observer",
    "Outcome",
    "ParseError",
    "PeerError",
    "PeerQuestion",
    "Persist",
    "Patched",
    "Progress",
    "ProgressNotIncreasing",
    "Question",
    "Raised",
    "RandomBits",
    "Record",
    "ReleaseStream",
    "RequestTimeout",
    "Returned",
    "Root",
    "RootsReply",
    "RunStep",
    "Sample",
    "SampleReply",
    "SamplingRequest",
    "SetTimer",
    "Sleep",
    "SleepTooLong",
    "StartTimer",
    "Step",
    "StepNotRecordable",
    "StepReply",
    "Stepper",
    "StopTimer",
    "Tell",
    "TokenBudgetExceeded",
    "Unresolvable",
    "Usage",
    "Withdraw",
    "WithdrawQuestion",
    "answer_record",
    "carry_out",
    "check_form_properties",
    "check_json",
    "digest",
    "drive",
    "effect_kind",
    "elicitation_schema",
    "nested_too_deep",
    "nesting",
    "notice_record",
    "patch_record",
    "offline_validator",
    "open_call",
    "perform_step",
    "performing",
    "plain_form_content",
    "plain_form_properties",
    "plain_requested_schema",
    "run",
    "sendable_schema",
    "unsendable",
    "start",
    "step_key",
    "tagged_model",
    "timer_record",
    "tool_call_problems",
]


def __getattr__(name: str) -> Any:
    if name == "Unresolvable":  # referencing's, imported when first named
        from .wire import schemas

        return schemas.Unresolvable
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""yieldmcp's runtime: tools as generators of effects, interpreted on trio.

Write a tool as a generator function taking its arguments as typed parameters
(or one pydantic model) and a :class:`Context`; yield effects built by the
context; return the result::

    @tool(elicits={"confirm": Confirm})
    def book(city: str, ctx: Context) -> Op[str]:
        answer = yield from ctx.elicit("confirm", f"Book {city}?")
        tip = yield from ctx.sample(f"One travel tip for {city}")
        return tip.text if answer.accepted else "cancelled"

Run it with :func:`run` against any :class:`Executor` (an MCP session, a
provider, or ``runtime.testing.ScriptedPeer``). This package imports nothing from
``bridge``, ``encoders`` or ``decoders``.
"""

from .call.driver import Executor as Executor
from .call.driver import drive as drive
from .call.driver import run as run
from .call.journal import Journal as Journal
from .call.stepper import Stepper as Stepper
from .context import Context as Context
from .context import ElicitKey as ElicitKey
from .effects import Branch as Branch
from .effects import Clock as Clock
from .effects import Effect as Effect
from .effects import Elicit as Elicit
from .effects import ElicitUrl as ElicitUrl
from .effects import Limits as Limits
from .effects import ListRoots as ListRoots
from .effects import LocalQuestion as LocalQuestion
from .effects import Log as Log
from .effects import Notice as Notice
from .effects import Op as Op
from .effects import PeerQuestion as PeerQuestion
from .effects import Progress as Progress
from .effects import Question as Question
from .effects import RandomBits as RandomBits
from .effects import ReleaseStream as ReleaseStream
from .effects import Sample as Sample
from .effects import Step as Step
from .effects import StepReply as StepReply
from .errors import BranchDepthExceeded as BranchDepthExceeded
from .errors import BranchTimeout as BranchTimeout
from .errors import CapabilityError as CapabilityError
from .errors import InvalidAnswer as InvalidAnswer
from .errors import InvalidArguments as InvalidArguments
from .errors import InvalidEffect as InvalidEffect
from .errors import InvalidMessages as InvalidMessages
from .errors import InvalidTool as InvalidTool
from .errors import JournalTooLarge as JournalTooLarge
from .errors import LimitExceeded as LimitExceeded
from .errors import PeerError as PeerError
from .errors import ProgressNotIncreasing as ProgressNotIncreasing
from .errors import ReplayDivergence as ReplayDivergence
from .errors import RequestTimeout as RequestTimeout
from .errors import StepFailed as StepFailed
from .errors import StepNotRecordable as StepNotRecordable
from .errors import TokenBudgetExceeded as TokenBudgetExceeded
from .errors import ToolError as ToolError
from .errors import YieldMCPError as YieldMCPError
from .messages import Audio as Audio
from .messages import Image as Image
from .messages import Message as Message
from .messages import ModelPreferences as ModelPreferences
from .messages import NamedTool as NamedTool
from .messages import Text as Text
from .messages import ToolCall as ToolCall
from .messages import ToolResult as ToolResult
from .messages import ToolSpec as ToolSpec
from .messages import ToolUse as ToolUse
from .messages import Usage as Usage
from .principal import Principal as Principal
from .replies import ElicitReply as ElicitReply
from .replies import Root as Root
from .replies import RootsReply as RootsReply
from .replies import SampleReply as SampleReply
from .requests import ElicitationRequest as ElicitationRequest
from .requests import SamplingRequest as SamplingRequest
from .results import ElicitResult as ElicitResult
from .results import ElicitUrlResult as ElicitUrlResult
from .results import Exchange as Exchange
from .results import ParseError as ParseError
from .results import SampleResult as SampleResult
from .results import SampleValidationError as SampleValidationError
from .results import SchemaResult as SchemaResult
from .results import ToolsResult as ToolsResult
from .steps.runner import idempotency_key as idempotency_key
from .tools import Tool as Tool
from .tools import handoff as handoff
from .tools import tool as tool

__all__ = [
    "Audio",
    "Branch",
    "BranchDepthExceeded",
    "BranchTimeout",
    "Clock",
    "Context",
    "Effect",
    "Elicit",
    "ElicitKey",
    "ElicitReply",
    "ElicitResult",
    "ElicitUrl",
    "ElicitUrlResult",
    "ElicitationRequest",
    "Exchange",
    "Executor",
    "Image",
    "InvalidAnswer",
    "InvalidArguments",
    "InvalidEffect",
    "InvalidMessages",
    "InvalidTool",
    "Journal",
    "JournalTooLarge",
    "LimitExceeded",
    "Limits",
    "ListRoots",
    "LocalQuestion",
    "Log",
    "Message",
    "ModelPreferences",
    "NamedTool",
    "Notice",
    "Op",
    "ParseError",
    "PeerQuestion",
    "Principal",
    "Progress",
    "Question",
    "RandomBits",
    "ReleaseStream",
    "ReplayDivergence",
    "Root",
    "RootsReply",
    "Sample",
    "SampleReply",
    "SampleResult",
    "SampleValidationError",
    "SamplingRequest",
    "SchemaResult",
    "Step",
    "StepFailed",
    "StepNotRecordable",
    "StepReply",
    "Stepper",
    "Text",
    "TokenBudgetExceeded",
    "Tool",
    "ToolCall",
    "ToolError",
    "ToolResult",
    "ToolSpec",
    "ToolUse",
    "ToolsResult",
    "Usage",
    "YieldMCPError",
    "drive",
    "handoff",
    "idempotency_key",
    "run",
    "tool",
]

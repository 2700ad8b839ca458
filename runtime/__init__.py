"""yieldmcp's runtime, as a tool author sees it: tools as generators of effects.

Write a tool as a generator function taking its arguments as typed parameters
(or one pydantic model) and a :class:`Context`; yield effects built by the
context; return the result::

    @tool(elicits={"confirm": Confirm})
    def book(city: str, ctx: Context) -> Op[str]:
        answer = yield from ctx.elicit("confirm", f"Book {city}?")
        tip = yield from ctx.sample(f"One travel tip for {city}")
        return tip.text if answer.accepted else "cancelled"

This package's names are what a tool author writes: the decorators, the
context, the message and result values, and the errors a tool raises or
catches. What an *integrator* drives (running a tool against an
:class:`~runtime.lowlevel.Executor`, the sans-IO ``Stepper``, the journal,
every effect class, the request and reply values) is in
:mod:`runtime.lowlevel`; the test kit is :mod:`runtime.testing`. This package
imports nothing from ``bridge``, ``encoders`` or ``decoders``.
"""

from .context import Context as Context
from .context import ElicitKey as ElicitKey
from .effects import Limits as Limits
from .effects import Op as Op
from .errors import ReplayDivergence as ReplayDivergence
from .errors import StepFailed as StepFailed
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
from .principal import Principal as Principal
from .results import ElicitResult as ElicitResult
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
    "Context",
    "ElicitKey",
    "ElicitResult",
    "Image",
    "Limits",
    "Message",
    "ModelPreferences",
    "NamedTool",
    "Op",
    "Principal",
    "ReplayDivergence",
    "SampleResult",
    "SampleValidationError",
    "SchemaResult",
    "StepFailed",
    "Text",
    "Tool",
    "ToolCall",
    "ToolError",
    "ToolResult",
    "ToolSpec",
    "ToolUse",
    "ToolsResult",
    "YieldMCPError",
    "handoff",
    "idempotency_key",
    "tool",
]

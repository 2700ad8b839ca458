"""Steps: a tool's own work (I/O, a slow computation), run once and recorded.

Owns the :class:`Step` effect and its :class:`StepReply` (``effect``), how a
tool spells a step (``ctx.step``/``ctx.step_as``: ``spelling``), how a step is
run off the event loop with retries under an idempotency key (``runner``), and
what steps add to defining a tool: ``async def`` tools, code versions, a
handoff's ``before`` (``tools``).

It does not record replies or decide when a step runs (:mod:`runtime.call`
does, as for every question), nor define tools (:mod:`runtime.tools`).
"""

from .effect import Step as Step
from .effect import StepReply as StepReply
from .effect import record_value as record_value
from .effect import step_outcome as step_outcome
from .runner import idempotency_key as idempotency_key
from .runner import perform_step as perform_step
from .runner import perform_step_now as perform_step_now
from .runner import step_key as step_key
from .spelling import StepCall as StepCall
from .spelling import StepMethods as StepMethods
from .spelling import adapter_of as adapter_of
from .spelling import step_op as step_op
from .tools import as_program as as_program
from .tools import before_program as before_program
from .tools import code_version as code_version

__all__ = [
    "Step",
    "StepCall",
    "StepMethods",
    "StepReply",
    "adapter_of",
    "as_program",
    "before_program",
    "code_version",
    "idempotency_key",
    "perform_step",
    "perform_step_now",
    "record_value",
    "step_key",
    "step_op",
    "step_outcome",
]

"""Effects: the values a tool yields, and what each one means.

An effect is a frozen attrs value. A tool yields it (``x = yield from effect``
for the typed form, or ``x = yield effect``) and the interpreter sends back the
result. Effects fall into four families:

* **Peer questions** (:class:`Sample`, :class:`Elicit`, :class:`ElicitUrl`,
  :class:`ListRoots`) are answered by the executor: the MCP client, a provider,
  or a scripted peer.
* **Local questions** (:class:`Clock`, :class:`RandomBits`) are answered by
  the runtime itself, but journaled like peer questions, so a replayed tool
  sees the same time and the same random numbers.
* **Steps** (:class:`Step`) run the tool's own function once, off the event
  loop, and are journaled like peer questions: a replay gets the recorded
  value without running the function (``ctx.step``; ``docs/steps.md``).
* **Notices** (:class:`Log`, :class:`Progress`, :class:`ReleaseStream`) are sent
  and not answered.
* :class:`Branch` runs child generators concurrently.
* :class:`Patched` (``ctx.patched``) says which side of a code change a call
  is on; it is answered by the stepper and takes no key.

Cancellation policy, for every question: while it is waiting for its answer, a
cancelled question is *withdrawn* (live MCP sends ``notifications/cancelled`` and
ignores a late reply). Once an answer is accepted it is committed before the
tool sees it; it cannot be cancelled half-delivered.

Each question knows how to fingerprint itself (the canonical JSON of what is
asked, whose digest pins a recorded answer to it), how to turn a reply into the
tool's result (validating it), and how to (de)serialise its reply for a journal.

This folder owns the bases (``base``), the canonical JSON and digests that pin
an answer to its question (``canonical``), and the kinds that need nothing but
a base: notices (``notices``), local questions (``local``) and branches
(``branch``). Its ``__init__`` is the public home of every effect name; the
kinds with a concept of their own live in their folders and are re-exported
here: :mod:`runtime.sampling`, :mod:`runtime.elicitation`, :mod:`runtime.steps`.
It does not interpret effects (:mod:`runtime.call`) or build them for a tool
(the :class:`~runtime.context.Context` does).
"""

from ..elicitation.effects import Elicit as Elicit
from ..elicitation.effects import ElicitUrl as ElicitUrl
from ..elicitation.effects import ListRoots as ListRoots
from ..sampling.effect import Sample as Sample
from ..steps.effect import Step as Step
from ..steps.effect import StepReply as StepReply
from .base import AtOnce as AtOnce
from .base import Effect as Effect
from .base import LocalQuestion as LocalQuestion
from .base import Notice as Notice
from .base import Op as Op
from .base import PeerQuestion as PeerQuestion
from .base import Question as Question
from .branch import Branch as Branch
from .branch import Limits as Limits
from .local import Clock as Clock
from .local import RandomBits as RandomBits
from .notices import LOG_LEVELS as LOG_LEVELS
from .notices import Log as Log
from .notices import LogLevel as LogLevel
from .notices import Progress as Progress
from .notices import ReleaseStream as ReleaseStream
from .patch import Patched as Patched

__all__ = [
    "LOG_LEVELS",
    "AtOnce",
    "Branch",
    "Clock",
    "Effect",
    "Elicit",
    "ElicitUrl",
    "Limits",
    "ListRoots",
    "LocalQuestion",
    "Log",
    "LogLevel",
    "Notice",
    "Op",
    "Patched",
    "PeerQuestion",
    "Progress",
    "Question",
    "RandomBits",
    "ReleaseStream",
    "Sample",
    "Step",
    "StepReply",
]

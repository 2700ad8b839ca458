"""The call core: the interpreter that steps a tool, its journal, its driver.

Owns a call's life as a sans-IO machine (``machine``: :class:`CallMachine`,
:func:`open_call`) and the commands it gives its drivers (``commands``), the
sans-IO :class:`Stepper` and :func:`start` (``stepper``) that interprets a
tool's effects inside it, the events
it reports and the outcomes of a call (``events``), the :class:`Journal` that
makes a call replayable (``journal``), the observer a stepper reports to
(``observe``), and the trio driver that turns events into waiting
(``driver``: :func:`run`, :func:`drive`, :class:`Executor`).

It does not define effects or say what answers them (:mod:`runtime.effects`
and the concept folders), nor speak MCP or seal journals (``bridge``).
"""

from .driver import Executor as Executor
from .driver import drive as drive
from .driver import run as run
from .events import Ask as Ask
from .events import Cancelled as Cancelled
from .events import Event as Event
from .events import Finished as Finished
from .events import Marked as Marked
from .events import Outcome as Outcome
from .events import Raised as Raised
from .events import Returned as Returned
from .events import StartTimer as StartTimer
from .events import StopTimer as StopTimer
from .events import Tell as Tell
from .events import Withdraw as Withdraw
from .journal import Journal as Journal
from .journal import JournalEntry as JournalEntry
from .observe import OBSERVING as OBSERVING
from .observe import Observer as Observer
from .observe import effect_kind as effect_kind
from .observe import performing as performing
from .stepper import Stepper as Stepper
from .stepper import start as start

__all__ = [
    "OBSERVING",
    "Ask",
    "Cancelled",
    "Event",
    "Executor",
    "Finished",
    "Journal",
    "JournalEntry",
    "Marked",
    "Observer",
    "Outcome",
    "Raised",
    "Returned",
    "StartTimer",
    "Stepper",
    "StopTimer",
    "Tell",
    "Withdraw",
    "drive",
    "effect_kind",
    "performing",
    "run",
    "start",
]

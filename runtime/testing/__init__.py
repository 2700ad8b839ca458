"""Run tools against scripted answers: no network, no model, no client.

* :class:`ScriptedPeer` answers every question from a script (replies, callables
  or exceptions) and records what it was asked; ``steps={name: [...]}`` stubs
  a step's function by name, so a tool that does I/O runs with no network.
  It is an ``Executor`` for :func:`runtime.lowlevel.run` and also works synchronously
  with :func:`run_scripted`.
* :class:`HeldPeer` holds every question until the test releases it, so a test
  (or Hypothesis, with ``st.data()``) can choose the order answers arrive in.
* :func:`text`, :func:`tool_calls`, :func:`structured`, :func:`accept`,
  :func:`decline` and :func:`cancel` build replies.
* :func:`replay` runs a tool against a journal recorded in production
  (``yieldmcp journal`` writes it; :func:`load_journal` reads it) with no
  peer and no I/O, and raises :class:`~runtime.errors.ReplayDivergence`
  where the code now asks something else (:class:`JournalExhausted`: more
  than was recorded).
* :func:`picture` records the effects of the calls a test runs and writes
  them as one HTML page (lanes per branch, a bar per effect).
* ``runtime.testing.strategies`` has Hypothesis strategies for answers (it needs
  ``hypothesis``, installed with the ``test`` extra).

It does not speak MCP or stand in for a real client: a test of the wire runs a
real server and client from ``bridge``.
"""

from ..errors import JournalExhausted as JournalExhausted
from ._peers import Asked as Asked
from ._peers import HeldPeer as HeldPeer
from ._peers import ScriptedPeer as ScriptedPeer
from ._peers import run_scripted as run_scripted
from ._picture import picture as picture
from ._replay import load_journal as load_journal
from ._replay import replay as replay
from ._replies import accept as accept
from ._replies import cancel as cancel
from ._replies import decline as decline
from ._replies import structured as structured
from ._replies import text as text
from ._replies import tool_calls as tool_calls

__all__ = [
    "Asked",
    "HeldPeer",
    "JournalExhausted",
    "ScriptedPeer",
    "accept",
    "cancel",
    "decline",
    "load_journal",
    "picture",
    "replay",
    "run_scripted",
    "structured",
    "text",
    "tool_calls",
]

"""The tasks extension of 2026-07-28 (SEP-2663, ``io.modelcontextprotocol/tasks``).

Owns: answering the extension's requests (:mod:`.methods`: task creation from
``tools/call``, ``tasks/get``, ``tasks/update``, ``tasks/cancel``, and
``-32021`` for clients without it), the task document and its wire shapes
(:mod:`.document`), running a task by replaying the 2026-07-28 rounds from its
journal in the store (:mod:`.runner`), and one server's tasks: store, leases,
sweeping and resuming tasks whose process died, and the alarm that wakes
sleeping tasks (``ctx.sleep``) at their deadline (:mod:`.service`).

Does not own: what a tool's effects mean or how a round replays them
(:mod:`bridge.server.calls.rounds`, :mod:`bridge.server.modern`), the store
(:mod:`bridge.stores`), the journal's record format
(:mod:`runtime.call.journal`, kept by :mod:`bridge.durable.log`), or HTTP
(the transport calls :func:`respond`). The 2025-11-25 era's experimental
tasks are not served.
"""

from .methods import TASKS_EXTENSION as TASKS_EXTENSION
from .methods import owns as owns
from .methods import respond as respond
from .runner import tasks_of as tasks_of
from .service import Tasks as Tasks

__all__ = ["TASKS_EXTENSION", "Tasks", "owns", "respond", "tasks_of"]

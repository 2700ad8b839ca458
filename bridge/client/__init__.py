"""The MCP client: connect to any server, call its tools, answer its questions.

Owns: :class:`Client` and :func:`connect` (both eras: the handshake, and
2026-07-28 rounds retried with ``inputResponses``; tasks followed, read and
cancelled by id, :mod:`.tasks`), and the client halves of
the transports: Streamable HTTP over httpx (:mod:`.http`, with the
2026-07-28 headers it mirrors in :mod:`.headers`) and a spawned server
command over stdio (:mod:`.process`), and OAuth for servers that ask for it
(:mod:`.oauth`); the era a connection speaks (:mod:`.handshake`), and the
check of each result's ``structuredContent`` against its tool's
``outputSchema`` (:mod:`.output_schemas`).

Does not own: how a question is answered (a provider from
``bridge.providers``, a form from ``bridge.elicit``, chosen by the caller or
``bridge.cli``), or anything of the server side: it never imports
``bridge.server`` or ``bridge.transports.http``.
"""

from .client import Client as Client
from .client import ElicitationHandler as ElicitationHandler
from .client import Era as Era
from .client import LogCallback as LogCallback
from .client import ProgressCallback as ProgressCallback
from .client import Sampler as Sampler
from .client import TaskCreatedCallback as TaskCreatedCallback
from .client import connect as connect
from .client import server_target as server_target
from .output_schemas import InvalidStructuredContent as InvalidStructuredContent
from .tasks import StatusCallback as StatusCallback
from .tasks import TaskInfo as TaskInfo
from .tasks import UnreachableCallback as UnreachableCallback

__all__ = [
    "Client",
    "ElicitationHandler",
    "Era",
    "InvalidStructuredContent",
    "LogCallback",
    "ProgressCallback",
    "Sampler",
    "StatusCallback",
    "TaskCreatedCallback",
    "TaskInfo",
    "UnreachableCallback",
    "connect",
    "server_target",
]

"""In-process hosting: a tool's questions answered by a provider and a UI.

Owns: :class:`HostExecutor`, the runtime executor that answers ``Sample``
with a provider and ``Elicit`` with an elicitation handler, and
:func:`run_in_process`, which runs one tool that way with no MCP in between.

Does not own: the providers (``bridge.providers``), the forms
(``bridge.elicit``), JSON-RPC or transports. It never imports
``bridge.server`` or ``bridge.client``.
"""

from .in_process import HostExecutor as HostExecutor
from .in_process import HostStatistics as HostStatistics
from .in_process import run_in_process as run_in_process

__all__ = ["HostExecutor", "HostStatistics", "run_in_process"]

"""The MCP server: what it offers, and how it answers each request, in both eras.

Owns: :class:`Server` (tools, resources, prompts, settings), the handshake
era's per-connection state and methods (:mod:`.connection`), the method bodies
both eras share (:mod:`.methods`), the 2026-07-28 dispatcher (:mod:`.modern`)
and its multi-round calls (:mod:`.rounds`, sealed by :mod:`.state_token`), how
a tool's questions become server→client requests (:mod:`.questions`) and the
drivers of a call (:mod:`.calls`: the live 2025-11-25 call, the 2026-07-28
rounds, their work and outcome; with a store a live call is written down
ahead as it goes and taken on again by another process, :mod:`bridge.durable.live`), the
resources
and prompts beside the tools (:mod:`.catalog`), the access-token checks of a
resource server (:mod:`.auth`: ``Server(auth=...)``), what one client may make
the server hold (:mod:`.limits`), what a client is told when a tool fails
(:mod:`.failures`), who hears which list change or resource update
(:mod:`.changes`) and samples answered by the server's own model
(:mod:`.fallback`).

Does not own: moving bytes (``bridge.transports``; the HTTP endpoint in
``bridge.transports.http`` sits on top of this package), JSON-RPC framing and
correlation (``bridge.jsonrpc``), or anything of the client side: it never
imports ``bridge.client``, ``bridge.host``, ``bridge.providers``,
``bridge.elicit`` or ``bridge.cli``.
"""

from .catalog import Completer as Completer
from .catalog import Prompt as Prompt
from .catalog import Resource as Resource
from .catalog import ResourceTemplate as ResourceTemplate
from .catalog import prompt as prompt
from .catalog import resource as resource
from .catalog import resource_template as resource_template
from .server import HANDSHAKE_VERSIONS as HANDSHAKE_VERSIONS
from .server import LATEST_HANDSHAKE as LATEST_HANDSHAKE
from .server import Connection as Connection
from .server import Server as Server

__all__ = [
    "HANDSHAKE_VERSIONS",
    "LATEST_HANDSHAKE",
    "Completer",
    "Connection",
    "Prompt",
    "Resource",
    "ResourceTemplate",
    "Server",
    "prompt",
    "resource",
    "resource_template",
]

"""The server's Streamable HTTP endpoint at ``/mcp``, both eras.

Owns: the ASGI app (:mod:`.app`), which era's path a request takes and the
errors refusing one (:mod:`.eras`), what it checks before any MCP
(:mod:`.guard`: Origin, Host, media types), its bounds (:mod:`.config`), the
2025-11-25 side (:mod:`.legacy`: POST, GET and DELETE on a session, whose
SSE streams and their replay buffer are :mod:`.legacy_session`,
:mod:`.streams` and :mod:`.events`, whose responses are
:mod:`.legacy_answer`, and whose expiry and eviction are :mod:`.expiry`;
with a store, taking sessions and their calls on from another process,
:mod:`.durable`, over :mod:`bridge.durable`'s records) and the 2026-07-28
side (:mod:`.modern`: one self-contained POST at a time), and serving it
(:func:`serve_http`, in :mod:`.serve`) on the HTTP/1.1 server of
:mod:`.serving` (h11 on trio: keep-alive, timeouts, the connection cap),
draining it on SIGTERM (:mod:`.drain`).
The ASGI app is public: mount it in another ASGI server if you like
(:mod:`.mount`: :func:`hypercorn_config` for hypercorn).

Does not own: answering MCP requests (``bridge.server``), or the client's
half of HTTP (``bridge.client.http``).
"""

from .app import ENDPOINT as ENDPOINT
from .app import SUPPORTED_VERSIONS as SUPPORTED_VERSIONS
from .app import HttpLimits as HttpLimits
from .app import McpHttpApp as McpHttpApp
from .app import header_era as header_era
from .mount import hypercorn_config as hypercorn_config
from .serve import serve_http as serve_http

__all__ = [
    "ENDPOINT",
    "SUPPORTED_VERSIONS",
    "HttpLimits",
    "McpHttpApp",
    "header_era",
    "hypercorn_config",
    "serve_http",
]

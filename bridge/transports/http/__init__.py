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

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .app import ENDPOINT as ENDPOINT
    from .app import SUPPORTED_VERSIONS as SUPPORTED_VERSIONS
    from .app import McpHttpApp as McpHttpApp
    from .app import header_era as header_era
    from .config import HttpLimits as HttpLimits
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

# Imported on first use: a stdio server builds its flags from HttpLimits
# (.config) and never needs the app, so it does not pay for it at start-up.
_HOMES = {
    "ENDPOINT": "app",
    "SUPPORTED_VERSIONS": "app",
    "McpHttpApp": "app",
    "header_era": "app",
    "HttpLimits": "config",
    "hypercorn_config": "mount",
    "serve_http": "serve",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value

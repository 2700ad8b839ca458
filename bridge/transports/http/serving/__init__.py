"""A lean HTTP/1.1 server on h11 and trio that serves an ASGI app.

Owns: the listening socket and its accept loop (:mod:`.listener`: the listen
backlog, the connection cap answered with 503, running out of descriptors),
one connection's requests in turn with keep-alive (:mod:`.connection`: the
header, idle and write timeouts, kept by one clock task per listener,
:mod:`.clock`, and noticing a peer that went away), and the
sans-IO pieces between h11 and ASGI (:mod:`.wire`: the request's scope, the
response's head, canned refusals, the scope extension saying the server
times request bodies).

Does not own: what is served (any ASGI app; ``yieldmcp serve --http`` serves
:class:`~bridge.transports.http.app.McpHttpApp`), request bodies' size and
read timeout (the app reads the body and enforces its limits), TLS (put a
proxy in front), or HTTP/2.
"""

from .connection import ConnectionSettings as ConnectionSettings
from .listener import Listener as Listener
from .listener import serve_app as serve_app
from .wire import times_body as times_body

__all__ = ["ConnectionSettings", "Listener", "serve_app", "times_body"]

"""The HTTP rows' floor: our HTTP server serving an app that does no MCP work.

``python benchmarks/_floor.py PORT`` serves, at ``http://127.0.0.1:PORT/mcp``, an
ASGI app that reads each POST body and answers at once: a request gets a
canned result as plain JSON, as our server answers a plain call (an
``initialize`` also gets an ``mcp-session-id``), anything else ``202``. The HTTP
server is the one ``yieldmcp serve --http`` runs
(:mod:`bridge.transports.http.serving`, h11 on trio, keep-alive), and the
benchmark's own client drives it, so its time per call is what the HTTP layer
and the client cost with no MCP server behind them: no session, no
validation, no tool.

That bounds the ``http.plain`` ratio any server on that HTTP layer could reach
here: the SDK's time divided by this one. It is a reference row, not a stack.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import trio

_RESULT = {"content": [{"type": "text", "text": "hi"}], "isError": False}


async def app(scope: Any, receive: Any, send: Any) -> None:
    body, more = b"", True
    while more:
        message = await receive()
        body += message.get("body", b"")
        more = message.get("more_body", False)
    request: Any = json.loads(body) if body else {}
    if not isinstance(request, dict) or "id" not in request:
        headers = [(b"content-length", b"0")]
        await send({"type": "http.response.start", "status": 202, "headers": headers})
        await send({"type": "http.response.body", "body": b""})
        return
    answer = json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": _RESULT})
    headers = [(b"content-type", b"application/json")]
    if request.get("method") == "initialize":
        headers.append((b"mcp-session-id", b"floor"))
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": answer.encode()})


async def serve(port: int) -> None:
    from bridge.transports.http.serving import serve_app

    await serve_app(app, "127.0.0.1", port)


if __name__ == "__main__":
    trio.run(serve, int(sys.argv[1]))

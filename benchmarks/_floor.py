"""The HTTP rows' floor: hypercorn on trio serving an app that does no MCP work.

``python benchmarks/_floor.py PORT`` serves, at ``http://127.0.0.1:PORT/mcp``, an
ASGI app that reads each POST body and answers at once: a request gets a
canned result as one SSE event, as our server sends it (an ``initialize`` also
gets an ``mcp-session-id``), anything else ``202``. hypercorn is configured as
:func:`bridge.transports.http.serve_http` configures it
(:func:`~bridge.transports.http.hypercorn_config`), and the benchmark's
own client drives it, so its time per call is what the HTTP stack and the
client cost with no MCP server behind them: no session, no validation, no tool.

That bounds the ``http.plain`` ratio any server on hypercorn could reach here:
the SDK's time divided by this one. It is a reference row, not a stack.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import trio

_RESULT = {"content": [{"type": "text", "text": "hi"}], "isError": False}


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
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
    # One SSE event, as our server answers a tools/call (it cannot know
    # beforehand that the tool will not ask the client anything).
    headers = [(b"content-type", b"text/event-stream")]
    if request.get("method") == "initialize":
        headers.append((b"mcp-session-id", b"floor"))
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    event = f"event: message\ndata: {answer}\n\n".encode()
    await send({"type": "http.response.body", "body": event})


async def serve(port: int) -> None:
    import hypercorn.trio

    from bridge.transports.http import hypercorn_config

    config = hypercorn_config("127.0.0.1", port)
    await hypercorn.trio.serve(app, config)  # type: ignore[arg-type]


if __name__ == "__main__":
    trio.run(serve, int(sys.argv[1]))

"""Every request to an authorization server, bounded as a whole.

An httpx timeout bounds each network step, not the request: a server that
sends a byte every 29 s holds a 30 s client for as long as it likes, and
``response.content`` reads a body of any size into memory. The documents
this flow fetches come from servers the MCP server names (its resource
metadata URL, the issuer it lists), so a hostile server could do either.
:func:`fetch` gives the whole exchange the client's timeout (``OAuth(timeout=)``,
the same number httpx gets per step) and stops reading past ``limit`` bytes.
Every GET and POST of this package goes through it.

That time is not the MCP server's: the request a flow is on the way of (the
first, bounded by ``--connect-timeout``, 10 s) does not count it
(:func:`~bridge.jsonrpc.outbound.waiting_on_this_side`). It counted, and a
token endpoint slower than that failed the call blaming the MCP server
("initialize got no reply within 10 s"; with ``--era auto``, advice to use
``--era legacy``), the user's login thrown away. A whole call's
``--timeout`` still counts it.
"""

from __future__ import annotations

import math
from typing import Any

import httpx
import trio

from ...http_body import read_up_to
from ...jsonrpc.outbound import waiting_on_this_side

__all__ = ["AnswerTooLarge", "fetch"]

_WIRE_ONLY = (b"content-encoding", b"content-length", b"transfer-encoding")


class AnswerTooLarge(httpx.HTTPError):
    """The answer's body was longer than the caller reads."""


async def fetch(
    http: httpx.AsyncClient,
    method: str,
    url: str,
    *,
    limit: int,
    follow_redirects: bool = False,
    **options: Any,
) -> httpx.Response:
    """The answer to one request, its body read whole: within the client's
    timeout for the whole exchange, and at most ``limit`` bytes.

    Raises:
        httpx.TimeoutException: no whole answer within the timeout.
        AnswerTooLarge: the body was longer than ``limit`` bytes.
        httpx.HTTPError: the request failed otherwise.
    """
    timeouts = (http.timeout.connect, http.timeout.read, http.timeout.write)
    deadline = max((t for t in timeouts if t is not None), default=math.inf)
    request = http.build_request(method, url, **options)
    with waiting_on_this_side(), trio.move_on_after(deadline):
        response = await http.send(
            request, stream=True, follow_redirects=follow_redirects
        )
        try:
            body, whole = await read_up_to(response, limit)
        finally:
            await response.aclose()
        if not whole:
            raise AnswerTooLarge(f"an answer over {limit // 1024} KiB")
        # The body is decoded already: the new response must not decode it
        # again, nor claim the length it had on the wire.
        headers = [
            (name, value)
            for name, value in response.headers.raw
            if name.lower() not in _WIRE_ONLY
        ]
        return httpx.Response(
            response.status_code, headers=headers, content=bytes(body), request=request
        )
    raise httpx.TimeoutException(
        f"no whole answer within {deadline:g} s", request=request
    )

"""Between h11 and ASGI, sans-IO: a request's scope, a response's head, refusals.

Everything here is pure: an :class:`h11.Request` in, the ASGI ``scope`` dict
out; an ASGI ``http.response.start`` message in, an :class:`h11.Response`
out; and the bytes of the few responses the server sends on its own (a
connection over the cap, a request head too slow or malformed), written raw
because no request was read (h11 answers only a request it has parsed).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from http import HTTPStatus
from typing import Any, Final
from urllib.parse import unquote

import h11

__all__ = [
    "BODY_TIMEOUT",
    "times_body",
    "head_size",
    "http_scope",
    "refusal",
    "response_head",
]

_ASGI: Final = {"version": "3.0", "spec_version": "2.3"}

BODY_TIMEOUT: Final = "yieldmcp.body_timeout"
"""The scope extension by which the server says it times request bodies:
``{"seconds": S}``, a 408 for a body not all there S seconds after the app
first waited for more of it."""


def http_scope(
    request: h11.Request,
    client: tuple[str, int] | None,
    server: tuple[str, int] | None,
    body_timeout: float,
) -> dict[str, Any]:
    """The ASGI ``http`` scope of ``request`` (header names are lower case:
    h11 lowers them), saying that the server times its body."""
    target = bytes(request.target)
    raw_path, _, query = target.partition(b"?")
    return {
        "type": "http",
        "asgi": _ASGI,
        "http_version": request.http_version.decode("ascii"),
        "method": request.method.decode("ascii"),
        "scheme": "http",
        "path": unquote(raw_path.decode("latin-1")),
        "raw_path": raw_path,
        "query_string": query,
        "root_path": "",
        "headers": list(request.headers),
        "client": client,
        "server": server,
        "extensions": {BODY_TIMEOUT: {"seconds": body_timeout}},
    }


def times_body(scope: Mapping[str, Any], seconds: float) -> bool:
    """Whether the server of ``scope`` says it times request bodies, in at
    most ``seconds`` (then the app need not)."""
    extensions: Mapping[str, Any] = scope.get("extensions") or {}
    declared: Mapping[str, Any] = extensions.get(BODY_TIMEOUT) or {}
    kept: object = declared.get("seconds")
    return isinstance(kept, int | float) and kept <= seconds


def head_size(request: h11.Request) -> int:
    """About how many bytes ``request``'s head took on the wire."""
    size = len(request.method) + len(request.target) + 12
    for name, value in request.headers:
        size += len(name) + len(value) + 4
    return size


def response_head(
    status: int, headers: Iterable[tuple[bytes, bytes]], body: bytes | None
) -> h11.Response:
    """The head of a response; ``body`` is its whole body when the first
    body message already ends it (then it gets a ``content-length`` if the
    app set none), None when more follows (h11 then chunks it)."""
    raw = list(headers)
    sized = any(name.lower() == b"content-length" for name, _ in raw)
    if body is not None and not sized:
        raw.append((b"content-length", str(len(body)).encode()))
    return h11.Response(status_code=status, headers=raw)


def refusal(status: int, text: str, *extra: tuple[str, str]) -> bytes:
    """A whole ``connection: close`` response with a plain-text body."""
    body = text.encode()
    reason = HTTPStatus(status).phrase
    lines = [
        f"HTTP/1.1 {status} {reason}",
        "content-type: text/plain; charset=utf-8",
        f"content-length: {len(body)}",
        "connection: close",
        *(f"{name}: {value}" for name, value in extra),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body

"""The endpoint's side of ``Server(auth=...)``: metadata, checks, refusals.

On a server with :class:`~bridge.server.auth.Auth`, the app asks this module,
for every request, before any MCP:

* is it a ``GET`` of the RFC 9728 protected resource metadata (at either
  well-known path, :meth:`Auth.metadata_paths`)? Then :func:`serve_metadata`
  answers it, to anyone (the metadata is public);
* does it carry a token the verifier accepts (:func:`check`)? If not, the
  401 (or 400, 503) goes out here and the request goes no further; if so, its
  :class:`~runtime.Principal`;
* once the body is read, does the token grant the scopes the message needs
  (:func:`check_scopes`)? If not, 403 ``insufficient_scope``.

What is checked, and what each refusal says, is
:mod:`bridge.server.auth.gate`'s; this module only speaks ASGI. It also
gives the verifier what it keeps while the server runs: the server's nursery
for key refreshes (:func:`attend`), and the closing of its HTTP client when
the server stops (:func:`close_verifier`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

import trio

from bridge.jsonrpc.messages import Message
from bridge.server.auth import gate as _gate
from bridge.server.auth.verifiers import KeepsClient, RefreshesKeys
from runtime.principal import Principal

from . import asgi as _asgi
from .asgi import Send

if TYPE_CHECKING:
    from bridge.server.auth.config import Auth
    from bridge.server.offer import Offer

__all__ = [
    "attend",
    "check",
    "check_scopes",
    "close_verifier",
    "is_metadata",
    "serve_metadata",
]

log = logging.getLogger("yieldmcp.auth")
_CLOSE_GRACE = 5.0


def attend(auth: Auth, nursery: trio.Nursery) -> None:
    """Let ``auth``'s verifier refresh its keys in the server's ``nursery``."""
    if isinstance(auth.verifier, RefreshesKeys):
        auth.verifier.refresh_in(nursery)


async def close_verifier(auth: Auth | None) -> None:
    """Close what ``auth``'s verifier keeps (its HTTP client), as the server
    stops; bounded, and shielded from the cancellation that stops it."""
    verifier = None if auth is None else auth.verifier
    if isinstance(verifier, RefreshesKeys):
        verifier.refresh_in(None)
    if isinstance(verifier, KeepsClient):
        with trio.CancelScope(shield=True), trio.move_on_after(_CLOSE_GRACE):
            await verifier.aclose()


def is_metadata(auth: Auth | None, path: str) -> bool:
    """Whether ``path`` is where the protected resource metadata is served."""
    return auth is not None and path in auth.metadata_paths()


async def serve_metadata(auth: Auth, method: str, send: Send) -> None:
    """Answer a request for the metadata document."""
    if method not in ("GET", "HEAD"):
        await _asgi.respond(
            send, 405, b"Method Not Allowed", content_type="text/plain",
            headers=[("allow", "GET, HEAD")],
        )  # fmt: skip
        return
    body = json.dumps(auth.metadata()).encode()
    await _asgi.respond(
        send, 200, b"" if method == "HEAD" else body, content_type=_asgi.JSON,
        headers=[("cache-control", "max-age=300")],
    )  # fmt: skip


async def _refuse(send: Send, refusal: _gate.Refusal) -> None:
    await _asgi.respond(
        send, refusal.status, refusal.body(), content_type=_asgi.JSON,
        headers=refusal.headers(),
    )  # fmt: skip


async def check(auth: Auth, headers: Mapping[str, str], send: Send) -> Principal | None:
    """The request's principal; None after answering the refusal."""
    checked = await _gate.authenticate(auth, headers)
    if isinstance(checked, _gate.Refusal):
        await _refuse(send, checked)
        return None
    return checked


async def check_scopes(
    server: Offer, principal: Principal, message: Message, send: Send
) -> bool:
    """Whether ``principal`` may send ``message``; False after answering 403."""
    auth = server.auth
    assert auth is not None, "scopes are checked only on a server with auth"
    needed = _gate.required_scopes(auth, server.tools, message)
    refusal = _gate.authorize(auth, principal, needed)
    if refusal is None:
        return True
    await _refuse(send, refusal)
    return False

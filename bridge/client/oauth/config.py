"""How the client authorizes, in one value: :class:`OAuth`.

``connect(url, auth=OAuth(...))`` sends every request to ``url`` with the
access token it holds for that server, and, when the server answers 401 or
403 ``insufficient_scope``, runs the OAuth flow (:mod:`.flow`, one
:class:`~bridge.client.oauth.flow.OAuthSession` per connection) and sends the
request again. :class:`OAuth` says how: where the user authorizes (a
:class:`~bridge.client.oauth.redirect.Redirect`), where tokens are kept (a
:class:`~bridge.client.oauth.store.TokenStore`), and which client to be
(pre-registered credentials, a client ID metadata document URL, or, by
default, one registered dynamically). One value may serve many connections:
tokens are shared through its store.
"""

from __future__ import annotations

from typing import Any, Literal, final
from urllib.parse import urlsplit

import attrs

from .redirect import BrowserRedirect, Redirect
from .store import MemoryTokenStore, TokenStore

__all__ = ["OAuth"]


def _metadata_url(instance: Any, attribute: Any, value: str | None) -> None:
    if value is None:
        return
    parts = urlsplit(value)
    if parts.scheme != "https" or parts.path in ("", "/") or parts.fragment:
        raise ValueError(
            f"client_metadata_url must be an https URL with a path, got {value!r}"
        )


@final
@attrs.frozen(kw_only=True)
class OAuth:
    """How a client gets access tokens for protected servers.

    Attributes:
        redirect: how the user authorizes: in their browser with a loopback
            redirect (the default), or :class:`HeadlessRedirect` for servers
            that approve without a person.
        store: where tokens and registrations are kept: memory (the default)
            or a :class:`FileTokenStore` (mode 0600).
        client_id, client_secret: a pre-registered client, used before any
            other way; ``client_issuer`` is the authorization server it
            belongs to (it is never presented to another), if known.
        client_metadata_url: the https URL of this client's metadata
            document, used as its ``client_id`` where servers support it.
        client_name: the name a dynamic registration gives.
        application_type: ``native`` (a CLI or desktop app, the default) or
            ``web``, sent in dynamic registration.
        timeout: seconds for each request to an authorization server.
        refresh_margin: a token this many seconds from expiry is refreshed
            before it is sent (when it can be).
    """

    redirect: Redirect = attrs.field(factory=BrowserRedirect)
    store: TokenStore = attrs.field(factory=MemoryTokenStore)
    client_id: str | None = None
    client_secret: str | None = attrs.field(default=None, repr=False)
    client_issuer: str | None = None
    client_metadata_url: str | None = attrs.field(default=None, validator=_metadata_url)
    client_name: str = "yieldmcp"
    application_type: Literal["native", "web"] = "native"
    timeout: float = 30.0
    refresh_margin: float = 30.0

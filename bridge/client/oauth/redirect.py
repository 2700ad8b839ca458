"""The user's part: the authorization request, its redirect, and what comes back.

:func:`authorization_url` builds the request (PKCE S256 challenge, ``state``,
``resource``, ``scope``); a :class:`Redirect` carries it to the authorization
server and brings back the query of the redirect to ``redirect_uri``;
:func:`check_callback` validates that before the code goes anywhere:

* ``state`` must be the one sent (constant-time comparison);
* ``iss`` (RFC 9207), compared as a plain string with the issuer recorded
  from the validated metadata: a present ``iss`` must match; an absent one is
  refused only if the server advertises
  ``authorization_response_iss_parameter_supported``;
* then an ``error`` is reported, and otherwise the ``code`` is returned.

Two redirects: :class:`BrowserRedirect` (a person: a listener on
``http://127.0.0.1:PORT/callback`` for the redirect, which ignores requests
not carrying the ``state`` sent, and the URL opened in their browser or
printed for them) and :class:`HeadlessRedirect` (no person:
the request is sent by HTTP and the redirect read from its ``Location``; for
tests and authorization servers that approve without asking, as the
conformance suite's do).
"""

from __future__ import annotations

import base64
import contextlib
import functools
import hashlib
import logging
import os
import secrets
import sys
import webbrowser
from collections.abc import AsyncGenerator, Mapping
from typing import Any, Protocol, TextIO, final
from urllib.parse import parse_qsl, urlencode, urlsplit

import attrs
import httpx
import trio

from bridge.jsonrpc.outbound import waiting_on_this_side
from runtime.errors import AuthorizationError

from .bounded import fetch
from .wire import SAID_CHARS, AuthServerMetadata

_MAX_PAGE = 64 * 1024  # an authorization endpoint's page, read at most
log = logging.getLogger("yieldmcp.oauth")

__all__ = [
    "Authorizing",
    "BrowserRedirect",
    "HeadlessRedirect",
    "Pkce",
    "Redirect",
    "authorization_url",
    "check_callback",
]


@final
@attrs.frozen
class Pkce:
    """A PKCE pair (RFC 7636, S256)."""

    verifier: str = attrs.field(repr=False)
    challenge: str

    @classmethod
    def new(cls) -> Pkce:
        verifier = secrets.token_urlsafe(64)  # 86 unreserved characters
        digest = hashlib.sha256(verifier.encode("ascii")).digest()
        return cls(verifier, base64.urlsafe_b64encode(digest).decode().rstrip("="))


def authorization_url(
    metadata: AuthServerMetadata,
    *,
    client_id: str,
    redirect_uri: str,
    state: str,
    pkce: Pkce,
    resource: str,
    scope: str | None,
) -> str:
    """The authorization request, as the URL to send the user to."""
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": redirect_uri,
        "state": state,
        "code_challenge": pkce.challenge,
        "code_challenge_method": "S256",
        "resource": resource,
    }
    if scope:
        query["scope"] = scope
        if "offline_access" in scope.split():
            query["prompt"] = "consent"  # OpenID Connect asks it for offline_access
    endpoint = metadata.authorization_endpoint
    return f"{endpoint}{'&' if urlsplit(endpoint).query else '?'}{urlencode(query)}"


def check_callback(
    params: Mapping[str, str], *, state: str, metadata: AuthServerMetadata
) -> str:
    """The authorization code in ``params``, once they pass every check.

    Raises:
        AuthorizationError: a wrong ``state`` or ``iss``, a missing ``iss``
            the server promised, an error answer, or no code.
    """
    if not secrets.compare_digest(params.get("state", "").encode(), state.encode()):
        raise AuthorizationError("the authorization answer has the wrong state")
    issuer = params.get("iss")
    if issuer is not None and issuer != metadata.issuer:
        raise AuthorizationError(
            f"the authorization answer comes from issuer {issuer!r}, not "
            f"{metadata.issuer!r} (RFC 9207); refusing it"
        )
    if issuer is None and metadata.authorization_response_iss_parameter_supported:
        raise AuthorizationError(
            "the authorization answer lacks the iss its server promised (RFC 9207)"
        )
    if "error" in params:
        description = params.get("error_description", "")[:SAID_CHARS]
        raise AuthorizationError(
            f"authorization was refused: {params['error'][:100]}"
            + (f" ({description})" if description else "")
        )
    code = params.get("code")
    if not code:
        raise AuthorizationError("the authorization answer carries no code")
    return code


class Authorizing(Protocol):
    """One authorization in progress: where the redirect must go, and how to
    send the user and get the redirect's query back."""

    @property
    def redirect_uri(self) -> str: ...

    async def authorize(self, url: str) -> Mapping[str, str]: ...


class Redirect(Protocol):
    """How the authorization request reaches the user, and back."""

    def open(
        self, http: httpx.AsyncClient
    ) -> contextlib.AbstractAsyncContextManager[Authorizing]:
        """For the block: a redirect URI that works, and a way to authorize."""
        ...


@final
@attrs.frozen
class HeadlessRedirect:
    """Authorize with no person: GET the request and read the redirect.

    For tests and for authorization servers that approve at once (the MCP
    conformance suite's). ``redirect_uri`` is registered and sent, never
    listened on.
    """

    redirect_uri: str = "http://127.0.0.1/callback"

    @contextlib.asynccontextmanager
    async def open(self, http: httpx.AsyncClient) -> AsyncGenerator[Authorizing]:
        yield _Headless(self.redirect_uri, http)


@final
@attrs.frozen
class _Headless:
    redirect_uri: str
    http: httpx.AsyncClient

    async def authorize(self, url: str) -> Mapping[str, str]:
        try:
            response = await fetch(
                self.http, "GET", url, limit=_MAX_PAGE, follow_redirects=False
            )
        except httpx.HTTPError as exc:
            raise AuthorizationError(
                f"cannot reach the authorization endpoint: {exc}"
            ) from None
        location: str = response.headers.get("location", "")
        if response.status_code not in (301, 302, 303, 307, 308) or not location:
            raise AuthorizationError(
                f"the authorization endpoint answered HTTP {response.status_code} "
                f"without redirecting (it wants a person: use a browser)"
            )
        return dict(parse_qsl(urlsplit(location).query))


@final
@attrs.frozen
class BrowserRedirect:
    """Authorize in the user's browser, with a loopback redirect (RFC 8252).

    Args:
        port: the loopback port to listen on (0: any free one; give a fixed
            one if the client was registered with it).
        open_browser: open the URL in the default browser (it is printed
            either way; on Linux only with a display, never a text browser).
        timeout: seconds to wait for the user.
        out: where the URL is printed.
    """

    port: int = 0
    open_browser: bool = True
    timeout: float = 300.0
    out: TextIO = attrs.field(default=sys.stderr, repr=False)

    @contextlib.asynccontextmanager
    async def open(self, http: httpx.AsyncClient) -> AsyncGenerator[Authorizing]:
        from .loopback import listen

        async with listen(self.port) as callback:
            yield _Browser(callback, self)


def _graphical() -> bool:
    """Whether a browser can open beside us: not on a Linux box with no display,
    where :mod:`webbrowser` would start a text browser in our terminal."""
    if not sys.platform.startswith("linux"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


@final
class _Browser:
    def __init__(self, callback: Any, settings: BrowserRedirect) -> None:
        self._callback = callback
        self._settings = settings
        self.redirect_uri: str = callback.redirect_uri

    async def authorize(self, url: str) -> Mapping[str, str]:
        settings = self._settings
        # The listener takes only the answer carrying the state of this request.
        sent = dict(parse_qsl(urlsplit(url).query))
        self._callback.expect(sent.get("state", ""))
        print(f"Authorize in your browser: {url}", file=settings.out, flush=True)
        # The user's time: not the server's (a request's timeout waits on).
        with waiting_on_this_side(), trio.move_on_after(settings.timeout):
            async with trio.open_nursery() as nursery:
                if settings.open_browser and _graphical():
                    nursery.start_soon(_open_browser, url)
                answer = await self._callback.wait()
                nursery.cancel_scope.cancel()  # the browser's command, if still on
            return answer
        raise AuthorizationError(
            f"no authorization came back within {settings.timeout:g} s"
        )


async def _open_browser(url: str) -> None:
    """Open ``url`` in the user's browser, beside the wait for its answer.

    :func:`webbrowser.open` may not return: for a ``$BROWSER`` it does not
    know (a browser run in the foreground) it waits for the command to exit.
    Waited for before listening, it held the login, ``call --timeout`` and
    Ctrl-C until the user closed the browser. Now the answer is awaited at
    once, and a cancellation abandons the thread: the browser's process is
    left to itself, as a browser the user opened would be.
    """
    try:
        await trio.to_thread.run_sync(
            functools.partial(webbrowser.open, url), abandon_on_cancel=True
        )
    except Exception as exc:  # the URL is printed: the user can open it
        log.info("could not open a browser: %s", type(exc).__name__)

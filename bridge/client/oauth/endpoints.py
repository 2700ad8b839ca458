"""Which URLs the OAuth client will use: ``https``, or plain ``http`` on loopback.

Every URL the flow fetches, posts to or sends the user to (the resource's
metadata, the authorization server's metadata, and its authorization, token
and registration endpoints) goes through :func:`check_endpoint` before any
request. Over plain ``http`` anyone on the path can read the code, the PKCE
verifier, the client secret and the tokens, or rewrite the metadata; so it is
allowed only on loopback (``127.0.0.0/8``, ``::1``, ``localhost``), where the
path is this machine: development servers, tests, the conformance suite. A
URL with spaces, control or invisible characters (bidi overrides, zero-width
characters, line separators) is refused as well: it is printed for
the user to open, and no server needs one.

Pure: no I/O. Refusals are :class:`~runtime.errors.AuthorizationError`, one
line naming what was refused and why.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Final
from urllib.parse import urlsplit

from runtime.errors import AuthorizationError

__all__ = ["check_endpoint", "is_loopback"]

_SPACE_OR_CONTROL: Final = re.compile(r"[\x00-\x20\x7f]")


def _unseen(url: str) -> bool:
    """Whether the URL holds what the user it is shown to would not see as
    it is: a space, a control, or anything not ASCII (a URL is ASCII, RFC
    3986, an IRI's letters percent-encoded; so bidi overrides, zero-width
    characters and blank-looking letters such as U+3164 are refused)."""
    return not url.isascii() or bool(_SPACE_OR_CONTROL.search(url))


def is_loopback(host: str) -> bool:
    """Whether ``host`` (as in a URL, brackets removed) is this machine."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name other than localhost: it resolves anywhere


def check_endpoint(url: str, what: str) -> None:
    """Raise unless ``url`` may be used for ``what`` (see the module doc).

    Raises:
        AuthorizationError: e.g. ``refusing the token endpoint http://as/token:
            plain http is allowed only on loopback ...; use https``.
    """
    if _unseen(url):
        raise AuthorizationError(
            f"refusing {what} {url!r}: it contains spaces, control, invisible "
            f"or non-ASCII characters"
        )
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        raise AuthorizationError(f"refusing {what} {url}: it is not a URL") from None
    if parts.scheme not in ("https", "http"):
        raise AuthorizationError(f"refusing {what} {url}: it is not https")
    if not host:
        raise AuthorizationError(f"refusing {what} {url}: it has no host")
    if "@" in parts.netloc:
        # https://accounts.example...@evil.example/: printed for the user,
        # the host they would read is not the one it names.
        raise AuthorizationError(f"refusing {what} {url}: it names a user (user@)")
    if parts.scheme == "http" and not is_loopback(host):
        raise AuthorizationError(
            f"refusing {what} {url}: plain http is allowed only on loopback "
            "(127.0.0.0/8, ::1, localhost); use https"
        )

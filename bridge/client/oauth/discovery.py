"""Finding who protects a server: its resource metadata, then its issuer's.

1. **Protected resource metadata** (RFC 9728): from the ``resource_metadata``
   URL of the challenge when there is one; else the well-known URL with the
   endpoint's path inserted, then the root one (:func:`resource_metadata_urls`).
   The first document that validates is used. Its ``resource`` must be the
   server's URL or a parent of it (same scheme, host and port; a path prefix):
   otherwise the metadata speaks for another resource and the flow stops
   (:func:`check_resource`). That ``resource``, exactly as published, is what
   the client names in every authorization and token request (RFC 8707).
2. **Authorization server metadata** for the first listed server: RFC 8414
   with the issuer's path inserted, then OpenID Connect Discovery inserted and
   appended (:func:`auth_server_metadata_urls`); a 4xx tries the next URL. The
   document's ``issuer`` must equal the issuer the URL was built from, as a
   plain string: if not, it is not used (RFC 8414 §3.3), and the flow stops.

Every URL is checked before it is fetched, and the endpoints the metadata
names (authorization, token, registration) as soon as it is read: ``https``,
or plain ``http`` on loopback only (:mod:`.endpoints`).

A server that publishes no resource metadata is taken to be its own
authorization server (the 2025-03-26 convention). Raises
:class:`~runtime.errors.AuthorizationError` for every refusal; performs GETs
with the given httpx client and nothing else, each bounded as a whole
(:mod:`.bounded`).
"""

from __future__ import annotations

import logging
from typing import Final, TypeVar
from urllib.parse import SplitResult, urlsplit, urlunsplit

import httpx
from pydantic import BaseModel, ValidationError

from runtime.errors import AuthorizationError

from .bounded import AnswerTooLarge, fetch
from .endpoints import check_endpoint
from .wire import AuthServerMetadata, ResourceMetadata

__all__ = [
    "auth_server_metadata",
    "auth_server_metadata_urls",
    "canonical_resource",
    "check_resource",
    "resource_metadata",
    "resource_metadata_urls",
]

log = logging.getLogger("yieldmcp.oauth")

PRM: Final = "/.well-known/oauth-protected-resource"
_MAX_DOCUMENT: Final = 256 * 1024
M = TypeVar("M", bound=BaseModel)


def _split(url: str) -> SplitResult:
    """``url``'s parts (one named in a server's metadata, say).

    Raises:
        AuthorizationError: it is no URL (``http://[::1``).
    """
    try:
        return urlsplit(url)
    except ValueError:
        raise AuthorizationError(f"refusing {url!r}: it is not a URL") from None


def _origin(url: str) -> tuple[str, str]:
    parts = _split(url)
    return f"{parts.scheme}://{parts.netloc}", parts.path.rstrip("/")


def canonical_resource(server_url: str) -> str:
    """The server's URL as a resource identifier: no fragment, lower-case
    scheme and host (RFC 8707 §2)."""
    parts = urlsplit(server_url)
    return urlunsplit(
        (parts.scheme.lower(), parts.netloc.lower(), parts.path, parts.query, "")
    )


def resource_metadata_urls(challenged: str | None, server_url: str) -> list[str]:
    """Where to look for the resource metadata, in order."""
    origin, path = _origin(server_url)
    urls = [challenged] if challenged else []
    if path:
        urls.append(f"{origin}{PRM}{path}")
    urls.append(f"{origin}{PRM}")
    return urls


def auth_server_metadata_urls(issuer: str) -> list[str]:
    """Where to look for an issuer's metadata, in the spec's order."""
    origin, path = _origin(issuer)
    if not path:
        return [
            f"{origin}/.well-known/oauth-authorization-server",
            f"{origin}/.well-known/openid-configuration",
        ]
    return [
        f"{origin}/.well-known/oauth-authorization-server{path}",
        f"{origin}/.well-known/openid-configuration{path}",
        f"{origin}{path}/.well-known/openid-configuration",
    ]


def check_resource(resource: str, server_url: str) -> None:
    """Raise unless ``resource`` is the server's URL or a parent of it.

    Raises:
        AuthorizationError: the metadata is for another resource.
    """
    wanted, given = _split(server_url), _split(resource)
    same_origin = (
        wanted.scheme.lower() == given.scheme.lower()
        and wanted.netloc.lower() == given.netloc.lower()
    )
    path = wanted.path.rstrip("/") + "/"
    if not (same_origin and path.startswith(given.path.rstrip("/") + "/")):
        raise AuthorizationError(
            f"the server at {server_url} publishes metadata for another resource "
            f"({resource}); refusing to authorize for it"
        )


async def _get(http: httpx.AsyncClient, url: str, model: type[M], what: str) -> M | int:
    """The document at ``url`` (or the HTTP status that refused it; 0: invalid).

    Raises:
        AuthorizationError: ``url`` may not be used (:mod:`.endpoints`), or
            cannot be reached.
    """
    check_endpoint(url, what)
    try:
        response = await fetch(
            http,
            "GET",
            url,
            limit=_MAX_DOCUMENT,
            headers={"Accept": "application/json"},
        )
    except AnswerTooLarge:
        return 0
    except httpx.HTTPError as exc:
        raise AuthorizationError(
            f"cannot fetch {url}: {exc or type(exc).__name__}"
        ) from None
    if response.status_code != 200:
        return response.status_code
    try:
        return model.model_validate_json(response.content)
    except ValidationError:
        log.debug("%s is not a valid %s", url, model.__name__)
        return 0


async def resource_metadata(
    http: httpx.AsyncClient, challenged: str | None, server_url: str
) -> ResourceMetadata | None:
    """The server's validated resource metadata; None if it publishes none.

    Raises:
        AuthorizationError: the metadata is for another resource.
    """
    for url in resource_metadata_urls(challenged, server_url):
        found = await _get(http, url, ResourceMetadata, "the resource metadata")
        if isinstance(found, ResourceMetadata):
            check_resource(found.resource, server_url)
            log.debug("resource metadata from %s", url)
            return found
    return None


def _check_endpoints(metadata: AuthServerMetadata) -> None:
    """Refuse the metadata now if an endpoint it names may not be used."""
    check_endpoint(metadata.authorization_endpoint, "the authorization endpoint")
    check_endpoint(metadata.token_endpoint, "the token endpoint")
    if metadata.registration_endpoint is not None:
        check_endpoint(metadata.registration_endpoint, "the registration endpoint")


async def auth_server_metadata(
    http: httpx.AsyncClient, issuer: str
) -> AuthServerMetadata:
    """The validated metadata of ``issuer``.

    Raises:
        AuthorizationError: none found, or one naming another issuer.
    """
    for url in auth_server_metadata_urls(issuer):
        what = "the authorization server metadata"
        found = await _get(http, url, AuthServerMetadata, what)
        if isinstance(found, AuthServerMetadata):
            if found.issuer != issuer:  # simple string comparison: RFC 8414 §3.3
                raise AuthorizationError(
                    f"the metadata at {url} names issuer {found.issuer!r}, not "
                    f"{issuer!r}; refusing to use it"
                )
            _check_endpoints(found)
            return found
        if found >= 500:
            break
    raise AuthorizationError(f"found no authorization server metadata for {issuer}")

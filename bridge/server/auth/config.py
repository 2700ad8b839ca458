"""How a server checks access tokens, in one value: :class:`Auth`.

``Server(auth=Auth(...))`` makes the HTTP endpoint an OAuth 2.1 resource
server: every request needs a bearer token that the :attr:`Auth.verifier`
accepts for :attr:`Auth.resource`, and the scopes the server (and the tool
called) require. :class:`Auth` also says what the server publishes about
itself: its RFC 9728 protected resource metadata (:meth:`Auth.metadata`),
served at the well-known paths :meth:`Auth.metadata_paths` names, and
pointed to by every challenge (:meth:`Auth.metadata_url`).

Nothing here does I/O or checks a token (:mod:`.gate` does, with a
verifier from :mod:`.jwt` or :mod:`.introspection`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Final, final
from urllib.parse import urlsplit

import attrs

from runtime.principal import scope_set

if TYPE_CHECKING:
    from .verifiers import TokenVerifier

__all__ = ["WELL_KNOWN", "Auth", "check_resource"]

WELL_KNOWN: Final = "/.well-known/oauth-protected-resource"
_LOOPBACK: Final = frozenset({"127.0.0.1", "localhost", "::1"})


def check_resource(resource: str) -> str:
    """``resource`` if it can name a protected resource (RFC 8707 §2, RFC 9728):
    an absolute ``https`` URI (``http`` only on loopback) with no fragment.

    Raises:
        ValueError: saying what is wrong.
    """
    try:
        parts = urlsplit(resource)
        host = parts.hostname
    except ValueError:
        raise ValueError(f"the resource {resource!r} is not a URL") from None
    if parts.scheme not in ("https", "http") or not host:
        raise ValueError(f"the resource {resource!r} must be an absolute https URL")
    if parts.scheme == "http" and host not in _LOOPBACK:
        raise ValueError(
            f"the resource {resource!r} must use https (http only on loopback)"
        )
    if parts.fragment or "#" in resource:
        raise ValueError(f"the resource {resource!r} must not have a fragment")
    return resource


def _resource(instance: Any, attribute: attrs.Attribute[Any], value: str) -> None:
    check_resource(value)


def _servers(value: Iterable[str] | str) -> tuple[str, ...]:
    servers = (value,) if isinstance(value, str) else tuple(value)
    if not servers:
        raise ValueError("Auth needs at least one authorization server")
    return servers


def _optional_scopes(value: Iterable[str] | None) -> tuple[str, ...] | None:
    return None if value is None else tuple(sorted(scope_set(value)))


@final
@attrs.frozen(kw_only=True)
class Auth:
    """How a server checks access tokens (see the module doc).

    Attributes:
        resource: this server's canonical URI, exactly as clients name it and
            as tokens carry it in ``aud`` (RFC 8707), e.g.
            ``https://mcp.example.com/mcp``.
        authorization_servers: the issuers whose tokens are accepted (listed
            in the metadata; clients use the first).
        verifier: checks a token and says whose it is
            (:class:`~bridge.server.auth.JwtVerifier`,
            :class:`~bridge.server.auth.IntrospectionVerifier`, or your own).
        scopes: scopes every request's token must grant.
        scopes_supported: the scopes advertised in the metadata (what a client
            asks for when a challenge names none); default: ``scopes``, or
            none advertised if that is empty.
        resource_name: a human-readable name for the metadata.
        resource_documentation: a URL of documentation for the metadata.
    """

    resource: str = attrs.field(validator=_resource)
    authorization_servers: tuple[str, ...] = attrs.field(converter=_servers)
    verifier: TokenVerifier
    scopes: frozenset[str] = attrs.field(default=frozenset(), converter=scope_set)
    scopes_supported: tuple[str, ...] | None = attrs.field(
        default=None, converter=_optional_scopes
    )
    resource_name: str | None = None
    resource_documentation: str | None = None

    def advertised_scopes(self) -> tuple[str, ...]:
        """The ``scopes_supported`` published (possibly empty)."""
        if self.scopes_supported is not None:
            return self.scopes_supported
        return tuple(sorted(self.scopes))

    def metadata(self) -> dict[str, Any]:
        """The RFC 9728 protected resource metadata document."""
        document: dict[str, Any] = {
            "resource": self.resource,
            "authorization_servers": list(self.authorization_servers),
            "bearer_methods_supported": ["header"],
        }
        advertised = self.advertised_scopes()
        if advertised:
            document["scopes_supported"] = list(advertised)
        if self.resource_name is not None:
            document["resource_name"] = self.resource_name
        if self.resource_documentation is not None:
            document["resource_documentation"] = self.resource_documentation
        return document

    def metadata_url(self) -> str:
        """Where the metadata is, in the form that names this resource's path
        (the well-known suffix inserted before it: RFC 9728 §3.1)."""
        parts = urlsplit(self.resource)
        return f"{parts.scheme}://{parts.netloc}{self.metadata_paths()[0]}"

    def metadata_paths(self) -> tuple[str, ...]:
        """The request paths that serve the metadata: the path-inserted form
        first, then the root form (the two the MCP spec names)."""
        path = urlsplit(self.resource).path.rstrip("/")
        return (WELL_KNOWN + path, WELL_KNOWN) if path else (WELL_KNOWN,)

"""The server as an OAuth 2.1 resource server: access tokens, scopes, who calls.

Owns: how a server checks access tokens (:class:`Auth`, in :mod:`.config`:
the resource, its authorization servers, its verifier, the scopes every
request needs, and the RFC 9728 metadata it publishes), the verifiers (JWT
against a JWKS in :mod:`.jwt`, RFC 7662 introspection in
:mod:`.introspection`, the protocol any custom one follows in
:mod:`.verifiers`), the checks a request passes before any MCP and the
challenges it gets when it fails (:mod:`.gate`: 401, 403
``insufficient_scope``), and how a call's saved state is bound to the
principal that made it (:mod:`.binding`).

Does not own: HTTP itself (``bridge.transports.http`` calls :mod:`.gate` and
serves the metadata), sealing states (``bridge.server.state_token``), or the
client's half of OAuth (``bridge.client.oauth``). The principal is plain
data, :class:`runtime.Principal`.
"""

from typing import TYPE_CHECKING, Any

from .config import Auth as Auth
from .verifiers import TokenVerifier as TokenVerifier

if TYPE_CHECKING:
    from .introspection import IntrospectionVerifier as IntrospectionVerifier
    from .jwt import JwtVerifier as JwtVerifier

__all__ = ["Auth", "IntrospectionVerifier", "JwtVerifier", "TokenVerifier"]


def __getattr__(name: str) -> Any:
    # The verifiers load httpx and joserfc: only a server that uses one pays
    # for them (every server imports this package, for .binding).
    if name == "JwtVerifier":
        from .jwt import JwtVerifier

        return JwtVerifier
    if name == "IntrospectionVerifier":
        from .introspection import IntrospectionVerifier

        return IntrospectionVerifier
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

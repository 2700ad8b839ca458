"""The OAuth documents the client reads, as pydantic models (validation at the
wire): protected resource metadata (RFC 9728), authorization server metadata
(RFC 8414 / OpenID Connect Discovery), a dynamic registration answer (RFC
7591) and a token answer (RFC 6749 §5.1).

Each model keeps only what the flow uses and ignores the rest; a document that
lacks a required field or has one of the wrong type does not validate, and
the flow treats it as absent (or fails, where the spec says so). No I/O here.
"""

from __future__ import annotations

from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["AuthServerMetadata", "Registered", "ResourceMetadata", "TokenAnswer"]


class _Document(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class ResourceMetadata(_Document):
    """RFC 9728: what protects the resource, and which scopes it has."""

    resource: str
    authorization_servers: list[str] = Field(min_length=1)
    scopes_supported: list[str] | None = None


class AuthServerMetadata(_Document):
    """RFC 8414 (or OpenID Connect Discovery): the authorization server."""

    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    registration_endpoint: str | None = None
    scopes_supported: list[str] | None = None
    code_challenge_methods_supported: list[str] | None = None
    token_endpoint_auth_methods_supported: list[str] | None = None
    client_id_metadata_document_supported: bool = False
    authorization_response_iss_parameter_supported: bool = False


class Registered(_Document):
    """RFC 7591 §3.2.1: the client a registration made."""

    client_id: str = Field(min_length=1)
    client_secret: str | None = None
    token_endpoint_auth_method: str | None = None


TOKEN_CHARACTERS: Final = r"[\x21-\x7e]+"
"""What a token may be: it is sent as ``Authorization: Bearer TOKEN``, so only
what a header value can carry (RFC 6750's b64token is narrower still). A
token with a line break or a non-ASCII letter failed every later request,
and was kept in the token file, which then failed every later call."""
SAID_CHARS: Final = 300
"""Characters of a server's own words (an ``error_description``, a scope) an
error quotes."""


class TokenAnswer(_Document):
    """RFC 6749 §5.1: a successful token answer."""

    access_token: str = Field(min_length=1, pattern=f"^{TOKEN_CHARACTERS}$")
    token_type: str
    # Ten years at most: 10**400 is a JSON number no clock can add.
    expires_in: int | None = Field(default=None, le=315_360_000)
    refresh_token: str | None = None
    scope: str | None = None

    @field_validator("expires_in", mode="before")
    @classmethod
    def _lenient_number(cls, value: Any) -> Any:
        # Some servers send "3600"; a number is what RFC 6749 means.
        if isinstance(value, str) and value.isascii() and value.isdigit():
            return int(value) if len(value) < 20 else value
        return value

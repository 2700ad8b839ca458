"""Sealed ``requestState``: a call's journal, carried by the client, opaque to it.

In the 2026-07-28 era a server keeps nothing between rounds of a call: the
journal of answers so far travels to the client in ``requestState`` and comes
back with the retry. The client controls those bytes, so they are sealed with
AES-256-GCM under a server key: confidential (elicited content and model
output never travel in clear), authenticated (any change is detected), and
bound to what they are for (the method is authenticated data; the tool name,
an argument digest and an expiry are inside).

Every rejection — malformed, tampered, sealed under an unknown key, expired,
for another method — is the same error, so the wire never says which check
failed. Any worker holding the key can open any state: that is what makes
resumption stateless.

Keys: pass them to :class:`Sealer`, or set ``YIELDMCP_STATE_KEY`` to one or
more comma-separated base64url 32-byte keys (the first seals; all open, for
rotation). Without either, a random key is generated at start, which is right
for a single process.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, cast, final

import pydantic_core
from pydantic import ConfigDict, TypeAdapter, ValidationError

from bridge.jsonrpc.messages import INVALID_PARAMS
from runtime.errors import RequestError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

__all__ = ["KEY_ENV", "Sealer", "binding", "decode_key", "invalid_state", "new_key"]

KEY_ENV: Final = "YIELDMCP_STATE_KEY"
_PREFIX: Final = "v1."
_MAX_TOKEN: Final = 4 * 1024 * 1024
_NONCE: Final = 12
_KID: Final = 4


def invalid_state() -> RequestError:
    """The one error every rejected ``requestState`` gets."""
    return RequestError(
        INVALID_PARAMS,
        "Invalid or expired requestState",
        {"reason": "invalid_request_state"},
    )


def used_state() -> RequestError:
    """The error of a ``requestState`` already used by another retry.

    Distinct from :func:`invalid_state`: the state opened (it is genuine, for
    this call and caller), so saying that it was used tells a client nothing
    about the checks a forged one fails.
    """
    return RequestError(
        INVALID_PARAMS,
        "requestState already used: this round of the call was retried already; "
        "continue with the requestState of the latest reply, or call the tool "
        "again without one",
        {"reason": "request_state_used"},
    )


def binding(
    method: str, tool: str, arguments_digest: str, who: str | None
) -> dict[str, str | None]:
    """What a sealed state is bound to: it opens only for the same call.

    The method is also the sealing's authenticated data (``purpose``); the
    tool (or prompt) name, the digest of the call's arguments and, on a server
    that checks access tokens, the digest of the caller's identity (``who``,
    from :func:`bridge.server.auth.binding.principal_binding`; None: no caller)
    travel inside. A state sealed for one call or caller is refused for another
    with :func:`invalid_state`. Bind another field by adding it here: every
    state sealed after that carries it, and one without it is refused.
    """
    return {"method": method, "name": tool, "args": arguments_digest, "who": who}


def new_key() -> str:
    """A fresh key, base64url-encoded, suitable for ``YIELDMCP_STATE_KEY``."""
    return base64.urlsafe_b64encode(secrets.token_bytes(32)).decode()


def decode_key(text: str) -> bytes:
    try:
        key = base64.urlsafe_b64decode(text.strip() + "=" * (-len(text.strip()) % 4))
    except (binascii.Error, ValueError):
        raise ValueError(f"{KEY_ENV}: keys must be base64url") from None
    if len(key) != 32:
        raise ValueError(f"{KEY_ENV}: keys must be 32 bytes, got {len(key)}")
    return key


# Tokens are base64url of a few kilobytes, decoded on every resumed round. The
# stdlib codec takes ~4 µs a kilobyte; pydantic-core's (the JSON bytes mode, a
# documented setting) is ~6x faster, and its decoder is strict where it
# matters (zero spare bits) but tolerant elsewhere: it takes padding and the
# standard alphabet's "+" and "/", and JSON escapes in the quoted text would be
# read as the characters they stand for. Those five are refused first.
_TOKEN_BYTES: Final = TypeAdapter(
    bytes, config=ConfigDict(ser_json_bytes="base64", val_json_bytes="base64")
)


def _b64encode(data: bytes) -> str:
    """Unpadded base64url (the JSON form is quoted and padded)."""
    return _TOKEN_BYTES.serializer.to_json(data).decode("ascii")[1:-1].rstrip("=")


def _b64decode(text: str) -> bytes | None:
    """Strict, canonical base64url: anything but the exact encoding is refused.

    Lenient decoders stop at padding or skip stray characters, which would let
    a tampered token (``<state>-TAMPERED``) decode to the original bytes. So:
    only the unpadded base64url alphabet, a length an encoding can have, and
    zero bits where the last character has bits to spare.
    """
    if not text or "=" in text or "+" in text or "/" in text:
        return None
    if "\\" in text or '"' in text:
        return None
    try:
        return _TOKEN_BYTES.validator.validate_json(f'"{text}"')
    except ValidationError:
        return None


def _kid(key: bytes) -> bytes:
    return hashlib.sha256(b"yieldmcp state key id" + key).digest()[:_KID]


@final
class Sealer:
    """Seals and opens request states.

    Args:
        keys: 32-byte keys; the first seals, all open. Default: from
            ``YIELDMCP_STATE_KEY``, else one random key.
        ttl: seconds a sealed state stays valid.
        clock: the time source (seconds since the epoch).
    """

    def __init__(
        self,
        keys: Sequence[bytes] | None = None,
        *,
        ttl: float = 600.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if keys is None:
            configured = os.environ.get(KEY_ENV, "")
            keys = [decode_key(k) for k in configured.split(",") if k.strip()]
        #: Whether the key was made up here (none given, none configured):
        #: a server with a store then takes the store's (:mod:`bridge.durable.keys`).
        self.generated = not keys
        if not keys:
            keys = [secrets.token_bytes(32)]
        if any(len(k) != 32 for k in keys):
            raise ValueError("request-state keys must be 32 bytes")
        self._keys = list(keys)
        self._sealing_kid = _kid(keys[0])
        # The ciphers are made at the first seal or open: most processes (a
        # 2025-11-25 server, a client) never seal, and importing cryptography
        # is a few percent of a process's start-up.
        self._ciphers: dict[bytes, AESGCM] | None = None
        self.ttl = ttl
        self.clock = clock

    def _made_ciphers(self) -> dict[bytes, AESGCM]:
        """One AES-GCM cipher per key, by key id (the first key seals)."""
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        self._ciphers = {_kid(k): AESGCM(k) for k in self._keys}
        return self._ciphers

    def seal(self, payload: Mapping[str, Any], *, purpose: str) -> str:
        """An opaque token carrying ``payload`` (JSON) for ``purpose`` only."""
        body = dict(payload)
        body["exp"] = self.clock() + self.ttl
        kid = self._sealing_kid
        aead = (self._ciphers or self._made_ciphers())[kid]
        nonce = secrets.token_bytes(_NONCE)
        sealed = aead.encrypt(nonce, pydantic_core.to_json(body), purpose.encode())
        return _PREFIX + _b64encode(kid + nonce + sealed)

    def open(self, token: object, *, purpose: str) -> dict[str, Any]:
        """The payload sealed in ``token`` for ``purpose``.

        Raises:
            RequestError: :func:`invalid_state`, whatever the cause.
        """
        if not isinstance(token, str) or len(token) > _MAX_TOKEN:
            raise invalid_state()
        if not token.startswith(_PREFIX):
            raise invalid_state()
        raw = _b64decode(token[len(_PREFIX) :])
        if raw is None:
            raise invalid_state()
        kid, nonce, sealed = raw[:_KID], raw[_KID : _KID + _NONCE], raw[_KID + _NONCE :]
        aead = (self._ciphers or self._made_ciphers()).get(kid)
        if aead is None or len(nonce) != _NONCE:
            raise invalid_state()
        from cryptography.exceptions import InvalidTag

        try:
            body: Any = pydantic_core.from_json(
                aead.decrypt(nonce, sealed, purpose.encode())
            )
        except (InvalidTag, ValueError):
            raise invalid_state() from None
        if not isinstance(body, dict):
            raise invalid_state()
        payload = cast(dict[str, Any], body)
        expiry: Any = payload.get("exp")
        if not isinstance(expiry, int | float) or expiry < self.clock():
            raise invalid_state()
        return payload

"""Where the client keeps what OAuth gave it: tokens per resource, clients per
authorization server.

* :class:`Tokens` — the access token (and refresh token, expiry, scope) for
  one resource, stamped with the issuer that granted them: tokens from an
  authorization server the resource no longer names are never sent.
* :class:`ClientInfo` — how this client is known to one authorization server
  (its ``client_id``, secret and token endpoint authentication), keyed by
  that server's issuer: credentials are never presented to another (SEP-2352).

Two stores: :class:`MemoryTokenStore` (the default: gone when the process
ends) and :class:`FileTokenStore` (a JSON file created with mode 0600, written
atomically, and refused if others can read it). Neither logs what it holds;
``repr`` of the values hides every secret.
"""

from __future__ import annotations

import json
import os
import stat
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, Protocol, cast, final

import attrs

from runtime.errors import AuthorizationError

__all__ = ["ClientInfo", "FileTokenStore", "MemoryTokenStore", "TokenStore", "Tokens"]

AuthMethod = Literal["none", "client_secret_basic", "client_secret_post"]


@final
@attrs.frozen(kw_only=True)
class Tokens:
    """What a token endpoint granted for one resource."""

    access_token: str = attrs.field(repr=False)
    issuer: str
    token_type: str = "Bearer"
    refresh_token: str | None = attrs.field(default=None, repr=False)
    expires_at: float | None = None
    scope: str | None = None

    def expired(self, now: float | None = None, margin: float = 30.0) -> bool:
        """Whether the access token is (about to be) expired."""
        if self.expires_at is None:
            return False
        return (time.time() if now is None else now) >= self.expires_at - margin


@final
@attrs.frozen(kw_only=True)
class ClientInfo:
    """This client as one authorization server knows it.

    ``issuer`` is the server that issued it (None: a pre-registered client
    given without one, usable with any); ``portable`` marks a client ID
    metadata document URL, valid with every server.
    """

    client_id: str
    client_secret: str | None = attrs.field(default=None, repr=False)
    auth_method: AuthMethod = "none"
    issuer: str | None = None
    portable: bool = False

    def usable_with(self, issuer: str) -> bool:
        return self.portable or self.issuer is None or self.issuer == issuer


class TokenStore(Protocol):
    """Keeps tokens by resource and clients by issuer (see the module doc)."""

    async def load_tokens(self, resource: str) -> Tokens | None: ...

    async def save_tokens(self, resource: str, tokens: Tokens | None) -> None:
        """Keep ``tokens`` for ``resource`` (None forgets them)."""
        ...

    async def load_client(self, issuer: str) -> ClientInfo | None: ...

    async def save_client(self, issuer: str, client: ClientInfo | None) -> None:
        """Keep ``client`` for ``issuer`` (None forgets it)."""
        ...


@final
class MemoryTokenStore:
    """Tokens and clients in memory, for this process only."""

    def __init__(self) -> None:
        self._tokens: dict[str, Tokens] = {}
        self._clients: dict[str, ClientInfo] = {}

    async def load_tokens(self, resource: str) -> Tokens | None:
        return self._tokens.get(resource)

    async def save_tokens(self, resource: str, tokens: Tokens | None) -> None:
        _put(self._tokens, resource, tokens)

    async def load_client(self, issuer: str) -> ClientInfo | None:
        return self._clients.get(issuer)

    async def save_client(self, issuer: str, client: ClientInfo | None) -> None:
        _put(self._clients, issuer, client)


def _put(table: dict[str, Any], key: str, value: Any) -> None:
    if value is None:
        table.pop(key, None)
    else:
        table[key] = value


@final
class FileTokenStore:
    """Tokens and clients in one JSON file that only its owner may read.

    The file (and its directory, if missing) is created with mode 0600 (0700);
    every save replaces it atomically. A file others can read or write is
    refused with :class:`~runtime.errors.AuthorizationError`, as ssh refuses
    a readable key: fix it with ``chmod 600 FILE``.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path).expanduser()

    def __repr__(self) -> str:
        return f"FileTokenStore({str(self.path)!r})"

    async def load_tokens(self, resource: str) -> Tokens | None:
        entry = self._read()["tokens"].get(resource)
        return None if entry is None else Tokens(**entry)

    async def save_tokens(self, resource: str, tokens: Tokens | None) -> None:
        self._update("tokens", resource, tokens)

    async def load_client(self, issuer: str) -> ClientInfo | None:
        entry = self._read()["clients"].get(issuer)
        return None if entry is None else ClientInfo(**entry)

    async def save_client(self, issuer: str, client: ClientInfo | None) -> None:
        self._update("clients", issuer, client)

    def _read(self) -> dict[str, dict[str, Any]]:
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return {"tokens": {}, "clients": {}}
        except OSError as exc:
            raise AuthorizationError(
                f"cannot read tokens from {self.path}: {exc}"
            ) from None
        with os.fdopen(fd, "rb") as file:
            mode = os.fstat(file.fileno()).st_mode
            if mode & (stat.S_IRWXG | stat.S_IRWXO):
                raise AuthorizationError(
                    f"{self.path} is readable by others (mode {stat.S_IMODE(mode):o}); "
                    f"refusing to use it for tokens: chmod 600 {self.path}"
                )
            raw = file.read()
        try:
            data: Any = json.loads(raw)
        except ValueError:
            raise AuthorizationError(f"{self.path} is not a token file") from None
        document = cast(dict[str, Any], data) if isinstance(data, dict) else {}
        return {
            "tokens": dict(document.get("tokens") or {}),
            "clients": dict(document.get("clients") or {}),
        }

    def _update(self, table: str, key: str, value: Tokens | ClientInfo | None) -> None:
        data = self._read()
        _put(data[table], key, None if value is None else attrs.asdict(value))
        self._write(data)

    def _write(self, data: Mapping[str, Any]) -> None:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
        try:
            with os.fdopen(os.open(temporary, flags, 0o600), "w") as file:
                os.fchmod(file.fileno(), 0o600)  # O_CREAT's mode: new files only
                json.dump(data, file)
            os.replace(temporary, self.path)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise

"""Where the client keeps what OAuth gave it: tokens per resource, clients per
authorization server.

* :class:`Tokens` — the access token (and refresh token, expiry, scope) for
  one resource, stamped with the issuer that granted them: tokens from an
  authorization server the resource no longer names are never sent.
* :class:`ClientInfo` — how this client is known to one authorization server
  (its ``client_id``, secret and token endpoint authentication), keyed by
  that server's issuer: credentials are never presented to another (SEP-2352).

Two stores: :class:`MemoryTokenStore` (the default: gone when the process
ends) and :class:`FileTokenStore` (a JSON file, by default in the user's state
directory, created with mode 0600 in a directory of the user's with mode
0700, written atomically, never through a link, and refused if others can
read it or write its directory). Neither logs what it holds; ``repr`` of the
values hides every secret.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import secrets
import stat
import time
from collections.abc import Generator, Mapping
from pathlib import Path
from typing import Any, Final, Literal, Protocol, TypeVar, cast, final

import attrs
import trio

from bridge.jsonrpc.outbound import waiting_on_this_side
from bridge.user_files import lock_within, make_folders
from runtime.errors import AuthorizationError

from .wire import TOKEN_CHARACTERS

__all__ = [
    "ClientInfo",
    "FileTokenStore",
    "LOCK_WAIT",
    "MemoryTokenStore",
    "TokenStore",
    "Tokens",
    "default_token_path",
]

AuthMethod = Literal["none", "client_secret_basic", "client_secret_post"]
_AUTH_METHODS: Final = ("none", "client_secret_basic", "client_secret_post")


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


def default_token_path() -> Path:
    """Where tokens are kept unless told: ``$XDG_STATE_HOME/yieldmcp/tokens.json``,
    or ``~/.local/state/yieldmcp/tokens.json`` (a relative ``XDG_STATE_HOME``
    is ignored, as the XDG base directory specification says)."""
    state = os.environ.get("XDG_STATE_HOME", "")
    base = Path(state) if os.path.isabs(state) else Path.home() / ".local" / "state"
    return base / "yieldmcp" / "tokens.json"


_Entry = TypeVar("_Entry", Tokens, ClientInfo)

_FIELD_KINDS: Final[dict[str, tuple[type, ...]]] = {
    "access_token": (str,),
    "issuer": (str, type(None)),
    "token_type": (str,),
    "refresh_token": (str, type(None)),
    "expires_at": (int, float, type(None)),
    "scope": (str, type(None)),
    "client_id": (str,),
    "client_secret": (str, type(None)),
    "auth_method": (str,),
    "portable": (bool,),
}
"""What each field of a :class:`Tokens` or :class:`ClientInfo` read from a
file may hold (``Tokens.issuer`` is required by its class, not here)."""

_LONG_AGO: Final = 1e12  # seconds since 1970: some 30,000 years
_TOKEN: Final = re.compile(TOKEN_CHARACTERS)

LOCK_WAIT: Final = 10.0
"""Seconds a save waits for another process saving to the same file."""

_NEW_FILE: Final = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: a FIFO in the lock's place opens at once, to be refused.
_LOCK_FILE: Final = (
    os.O_RDONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
)


@final
class FileTokenStore:
    """Tokens and clients in one JSON file that only its owner may read.

    The file is ``path`` (default: :func:`default_token_path`). Its directory
    is created with mode 0700 if missing, and must belong to this user and
    be writable by no one else; it is opened once per operation without
    following a link, and the file is read and written relative to it, so a
    name swapped meanwhile leads nowhere else. The file is never followed
    either: a link in its place is refused. Every save writes a new file
    (``O_CREAT|O_EXCL|O_NOFOLLOW``, mode 0600) under a random name beside it
    and renames it over the old one, holding a lock file beside it
    (``.NAME.lock``, mode 0600, never followed, kept) locked (``flock``)
    from its read to the rename, so processes saving at once each keep their
    entry. A file others can read or write is
    refused too, as ssh refuses a readable key: fix it with ``chmod 600
    FILE``. Each refusal is an :class:`~runtime.errors.AuthorizationError`
    of one line.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = default_token_path() if path is None else Path(path).expanduser()

    def __repr__(self) -> str:
        return f"FileTokenStore({str(self.path)!r})"

    async def load_tokens(self, resource: str) -> Tokens | None:
        entry = self._read()["tokens"].get(resource)
        return None if entry is None else self._entry(Tokens, entry)

    async def save_tokens(self, resource: str, tokens: Tokens | None) -> None:
        await self._saved("tokens", resource, tokens)

    async def load_client(self, issuer: str) -> ClientInfo | None:
        entry = self._read()["clients"].get(issuer)
        return None if entry is None else self._entry(ClientInfo, entry)

    async def save_client(self, issuer: str, client: ClientInfo | None) -> None:
        await self._saved("clients", issuer, client)

    async def _saved(
        self, kind: str, key: str, value: Tokens | ClientInfo | None
    ) -> None:
        # In a thread: a save may wait for another process's (LOCK_WAIT).
        # That wait is not the server's: the request the save is on the way
        # of (the first, bounded by --connect-timeout, also 10 s) failed
        # blaming the server. Ctrl-C leaves the thread to finish alone.
        with waiting_on_this_side():
            await trio.to_thread.run_sync(
                self._update, kind, key, value, abandon_on_cancel=True
            )

    def _entry(self, cls: type[_Entry], entry: dict[str, Any]) -> _Entry:
        """One entry of the file as ``cls``; one line naming the file if its
        fields are not ``cls``'s (a hand-edited file, another program's)."""
        for name, value in entry.items():
            kinds = _FIELD_KINDS.get(name, ())
            if not isinstance(value, kinds) or (
                isinstance(value, bool) and name != "portable"
            ):
                raise self._bad()
        if entry.get("auth_method", "none") not in _AUTH_METHODS:
            raise self._bad()
        expires = entry.get("expires_at")
        if expires is not None and not -_LONG_AGO < expires < _LONG_AGO:
            raise self._bad()  # NaN, or past what a clock can add (10**400)
        token = entry.get("access_token")
        if token is not None and not _TOKEN.fullmatch(token):
            raise self._bad()  # it could not be sent as a header
        try:
            return cls(**entry)
        except TypeError:  # a field cls has not, or a missing one
            raise self._bad() from None

    def _bad(self) -> AuthorizationError:
        return AuthorizationError(
            f"{self.path} is not a token file (expected "
            '{"tokens": {RESOURCE: {...}}, "clients": {ISSUER: {...}}}); '
            "move it away or give another --oauth-tokens FILE"
        )

    def check(self) -> None:
        """Raise now, not mid-flow, if the directory or the file is unsafe
        (creating the directory if it is missing).

        Raises:
            AuthorizationError: the refusal, in one line.
        """
        self._read()

    # --- the directory and the file ----------------------------------------------

    @contextlib.contextmanager
    def _directory(self) -> Generator[int]:
        """The file's directory, open, once it is checked (created if missing)."""
        folder = self.path.parent
        try:
            make_folders(folder, 0o700)  # each one made 0700, not only the last
            fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR) and folder.is_symlink():
                raise _refused(f"{folder} is a symbolic link") from None
            raise AuthorizationError(
                f"cannot use {folder} for tokens: {exc.strerror or exc}"
            ) from None
        try:
            found = os.fstat(fd)
            if found.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                mode = stat.S_IMODE(found.st_mode)
                raise _refused(f"{folder} is writable by others (mode {mode:o})")
            if found.st_uid != os.geteuid():
                raise _refused(f"{folder} belongs to another user (uid {found.st_uid})")
            yield fd
        finally:
            os.close(fd)

    def _read(self) -> dict[str, dict[str, Any]]:
        with self._directory() as folder:
            return self._read_in(folder)

    def _read_in(self, folder: int) -> dict[str, dict[str, Any]]:
        # O_NONBLOCK: a FIFO in the file's place would block the open until
        # someone writes to it; it is opened at once and refused below.
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
        try:
            fd = os.open(self.path.name, flags, dir_fd=folder)
        except FileNotFoundError:
            return {"tokens": {}, "clients": {}}
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise AuthorizationError(
                    f"{self.path} is a symbolic link; refusing to use it for tokens"
                ) from None
            raise AuthorizationError(
                f"cannot read tokens from {self.path}: {exc.strerror or exc}"
            ) from None
        try:  # before fdopen, which refuses a folder itself
            _refuse_unless_private(fd, self.path, "is readable by others")
        except AuthorizationError:
            os.close(fd)
            raise
        with os.fdopen(fd, "rb") as file:
            raw = file.read()
        try:
            data: Any = json.loads(raw)
        except (ValueError, RecursionError):
            raise self._bad() from None
        if not isinstance(data, dict):
            raise self._bad()
        document = cast(dict[str, Any], data)
        tables: dict[str, dict[str, Any]] = {}
        for table in ("tokens", "clients"):
            entries: Any = document.get(table) or {}
            if not isinstance(entries, dict) or not all(
                isinstance(entry, dict)
                for entry in cast(dict[str, Any], entries).values()
            ):
                raise self._bad()
            tables[table] = dict(cast(dict[str, Any], entries))
        return tables

    def _update(self, table: str, key: str, value: Tokens | ClientInfo | None) -> None:
        with self._directory() as folder, self._locked(folder):
            data = self._read_in(folder)
            _put(data[table], key, None if value is None else attrs.asdict(value))
            self._write_in(folder, data)

    @property
    def lock_path(self) -> Path:
        """The file a save locks: ``.NAME.lock`` beside the token file."""
        return self.path.with_name(f".{self.path.name}.lock")

    @contextlib.contextmanager
    def _locked(self, folder: int) -> Generator[None]:
        """Hold :attr:`lock_path` (``flock``) from a save's read to its
        rename: two processes saving at once (two ``yieldmcp call``s) each
        wrote back what it had read, without the other's new entry. Reads
        need no lock: a save replaces the file whole.

        The lock is on a file only this user can open (0600, theirs, in a
        folder only they can write), not on the folder: anyone who could read
        the folder (mode 755) could lock it, and make every save of this
        user's fail after :data:`LOCK_WAIT`, the login just done thrown away.
        It is kept: removing it would let a save lock a file another had
        just replaced.

        Raises:
            AuthorizationError: another process held it for
                :data:`LOCK_WAIT` seconds, it is not a file only this user
                can open, or the lock failed (where the file system has no
                locks, the save goes on without).
        """
        name = self.lock_path
        try:
            fd = os.open(name.name, _LOCK_FILE, 0o600, dir_fd=folder)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise AuthorizationError(
                    f"{name} is a symbolic link; refusing to use it for tokens"
                ) from None
            raise AuthorizationError(
                f"cannot lock {name} for tokens: {exc.strerror or exc}"
            ) from None
        try:
            _refuse_unless_private(fd, name, "may be opened by others")
            try:
                locked = lock_within(fd, LOCK_WAIT)
            except OSError as exc:
                raise AuthorizationError(
                    f"cannot lock {name} for tokens: {exc.strerror or exc}"
                ) from None
            if not locked:
                raise AuthorizationError(
                    f"another process kept {name} locked for "
                    f"{LOCK_WAIT:g} s; tokens not saved"
                )
            yield
        finally:
            os.close(fd)  # the lock goes with it

    def _write_in(self, folder: int, data: Mapping[str, Any]) -> None:
        """A new file under a name no one could have guessed, then renamed over
        the old one: never a write through a name that might already exist."""
        temporary = f".{self.path.name}.{secrets.token_hex(8)}.tmp"
        try:
            fd = os.open(temporary, _NEW_FILE, 0o600, dir_fd=folder)
        except OSError as exc:
            raise AuthorizationError(
                f"cannot write tokens beside {self.path}: {exc.strerror or exc}"
            ) from None
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as file:
                os.fchmod(file.fileno(), 0o600)  # whatever the umask left
                json.dump(data, file)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, self.path.name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary, dir_fd=folder)
            raise


def _refused(why: str) -> AuthorizationError:
    return AuthorizationError(
        f"{why}; refusing to keep tokens there: use a directory only you can "
        "write to (the default is in ~/.local/state)"
    )


def _refuse_unless_private(fd: int, path: Path, others: str) -> None:
    """Refuse the open file ``fd`` (at ``path``) unless it is a regular file
    of this user's that no one else may open; ``others`` says what they
    could do with it otherwise (``"is readable by others"``).

    Raises:
        AuthorizationError: one line saying which, and the fix.
    """
    found = os.fstat(fd)
    if not stat.S_ISREG(found.st_mode) or found.st_uid != os.geteuid():
        raise AuthorizationError(
            f"{path} is not a file of yours; refusing to use it for tokens"
        )
    if found.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        mode = stat.S_IMODE(found.st_mode)
        raise AuthorizationError(
            f"{path} {others} (mode {mode:o}); refusing to use it for tokens: "
            f"chmod 600 {path}"
        )

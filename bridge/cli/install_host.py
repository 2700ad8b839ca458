"""``yieldmcp install claude-desktop|cursor|vscode FILE``: add a server to a
host's MCP configuration.

The entry runs this installation's ``yieldmcp`` over stdio (the console
script beside this interpreter, else ``python -m bridge.cli``) with
``serve FILE`` (FILE's absolute path), so the host needs no PATH and no
virtualenv of its own. It is merged into the host's JSON file: every other
key and server is kept as it was; a server of the same name is refused
unless ``force``; a file that is not JSON (or not the shape the host reads:
its servers key ``null`` included) is refused, never rewritten. Every number
is written back as the file spelled it (``1.50``, ``1E5``, ``-0``, digits
past a float's), and a string holding a lone surrogate (``"\\ud800"``) as
the same escape. The file is written whole to a temporary file
beside it and moved over it (``os.replace``), so the host never reads half of
it; a symbolic link, FIFO or folder there is refused before anything is read.
The file is locked from the read to the rename, so installs at once each keep
their entry, and it keeps its mode and (when root rewrites it) its owner; a
lock another process keeps longer than :data:`LOCK_WAIT` is one line, never a
hang.

As root (``sudo yieldmcp install`` into a user's HOME) the install runs as
the one user other than root who owns folders the file is reached through
(as written, and where its links lead), in a child process that takes that
user's identity (:func:`_as_owner`): the user can move and link what is in
their folders at any time, and root following them (a folder swapped for a
link to a root-only folder while the install waited for the lock) wrote the
user's file, owned by the user, where only root may write. As the user it
can write only where the user can, and what it makes is the user's, as their
host needs. Folders of several users, or root's folders others may change
anyway (group- or world-writable, or a world-writable one a folder must be
made in), are refused (:func:`_owner_to_act_as`).

Where each host reads its configuration by default, from its documentation:

* Claude Desktop: ``claude_desktop_config.json`` under
  ``~/Library/Application Support/Claude/`` (macOS) and ``%APPDATA%\\Claude\\``
  (Windows), per https://modelcontextprotocol.io/quickstart/user; Linux has
  no official build, and ``~/.config/Claude/`` is where the community builds
  read it. Servers under ``mcpServers``.
* Cursor: ``~/.cursor/mcp.json`` (global; a project's is
  ``.cursor/mcp.json``), per https://cursor.com/docs/mcp. Servers under
  ``mcpServers``.
* VS Code: the user profile's ``mcp.json`` (``Code/User/mcp.json`` under
  ``~/Library/Application Support`` on macOS, ``%APPDATA%`` on Windows,
  ``~/.config`` on Linux; a workspace's is ``.vscode/mcp.json``), per
  https://code.visualstudio.com/docs/copilot/reference/mcp-configuration.
  Servers under ``servers``, each with ``"type": "stdio"``.

``HOME`` must be an absolute path (an empty or relative one would put the
file under ``/`` or the current folder): otherwise ``--config`` is needed. A
relative ``XDG_CONFIG_HOME`` is ignored, as the XDG specification says.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import stat
import sys
from collections.abc import Callable, Generator, Mapping
from pathlib import Path
from typing import Any, Final, cast

import attrs

from bridge.elicit import printable_line
from bridge.printable import has_unseen
from bridge.user_files import lock_within, make_folders

from .host_options import no_constant, shown
from .whole_file import write_whole

__all__ = [
    "HOSTS",
    "Host",
    "LOCK_WAIT",
    "MAX_CONFIG_BYTES",
    "InstallError",
    "check_entry",
    "default_config",
    "install",
    "server_entry",
]


class InstallError(Exception):
    """The configuration cannot be changed as asked (one line)."""


@attrs.frozen
class Host:
    """A host: its name on the command line, its own name, and the key its
    configuration keeps servers under."""

    name: str
    title: str
    servers_key: str
    typed: bool  # each entry says "type": "stdio"


HOSTS = {
    host.name: host
    for host in (
        Host("claude-desktop", "Claude Desktop", "mcpServers", typed=False),
        Host("cursor", "Cursor", "mcpServers", typed=False),
        Host("vscode", "VS Code", "servers", typed=True),
    )
}

MAX_CONFIG_BYTES = 16 << 20
"""The largest host configuration ``install`` reads (a gigabyte took 34 s
and 2.9 GB of memory to refuse or rewrite; a host's is a few kilobytes)."""

LOCK_WAIT = 10.0
"""Seconds ``install`` waits for another process's lock on the host's file
(another install, or any process that can read it and keeps it locked);
then it stops with one line naming the file, the file unchanged."""

_GENERIC_STEMS = frozenset({"tools", "server", "main", "app", "__main__"})


def default_config(
    host: str,
    *,
    platform: str = sys.platform,
    home: Path | None = None,
    environ: Mapping[str, str] = os.environ,
) -> Path:
    """Where ``host`` reads its MCP configuration on this machine (see the
    module docstring for the sources).

    Raises:
        InstallError: ``HOME`` is empty or relative (not on Windows).
    """
    base = _home(platform, environ) if home is None else home
    if host == "cursor":
        return base / ".cursor" / "mcp.json"
    if platform == "darwin":
        support = base / "Library" / "Application Support"
    elif platform == "win32":
        support = Path(environ.get("APPDATA") or base / "AppData" / "Roaming")
    else:
        xdg = environ.get("XDG_CONFIG_HOME", "")
        # The XDG specification: a relative path there is invalid, ignored.
        support = Path(xdg) if os.path.isabs(xdg) else base / ".config"
    if host == "vscode":
        return support / "Code" / "User" / "mcp.json"
    return support / "Claude" / "claude_desktop_config.json"


def _home(platform: str, environ: Mapping[str, str]) -> Path:
    """The user's home folder: ``HOME`` when set (an absolute path), else
    the password database's (``Path.home()``)."""
    if platform == "win32" or "HOME" not in environ:
        return Path.home()
    home = environ["HOME"]
    if not os.path.isabs(home):
        raise InstallError(
            f"HOME is not an absolute path ({shown(home, quote=True)}); "
            "give --config FILE"
        )
    return Path(home)


def default_name(target: str) -> str:
    """The server's name: FILE's stem, or its folder's name when the stem
    says nothing (``tools.py``, ``server.py``); a module's last part.

    Raises:
        InstallError: FILE cannot be looked at (a name too long, a loop of
            symbolic links on its way).
    """
    path = Path(target)
    with _looking_at(target):
        if path.suffix == ".py" or path.exists():
            stem = path.stem
            if stem in _GENERIC_STEMS:
                return path.resolve().parent.name or stem
            return stem
    return target.rsplit(".", 1)[-1]


@contextlib.contextmanager
def _looking_at(target: str) -> Generator[None]:
    """Looking FILE up on disk: what the system refuses is one line
    (``Path.resolve`` raises RuntimeError on a loop of links on 3.11)."""
    try:
        yield
    except OSError as exc:
        raise InstallError(
            f"cannot use {shown(target)}: {exc.strerror or exc}"
        ) from None
    except RuntimeError:
        raise InstallError(
            f"cannot use {shown(target)}: a loop of symbolic links on its way"
        ) from None


def _command() -> list[str]:
    """This installation's ``yieldmcp``, runnable from anywhere."""
    python = Path(os.path.abspath(sys.executable))  # the venv's, not resolved
    script = python.parent / ("yieldmcp.exe" if sys.platform == "win32" else "yieldmcp")
    if script.is_file():
        return [str(script)]
    return [str(python), "-m", "bridge.cli"]


def served(target: str) -> str:
    """FILE as an absolute path; a module name as it is.

    Raises:
        InstallError: a path that does not exist.
    """
    path = Path(target)
    with _looking_at(target):
        if path.is_file():
            return str(path.resolve())
    if path.suffix == ".py" or os.sep in target or "/" in target:
        raise InstallError(f"no such file: {target}")
    return target  # a module, found on the interpreter's path


def server_entry(host: Host, target: str) -> dict[str, Any]:
    """The host's entry for serving ``target`` over stdio."""
    command, *args = _command()
    entry: dict[str, Any] = {"type": "stdio"} if host.typed else {}
    entry["command"] = command
    entry["args"] = [*args, "serve", served(target)]
    return entry


def install(
    host: Host, config: Path, name: str, entry: Mapping[str, Any], *, force: bool
) -> None:
    """Merge ``entry`` as server ``name`` into ``config``, written atomically.

    The file is held open and locked (``flock``) from the read to the rename,
    so installs at once each add their entry in turn; a new file is created
    empty first, to be locked like one already there.

    Raises:
        InstallError: ``config`` is a symbolic link or not a regular file, is
            not JSON or not an object of servers, already has ``name``
            (without ``force``), stays locked by another process longer than
            :data:`LOCK_WAIT`, or cannot be written.
    """
    check_entry(name, entry)
    owner = _owner_to_act_as(config)
    if owner is not None:
        _as_owner(owner, lambda: _merge(host, config, name, entry, force=force))
    else:
        _merge(host, config, name, entry, force=force)


def _merge(
    host: Host, config: Path, name: str, entry: Mapping[str, Any], *, force: bool
) -> None:
    with _held(config) as (handle, status):
        text = _read(config, handle)
        # A byte-order mark (Notepad writes one) is no JSON: kept as found.
        mark = "\ufeff" if text.startswith("\ufeff") else ""
        document = _parse(config, text.removeprefix(mark), host)
        servers = cast("dict[str, Any]", document.setdefault(host.servers_key, {}))
        if name in servers and not force:
            raise InstallError(
                f"{config} already has a server named {name!r} "
                "(--force replaces it, --name NAME adds another)"
            )
        servers[name] = dict(entry)
        _write(config, mark + _dump(config, document), status)


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # a FIFO opens at once, to be refused
_OPEN = os.O_RDONLY | _NOFOLLOW | _NONBLOCK | getattr(os, "O_CLOEXEC", 0)
_CREATE = _OPEN | os.O_CREAT | os.O_EXCL
_ATTEMPTS = 100  # other installers replacing the file before it is locked


@contextlib.contextmanager
def _held(config: Path) -> Generator[tuple[int, os.stat_result]]:
    """``config`` open and locked, and still the file at that path: a
    descriptor to read it and its status. A file another installer renamed
    over it while this one waited for the lock is opened again. A file
    created here and then not written is removed."""
    for _ in range(_ATTEMPTS):
        _refuse_unusual(config)
        opened = _open(config)
        if opened is None:
            continue  # created by another installer just now
        handle, created = opened
        try:
            status = os.fstat(handle)
            _refuse_unusual(config, status.st_mode)
            _lock(config, handle)
            if not _names(config, status):
                continue
            try:
                yield handle, status
            except BaseException:
                if created and _names(config, status):
                    config.unlink(missing_ok=True)  # still the empty file
                raise
            return
        finally:
            os.close(handle)
    raise InstallError(f"{config} kept being replaced; not changing it")


def _refuse_unusual(config: Path, mode: int | None = None) -> None:
    """Refuse, before reading it, what is not a regular file at ``config``."""
    if mode is None:
        try:
            mode = config.lstat().st_mode
        except FileNotFoundError:
            return
        except OSError as exc:
            raise InstallError(f"cannot read {config}: {exc}") from None
    if stat.S_ISREG(mode):
        return
    if stat.S_ISLNK(mode):
        raise InstallError(
            f"{config} is a symbolic link: pass the file it points to with --config"
        )
    if stat.S_ISDIR(mode):
        raise InstallError(f"{config} is a folder; not changing it")
    raise InstallError(f"{config} is not a regular file; not changing it")


def _open(config: Path) -> tuple[int, bool] | None:
    """A descriptor for ``config`` and whether it was created here (empty,
    ``0600``); None when another process created it first."""
    try:
        return os.open(config, _OPEN), False
    except FileNotFoundError:
        pass
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # a link planted since the check
            _refuse_unusual(config, stat.S_IFLNK)
        raise InstallError(f"cannot read {config}: {exc}") from None
    try:
        make_folders(config.parent)
        handle = os.open(config, _CREATE, 0o600)
    except FileExistsError:
        return None
    except OSError as exc:
        raise InstallError(f"cannot write {config}: {exc}") from None
    return handle, True


def _owner_to_act_as(config: Path) -> int | None:
    """As root: the user to act as, the one owner other than root of the
    folders ``config`` is reached through (a link and what it leads to
    alike); None to act as root, where only root may change them.

    Raises:
        InstallError: they belong to several users; or root owns them all,
            and one is a folder other users may change anyway (group- or
            world-writable), or a folder to make is in a world-writable one:
            a user could move a link in while the install waits for the
            lock, and root would follow it.
    """
    if sys.platform == "win32" or os.geteuid() != 0:
        return None
    owners: set[int] = set()
    shared: Path | None = None
    for folder, status, missing_below in _folders_on_the_way(config):
        if status.st_uid != 0:
            owners.add(status.st_uid)
        elif _others_may_change(status) or (missing_below and status.st_mode & 0o002):
            shared = shared or folder
    if len(owners) > 1:
        raise InstallError(
            f"the folders {config} is reached through belong to several users; "
            f"run install as the user whose host reads it"
        )
    if owners:
        return owners.pop()
    if shared is not None:
        raise InstallError(
            f"as root, not writing below {shared}, which other users may change: "
            f"run install as the user whose host reads {config}, or give a "
            f"--config in folders only root may change"
        )
    return None


def _folders_on_the_way(config: Path) -> list[tuple[Path, os.stat_result, bool]]:
    """Each existing folder on ``config``'s path as written (a link as
    itself) and as resolved (where its links lead), with its status, and
    whether a folder below it is still to be made."""
    resolved = Path(os.path.realpath(config.parent)) / config.name
    found: list[tuple[Path, os.stat_result, bool]] = []
    for path in (config.absolute(), resolved):
        chain = [*reversed(path.parents)]
        for number, folder in enumerate(chain):
            try:
                status = folder.lstat()
            except FileNotFoundError:
                break
            except OSError as exc:
                raise InstallError(f"cannot read {folder}: {exc}") from None
            below = chain[number + 1] if number + 1 < len(chain) else None
            missing = below is not None and not os.path.lexists(below)
            found.append((folder, status, missing))
    return found


def _others_may_change(status: os.stat_result) -> bool:
    """Whether users other than the owner (root) may rename what is in this
    folder: group-writable for a group not root's, or world-writable without
    the sticky bit (``/tmp`` has it: only an entry's owner renames it)."""
    if not stat.S_ISDIR(status.st_mode):
        return False
    mode = status.st_mode
    group = bool(mode & 0o020) and status.st_gid != 0
    world = bool(mode & 0o002) and not mode & stat.S_ISVTX
    return group or world


def _as_owner(uid: int, work: Callable[[], None]) -> None:
    """Do ``work`` in a child process with ``uid``'s identity (its user's
    groups too), as root: see the module doc. Its :class:`InstallError`
    is raised here, with its words."""
    sys.stdout.flush()
    sys.stderr.flush()
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child's own exit is its report
        os.close(read_end)
        code, said = 0, b""
        try:
            _become(uid)
            work()
        except InstallError as exc:
            code, said = 1, str(exc).encode()
        except BaseException as exc:
            code, said = 1, f"cannot install as uid {uid}: {exc}".encode()
        os.write(write_end, said)
        os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as report:
        said = report.read()
    _, status = os.waitpid(child, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise InstallError(said.decode(errors="replace") or "the install failed")


NO_GROUP: Final = 65534
"""The group of a user the system has no entry for (``nogroup``): never
the folder's, which may be root's (what ``chown UID`` leaves)."""


def _become(uid: int) -> None:
    """Take ``uid``'s identity for good: its groups, then it."""
    import pwd

    try:
        user = pwd.getpwuid(uid)
    except KeyError:  # a uid with no name: no groups of its own
        os.setgroups([])
        gid = NO_GROUP
    else:
        os.initgroups(user.pw_name, user.pw_gid)
        gid = user.pw_gid
    os.setgid(gid)
    os.setuid(uid)


def _lock(config: Path, handle: int) -> None:
    """Wait for the exclusive lock on the open file, at most
    :data:`LOCK_WAIT` seconds (anyone who can read the file can lock it);
    without, where the file system has no such locks
    (:func:`bridge.user_files.lock_within`)."""
    try:
        locked = lock_within(handle, LOCK_WAIT)
    except OSError as exc:
        raise InstallError(f"cannot lock {config}: {exc}") from None
    if not locked:
        raise InstallError(
            f"another process holds a lock on {config} (waited "
            f"{LOCK_WAIT:g} s); not changing it: try again when it is done"
        )


def _names(config: Path, status: os.stat_result) -> bool:
    """Whether ``config`` is still the file ``status`` describes."""
    try:
        there = config.lstat()
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise InstallError(f"cannot read {config}: {exc}") from None
    return (there.st_dev, there.st_ino) == (status.st_dev, status.st_ino)


def _read(config: Path, handle: int) -> str:
    chunks: list[bytes] = []
    read = 0
    try:
        while chunk := os.read(handle, 1 << 16):
            read += len(chunk)
            if read > MAX_CONFIG_BYTES:
                raise InstallError(
                    f"{config} is larger than {MAX_CONFIG_BYTES // (1 << 20)} MiB: "
                    "not a host's configuration; not changing it"
                )
            chunks.append(chunk)
        return b"".join(chunks).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InstallError(f"cannot read {config}: {exc}") from None


class _NotWritableBack(ValueError):
    """JSON's parser takes it, but writing it back would change it."""


@attrs.frozen
class _Number:
    """A number of the file, as the file spells it: written back verbatim
    (read as a float, ``0.123456789012345678901234567890``, ``1e-400``,
    ``1E5``, ``1.50`` or ``-0`` would come back as another spelling or
    another number)."""

    text: str


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for key, value in pairs:
        if key in fields:
            raise _NotWritableBack(f"the key {key!r} appears twice in one object")
        fields[key] = value
    return fields


def _parse(config: Path, text: str, host: Host) -> dict[str, Any]:
    if not text.strip():
        return {}
    try:
        document: Any = json.loads(
            text,
            parse_constant=no_constant,  # (NotAJsonNumber: a ValueError)
            parse_float=_Number,
            parse_int=_Number,
            object_pairs_hook=_unique,
        )
    except json.JSONDecodeError as exc:
        # VS Code and Cursor read comments and trailing commas; writing the
        # file back would drop them, so it is left for the user to edit.
        raise InstallError(
            f"{config} is not plain JSON ({exc}; comments and trailing commas "
            f"cannot be kept); not changing it: add the entry --dry-run prints "
            f"by hand"
        ) from None
    except (ValueError, RecursionError) as exc:
        # NaN, Infinity (not JSON), a key twice, or nesting deeper than the
        # parser goes: written back, it would not be what the file said (or
        # not JSON at all).
        raise _not_plain(config, exc) from None
    if not isinstance(document, dict):
        raise InstallError(f"{config} is not a JSON object; not changing it")
    fields = cast("dict[str, Any]", document)
    if host.servers_key in fields:
        servers = fields[host.servers_key]
        if servers is None:
            # What the host makes of null is its own; the entry is not
            # added over it: the user says which servers there should be.
            raise InstallError(
                f"{config}: {host.servers_key!r} is null, not an object of "
                "servers; not changing it"
            )
        if not isinstance(servers, dict):
            raise InstallError(
                f"{config}: {host.servers_key!r} is not an object; not changing it"
            )
    return fields


_SURROGATE = re.compile("[\ud800-\udfff]")


def _dump(config: Path, document: dict[str, Any]) -> str:
    """``document`` as ``json.dumps(indent=2, ensure_ascii=False)`` writes
    it, but each number as the file spelled it (:class:`_Number`), and a
    lone surrogate (only a ``\\uXXXX`` escape of the file can hold one: the
    file is read as UTF-8) as that escape again, not as bytes UTF-8 has not."""
    out: list[str] = []
    try:
        _encode(document, "", out)
    except RecursionError as exc:
        raise _not_plain(config, exc) from None
    return "".join(out) + "\n"


def _encode(value: Any, indent: str, out: list[str]) -> None:
    if isinstance(value, _Number):
        out.append(value.text)
    elif isinstance(value, str):
        out.append(_string(value))
    elif isinstance(value, dict) and value:
        inner = indent + "  "
        out.append("{")
        for index, (key, item) in enumerate(cast("dict[str, Any]", value).items()):
            out.append(f"{',' if index else ''}\n{inner}{_string(key)}: ")
            _encode(item, inner, out)
        out.append(f"\n{indent}}}")
    elif isinstance(value, list) and value:
        inner = indent + "  "
        out.append("[")
        for index, item in enumerate(cast("list[Any]", value)):
            out.append(f"{',' if index else ''}\n{inner}")
            _encode(item, inner, out)
        out.append(f"\n{indent}]")
    else:  # true, false, null, {}, []
        out.append(json.dumps(value))


def _string(text: str) -> str:
    encoded = json.dumps(text, ensure_ascii=False)
    return _SURROGATE.sub(lambda found: f"\\u{ord(found[0]):04x}", encoded)


def check_entry(name: str, entry: Mapping[str, Any]) -> None:
    """Refuse, with :class:`InstallError`, an entry a host could not use: a
    name or path that UTF-8 cannot hold (a file name of bytes that are not
    UTF-8, read with ``surrogateescape``), which a host could not find, and
    a name with control characters (a tab too), line breaks or invisible
    characters (zero-width, bidi), which a host would show as they are."""
    if printable_line(name) != name or has_unseen(name):
        # A host lists its servers by name: a terminal's control sequence
        # or a bidi override there would be drawn, or obeyed, as it is.
        raise InstallError(
            f"the server name {shown(name)} has control characters, line "
            "breaks or invisible characters: give --name NAME"
        )
    for text in (name, *_strings(entry)):
        if _SURROGATE.search(text):
            raise InstallError(
                f"{shown(text)} is not UTF-8 text: a host's configuration "
                "cannot name it"
            )


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        items = cast("Mapping[str, Any]", value).values()
        return [text for item in items for text in _strings(item)]
    if isinstance(value, list):
        return [text for item in cast("list[Any]", value) for text in _strings(item)]
    return []


def _not_plain(config: Path, exc: ValueError | RecursionError) -> InstallError:
    reason = "nested too deep" if isinstance(exc, RecursionError) else str(exc)
    return InstallError(
        f"{config} is not plain JSON ({reason}); not changing it: add the entry "
        f"--dry-run prints by hand"
    )


def _write(config: Path, text: str, status: os.stat_result) -> None:
    try:
        write_whole(config, text, like=status)
    except OSError as exc:
        raise InstallError(f"cannot write {config}: {exc}") from None

"""``yieldmcp install claude-desktop|cursor|vscode FILE``: add a server to a
host's MCP configuration.

The entry runs this installation's ``yieldmcp`` over stdio (the console
script beside this interpreter, else ``python -m bridge.cli``) with
``serve FILE`` (FILE's absolute path), so the host needs no PATH and no
virtualenv of its own. It is merged into the host's JSON file: every other
key and server is kept as it was; a server of the same name is refused
unless ``force``; a file that is not JSON (or not the shape the host reads)
is refused, never rewritten. The file is written whole to a temporary file
beside it and moved over it (``os.replace``), so the host never reads half of
it; a symbolic link there is refused rather than followed or replaced.

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
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import attrs

from .whole_file import write_whole

__all__ = [
    "HOSTS",
    "Host",
    "InstallError",
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

_GENERIC_STEMS = frozenset({"tools", "server", "main", "app", "__main__"})


def default_config(
    host: str,
    *,
    platform: str = sys.platform,
    home: Path | None = None,
    environ: Mapping[str, str] = os.environ,
) -> Path:
    """Where ``host`` reads its MCP configuration on this machine (see the
    module docstring for the sources)."""
    base = Path.home() if home is None else home
    if host == "cursor":
        return base / ".cursor" / "mcp.json"
    if platform == "darwin":
        support = base / "Library" / "Application Support"
    elif platform == "win32":
        support = Path(environ.get("APPDATA") or base / "AppData" / "Roaming")
    else:
        support = Path(environ.get("XDG_CONFIG_HOME") or base / ".config")
    if host == "vscode":
        return support / "Code" / "User" / "mcp.json"
    return support / "Claude" / "claude_desktop_config.json"


def default_name(target: str) -> str:
    """The server's name: FILE's stem, or its folder's name when the stem
    says nothing (``tools.py``, ``server.py``); a module's last part."""
    path = Path(target)
    if path.suffix == ".py" or path.exists():
        stem = path.stem
        if stem in _GENERIC_STEMS:
            return path.resolve().parent.name or stem
        return stem
    return target.rsplit(".", 1)[-1]


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

    Raises:
        InstallError: ``config`` is a symbolic link, is not JSON or not an
            object of servers, already has ``name`` (without ``force``), or
            cannot be written.
    """
    document = _read(config, host)
    servers = cast("dict[str, Any]", document.setdefault(host.servers_key, {}))
    if name in servers and not force:
        raise InstallError(
            f"{config} already has a server named {name!r} "
            "(--force replaces it, --name NAME adds another)"
        )
    servers[name] = dict(entry)
    _write(config, json.dumps(document, indent=2, ensure_ascii=False) + "\n")


def _read(config: Path, host: Host) -> dict[str, Any]:
    if config.is_symlink():
        raise InstallError(
            f"{config} is a symbolic link: pass the file it points to with --config"
        )
    try:
        text = config.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise InstallError(f"cannot read {config}: {exc}") from None
    if not text.strip():
        return {}
    try:
        document: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        # VS Code and Cursor read comments and trailing commas; writing the
        # file back would drop them, so it is left for the user to edit.
        raise InstallError(
            f"{config} is not plain JSON ({exc}; comments and trailing commas "
            f"cannot be kept); not changing it: add the entry --dry-run prints "
            f"by hand"
        ) from None
    if not isinstance(document, dict):
        raise InstallError(f"{config} is not a JSON object; not changing it")
    fields = cast("dict[str, Any]", document)
    servers = fields.get(host.servers_key)
    if servers is not None and not isinstance(servers, dict):
        raise InstallError(
            f"{config}: {host.servers_key!r} is not an object; not changing it"
        )
    return fields


def _write(config: Path, text: str) -> None:
    try:
        write_whole(config, text)
    except OSError as exc:
        raise InstallError(f"cannot write {config}: {exc}") from None

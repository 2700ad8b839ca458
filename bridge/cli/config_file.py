"""``serve``'s options from a file: ``[tool.yieldmcp]`` in ``pyproject.toml``,
or the top level of ``yieldmcp.toml``.

Every ``serve`` flag is a key, by its long name, with dashes or underscores
(``max-calls = 64``, ``max_calls = 64``, ``http = "127.0.0.1:8000"``,
``allow-origin = ["https://a.example"]``, ``durable = true``); a flag given on
the command line overrides the file. Keys are read from ``serve``'s own
parser (:mod:`.argtree`), so a flag added to ``serve`` is a key with no code
here, and a value goes through the same conversion and checks as the flag's.

Where the file is found: from the current directory upward, the first
directory with a ``yieldmcp.toml`` or a ``pyproject.toml`` holding
``[tool.yieldmcp]``; when there is none, the same from the served file's own
directory upward (a host such as Claude Desktop starts ``serve`` in a
directory of its own choosing). Both files in one directory is a mistake.

A file found there must belong to the user running ``serve`` (or to root),
and must not be writable by everyone: the search climbs into shared
directories (``/tmp``, a parent of many projects), where another user could
plant one and choose how this server listens, what it stores where, and
whether clients see its exceptions. Such a file is refused, as ``git``
refuses a repository another user owns.

An unknown key, a value of the wrong type, or a file that is not TOML is one
line naming the file (and line) and the key: :class:`ConfigError`, exit
status 2. ``serve --print-config`` prints every setting in force and where
it came from (a flag, ``FILE:LINE``, or the default).
"""

from __future__ import annotations

import argparse
import difflib
import json
import math
import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import attrs

from bridge.trusted_file import untrusted

from .argtree import exclusive_groups, options

__all__ = [
    "ConfigError",
    "Found",
    "add_print_config_flag",
    "configure",
    "explicit_dests",
    "find",
    "settings_lines",
]

PYPROJECT = "pyproject.toml"
OWN_FILE = "yieldmcp.toml"
TABLE = "tool.yieldmcp"

_NOT_KEYS = frozenset({"help", "print-config"})
"""Flags that are not settings: they ask for something and exit."""


class ConfigError(Exception):
    """The configuration file cannot be used (one line; exit status 2)."""


@attrs.frozen
class Found:
    """A configuration: the file, its settings by key, each key's line."""

    path: Path
    settings: Mapping[str, Any]
    lines: Mapping[str, int]

    def where(self, key: str) -> str:
        line = self.lines.get(key)
        return f"{self.path}:{line}" if line else str(self.path)


def add_print_config_flag(serve: argparse.ArgumentParser) -> None:
    serve.add_argument(
        "--print-config",
        action="store_true",
        help=(
            "print every setting in force and where it came from (a flag, "
            f"{PYPROJECT} [{TABLE}] or {OWN_FILE} with its line, or the default), "
            "then exit"
        ),
    )


def find(start: Path, served: str | None = None) -> Found | None:
    """The configuration for serving ``served`` from ``start``, if any.

    Raises:
        ConfigError: a file that is not TOML, or both files in one directory.
    """
    bases = [start.resolve()]
    if served is not None and Path(served).is_file():
        bases.append(Path(served).resolve().parent)
    for base in bases:
        for folder in (base, *base.parents):
            found = _in(folder)
            if found is not None:
                return found
    return None


def _in(folder: Path) -> Found | None:
    own, project = folder / OWN_FILE, folder / PYPROJECT
    candidates: list[Found] = []
    if own.is_file():
        candidates.append(_read(own, table=None))
    if project.is_file():
        from_project = _read(project, table=TABLE)
        if from_project is not None:
            candidates.append(from_project)
    if len(candidates) > 1:
        raise ConfigError(
            f"both {own} and [{TABLE}] in {project} configure yieldmcp: keep one"
        )
    return candidates[0] if candidates else None


def _read(path: Path, *, table: str | None) -> Any:
    try:
        with path.open("rb") as file:
            owned = os.fstat(file.fileno())  # the file read, not one put after
            text = file.read().decode("utf-8")
        document = tomllib.loads(text)
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{path} is not valid TOML: nested too deep") from None
    settings: Any = document
    if table is not None:
        for part in table.split("."):
            settings = (
                cast("dict[str, Any]", settings).get(part)
                if isinstance(settings, dict)
                else None
            )
        if settings is None:
            return None
        if not isinstance(settings, dict):
            raise ConfigError(f"{path}: [{table}] is not a table")
    _check_trusted(path, owned)  # (a pyproject.toml not configuring us: any)
    fields = cast("dict[str, Any]", settings)
    return Found(path, fields, _lines(text, table, fields))


_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?")


def _check_trusted(path: Path, found: os.stat_result) -> None:
    """Refuse a file another user could have written (see the module's doc)."""
    bad = untrusted(path, found)
    if bad is not None:
        raise ConfigError(
            f"{path} {bad.why}, who would choose this server's settings: "
            f"not read ({bad.fix})"
        )


def _lines(text: str, table: str | None, keys: Mapping[str, Any]) -> dict[str, int]:
    """The line of each key in its table (for ``FILE:LINE``)."""
    found: dict[str, int] = {}
    inside = table is None  # yieldmcp.toml: keys at the top, before any table
    for number, line in enumerate(text.splitlines(), 1):
        header = _HEADER.match(line)
        if header:
            name = re.sub(r"\s*\.\s*", ".", header.group(1)).replace('"', "")
            inside = name == table
            continue
        if inside:
            key = re.match(r"""^\s*["']?([A-Za-z0-9_-]+)["']?\s*=""", line)
            if key and key.group(1) in keys and key.group(1) not in found:
                found[key.group(1)] = number
    return found


def _by_name(serve: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """``serve``'s settings by their long flag name, without the dashes."""
    named: dict[str, argparse.Action] = {}
    for action in options(serve):
        for flag in action.option_strings:
            if flag.startswith("--") and flag[2:] not in _NOT_KEYS:
                named[flag[2:]] = action
    return named


def explicit_dests(
    parser: argparse.ArgumentParser,
    serve: argparse.ArgumentParser,
    argv: Sequence[str],
) -> set[str]:
    """The dests of ``serve`` flags given in ``argv``: ``argv`` parsed again
    by ``parser`` (a fresh one, whose ``serve`` is ``serve``) with no
    defaults, so only what was given is set."""
    for action in options(serve):
        action.default = argparse.SUPPRESS
    given = vars(parser.parse_args(list(argv)))
    return {action.dest for action in options(serve) if action.dest in given}


def configure(
    args: argparse.Namespace,
    serve: argparse.ArgumentParser,
    found: Found,
    explicit: set[str],
) -> dict[str, str]:
    """Set on ``args`` what ``found`` holds and no flag gave; where each
    setting came from, by dest (``flag``, ``FILE:LINE``).

    Raises:
        ConfigError: an unknown key, a value the flag would refuse, or two
            settings of one exclusive group.
    """
    named = _by_name(serve)
    sources = dict.fromkeys(explicit, "flag")
    # A flag overrides the file's setting of its dest, and of the other
    # flags of its exclusive group (--store on the command line beats the
    # file's durable = true).
    overridden = set(explicit)
    for group in exclusive_groups(serve):
        dests = {action.dest for action in group}
        if dests & explicit:
            overridden |= dests
    chosen: dict[str, tuple[str, argparse.Action]] = {}
    for key, value in found.settings.items():
        action = named.get(key.replace("_", "-"))
        if action is None:
            flag = key.replace("_", "-")
            close = difflib.get_close_matches(flag, list(named), n=1)
            hint = f"; did you mean {close[0]}?" if close else ""
            raise ConfigError(
                f"{found.where(key)}: unknown key {key!r} (serve has no --{flag}{hint})"
            )
        if action.dest in chosen:
            raise ConfigError(f"{found.where(key)}: {key!r} is set twice")
        chosen[action.dest] = (key, action)
        if action.dest in overridden:
            continue  # a flag wins
        converted = _converted(action, value, found.where(key), key)
        if converted is not _UNSET:
            setattr(args, action.dest, converted)
            sources[action.dest] = found.where(key)
    _check_exclusive(serve, chosen, explicit, found)
    return sources


def _check_exclusive(
    serve: argparse.ArgumentParser,
    chosen: Mapping[str, tuple[str, argparse.Action]],
    explicit: set[str],
    found: Found,
) -> None:
    for group in exclusive_groups(serve):
        dests = [a.dest for a in group]
        if any(d in explicit for d in dests):
            # A flag chose: the file's other choice of the group gives way.
            continue
        keys = [chosen[d][0] for d in dests if d in chosen]
        if len(keys) > 1:
            raise ConfigError(
                f"{found.path}: {' and '.join(repr(k) for k in keys)} "
                "cannot both be set"
            )


_UNSET = object()


def _converted(action: argparse.Action, value: Any, where: str, key: str) -> Any:
    """``value`` as the flag would have made it, else :class:`ConfigError`."""

    def wrong(expected: str) -> ConfigError:
        shown = json.dumps(value, default=str)
        return ConfigError(f"{where}: {key!r} must be {expected}, not {shown}")

    if action.nargs == 0:  # --debug, --durable: a switch (or -v, a count)
        if isinstance(action, argparse._CountAction):  # pyright: ignore[reportPrivateUsage]
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise wrong("a count (0, 1, 2)")
            return value
        if not isinstance(value, bool):
            raise wrong("true or false")
        return action.const if value else _UNSET
    if isinstance(action, argparse._AppendAction):  # pyright: ignore[reportPrivateUsage]
        items = cast("list[Any]", value) if isinstance(value, list) else [value]
        return [_one(action, item, wrong) for item in items]
    return _one(action, value, wrong)


def _one(action: argparse.Action, value: Any, wrong: Any) -> Any:
    """One value through the flag's type and choices."""
    kind: Any = action.type
    base: Any = getattr(kind, "kind", kind)  # a limit's number (limits.Positive)
    expected = getattr(kind, "__name__", "a value")
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise wrong(_described(expected))
    if isinstance(value, float) and base is int:
        raise wrong("an integer")
    try:
        converted: Any = str(value) if kind is None else kind(str(value))
    except (argparse.ArgumentTypeError, ValueError, TypeError) as exc:
        if isinstance(exc, argparse.ArgumentTypeError) and base is not kind:
            at_most: float = getattr(kind, "at_most", math.inf)
            bound = "" if at_most == math.inf else f" and at most {at_most:.0f}"
            raise wrong(f"{_described(expected)} above 0{bound}") from None
        if base in (int, float):
            raise wrong(_described(expected)) from None
        raise wrong(f"{_described(expected)} ({exc})") from None
    if action.choices is not None and converted not in action.choices:
        raise wrong("one of " + ", ".join(map(str, action.choices)))
    return converted


def _described(type_name: str) -> str:
    return {"int": "an integer", "float": "a number", "str": "a string"}.get(
        type_name, "a string or a number"
    )


def settings_lines(
    args: argparse.Namespace,
    serve: argparse.ArgumentParser,
    sources: Mapping[str, str],
    found: Found | None,
) -> list[str]:
    """``serve --print-config``: each setting, its value and where it came
    from, as TOML a user could paste into ``[tool.yieldmcp]``."""
    lines = [
        f"# configuration file: {found.path if found else 'none found'}",
        f"# served: {getattr(args, 'target', '')}",
    ]
    rows: list[tuple[str, str]] = []
    for name, action in _by_name(serve).items():
        value: Any = getattr(args, action.dest, None)
        source = sources.get(action.dest, "default")
        if value is None or value == []:
            # Unset: the served code's own setting, else the built-in default.
            rows.append((f"# {name} (not set)", source))
        else:
            rows.append((f"{name} = {_toml(value)}", source))
    width = max(len(row) for row, _ in rows)
    lines += [f"{row:<{width}}  # {source}" for row, source in rows]
    return lines


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):  # --http's (host, port)
        host, port = cast("tuple[str, int]", value)
        return json.dumps(f"[{host}]:{port}" if ":" in host else f"{host}:{port}")
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in cast("list[Any]", value)) + "]"
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(str(value), ensure_ascii=False)

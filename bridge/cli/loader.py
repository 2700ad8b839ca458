"""Find what to serve in a Python file or module.

``load_server("examples/ttt.py")`` imports the file (or a dotted module name)
and returns its ``server`` if it defines a :class:`~bridge.server.Server` by that
name, else a new server offering every tool, resource, resource template and
prompt defined at the module's top level, in definition order.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import sysconfig
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any

from bridge.server.catalog import Prompt, Resource, ResourceTemplate
from bridge.server.server import Server
from runtime import Tool
from runtime.errors import InvalidTool

__all__ = ["LoadError", "load_module", "load_server", "served_place", "server_of"]

_OFFERED = (Tool, Resource, ResourceTemplate, Prompt)


class LoadError(Exception):
    """The file or module could not be loaded, or offers nothing to serve."""


def load_module(target: str) -> ModuleType:
    """Import ``target``: a path to a ``.py`` file, or a dotted module name."""
    path = Path(target)
    if path.suffix == ".py" or path.exists():
        if not path.is_file():
            raise LoadError(f"no such file: {target}")
        name = f"yieldmcp_served_{path.stem}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise LoadError(f"cannot import {target}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        sys.path.insert(0, str(path.resolve().parent))
        try:
            spec.loader.exec_module(module)
        except BaseException as exc:  # a script's sys.exit, GeneratorExit too
            del sys.modules[name]
            if isinstance(exc, KeyboardInterrupt):
                raise  # the user's Ctrl-C: it ends the command
            raise LoadError(_failed(target, exc)) from exc
        return module
    try:
        return importlib.import_module(target)
    except ModuleNotFoundError as exc:
        if exc.name is not None and target.startswith(exc.name):
            raise LoadError(f"no file or module named {target!r} ({exc})") from None
        raise LoadError(_failed(target, exc)) from exc
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise LoadError(_failed(target, exc)) from exc


def _failed(target: str, exc: BaseException) -> str:
    """One line: where importing ``target`` failed, and why.

    The place is the last line of the served code the error passed through
    (the ``@tool`` line of a bad definition, say), not the library's insides.
    """
    here = served_place(exc)
    where = f" ({Path(here[0]).name}, line {here[1]})" if here else ""
    if isinstance(exc, SystemExit):
        return f"cannot load {target}{where}: {exits_at_import(exc)}"
    detail = quoted(exc, as_text=True)
    why = f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
    return f"cannot load {target}{where}: {why}"


def exits_at_import(exc: SystemExit) -> str:
    """Why a file that ends the process when imported cannot be served.

    A script's own main code run at import (argparse's ``parse_args``, say)
    raises SystemExit, which is no Exception: it ended ``serve`` silently
    and ``dev`` with a traceback, the tools gone.
    """
    return (
        f"it calls sys.exit({quoted(exc.code)}) when imported (put a script's "
        f'own code under `if __name__ == "__main__":`)'
    )


MOST_QUOTED = 200  # characters of a value from the served code a line quotes


def quoted(value: object, *, as_text: bool = False) -> str:
    """``value`` as one line quotes it (``repr``, or ``str`` with
    ``as_text``), its first line, cut: the served code chose it (a 200 KB
    exit message, a ``__repr__`` that raises)."""
    try:
        text = str(value) if as_text else repr(value)
    except Exception as exc:  # its own __repr__ or __str__ failed: said so
        return f"<{type(value).__name__}, whose {type(exc).__name__} hid it>"
    lines = text.strip().splitlines()
    first = lines[0] if lines else ""
    if len(first) > MOST_QUOTED:
        return f"{first[:MOST_QUOTED]}... ({len(first):,} characters)"
    return first


def served_place(exc: BaseException) -> tuple[str, int] | None:
    """The file and line of the last served code ``exc`` passed through,
    or None when it never left yieldmcp and the libraries."""
    frames = [
        f
        for f in traceback.extract_tb(exc.__traceback__)
        # (not "<frozen ...>" nor "<attrs generated ...>": no file of theirs)
        if not f.filename.startswith("<") and not _ours(f.filename)
    ]
    if not frames:
        return None
    return frames[-1].filename, frames[-1].lineno or 0


def load_server(target: str, **options: Any) -> Server:
    """The server ``target`` defines, or one offering everything it defines."""
    return server_of(load_module(target), target, **options)


def server_of(module: ModuleType, target: str, **options: Any) -> Server:
    """The ``server`` ``module`` defines, or one offering everything it defines."""
    server = getattr(module, "server", None)
    if isinstance(server, Server):
        return server
    items: list[Any] = [v for v in vars(module).values() if isinstance(v, _OFFERED)]
    if not items:
        raise LoadError(
            f"{target} defines no tools, resources or prompts (and no `server`)"
        )
    try:
        return Server(items, name=getattr(module, "SERVER_NAME", "yieldmcp"), **options)
    except InvalidTool as exc:  # two tools of one name, say
        raise LoadError(f"cannot load {target}: {exc}") from None


_PACKAGES = Path(__file__).resolve().parents[2]  # the folder holding bridge/
_STDLIB = Path(sysconfig.get_paths()["stdlib"]).resolve()


def _ours(filename: str) -> bool:
    """Whether ``filename`` is yieldmcp's own code, an installed library or
    Python's standard library (argparse's ``sys.exit``: the served line is
    the one that called it)."""
    resolved = Path(filename).resolve()
    inside = any(
        resolved.is_relative_to(_PACKAGES / package)
        for package in ("runtime", "bridge", "encoders", "decoders")
    )
    return (
        inside or "site-packages" in resolved.parts or resolved.is_relative_to(_STDLIB)
    )

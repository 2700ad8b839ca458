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
from pathlib import Path
from types import ModuleType
from typing import Any

from runtime import Tool

from .catalog import Prompt, Resource, ResourceTemplate
from .server import Server

__all__ = ["LoadError", "load_module", "load_server"]

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
        spec.loader.exec_module(module)
        return module
    try:
        return importlib.import_module(target)
    except ModuleNotFoundError as exc:
        raise LoadError(f"no file or module named {target!r} ({exc})") from None


def load_server(target: str, **options: Any) -> Server:
    """The server ``target`` defines, or one offering everything it defines."""
    module = load_module(target)
    server = getattr(module, "server", None)
    if isinstance(server, Server):
        return server
    items: list[Any] = [v for v in vars(module).values() if isinstance(v, _OFFERED)]
    if not items:
        raise LoadError(
            f"{target} defines no tools, resources or prompts (and no `server`)"
        )
    return Server(items, name=getattr(module, "SERVER_NAME", "yieldmcp"), **options)

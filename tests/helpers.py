"""Helpers shared by tests."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

from hypothesis import settings

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
STARTUP = 60.0
"""Seconds a server process a test spawns may take to answer the handshake.

A cold Python process that imports the MCP models takes seconds on a calm
machine and several times that on CI's two cores with every test worker
busy; the client's default (10 s) is for users, not for a loaded test run.
Tests of the connect bound itself pass their own.
"""


def fewer_examples(share: float) -> settings:
    """The loaded Hypothesis profile with ``share`` of its ``max_examples``.

    For a property run once per parameter (each provider, each recording),
    whose examples together would cost minutes: it still sees
    ``share * max_examples`` examples per parameter, and a deeper profile
    (``HYPOTHESIS_PROFILE=soak``) still multiplies them as it does the rest.
    """
    return settings(max_examples=max(10, round(settings().max_examples * share)))


def load_example(name: str) -> ModuleType:
    """Import ``examples/<name>.py`` as module ``examples_<name>`` (cached)."""
    module_name = f"examples_{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, EXAMPLES / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def needs_root(what: str) -> None:
    """Skip, saying why, unless this runs as root (CI does): ``what`` is what
    only root can do here, e.g. "giving a file to another user"."""
    if os.geteuid() != 0:
        import pytest

        print(f"skipped: {what} needs root (CI runs as root)")
        pytest.skip(f"{what} needs root")

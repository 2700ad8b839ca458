"""The import graph: one-way layers, no cycles, one folder per concept.

``runtime`` imports nothing from ``bridge``, ``encoders`` or ``decoders``;
``encoders`` and ``decoders`` import nothing from ``bridge`` and nothing from
trio (they are pure). Inside ``bridge``, each subpackage has one role and the
rules below say what it may not import: the server side never imports the
client side and the reverse.

Every check parses the source with :mod:`ast`, so it sees every import: at
module level, inside functions, and under ``if TYPE_CHECKING:`` (a type-only
cycle is still two modules that cannot be understood one without the other).
Importing a submodule also runs its package's ``__init__``; those implied
edges are not counted, so a package may re-export its modules' names.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import ROOT

PACKAGES = ("runtime", "encoders", "decoders", "bridge")

FORBIDDEN = {
    "runtime": {"bridge", "encoders", "decoders"},
    "encoders": {"bridge", "trio"},
    "decoders": {"bridge", "trio"},
    "bridge": set[str](),
}

# What each part of ``bridge`` must not import (by module prefix).
_CLIENT_SIDE = ("bridge.client", "bridge.host", "bridge.cli")
_SERVER_SIDE = ("bridge.server", "bridge.transports.http", "bridge.cli")
_ANSWERERS = ("bridge.providers", "bridge.elicit")
BRIDGE_RULES: dict[str, tuple[str, ...]] = {
    "bridge.jsonrpc": (
        "bridge.server",
        "bridge.client",
        "bridge.host",
        "bridge.cli",
        "bridge.transports",
        *_ANSWERERS,
    ),
    "bridge.transports": ("bridge.server", *_CLIENT_SIDE, *_ANSWERERS),
    "bridge.server": (*_CLIENT_SIDE, "bridge.transports.http", *_ANSWERERS),
    "bridge.client": (*_SERVER_SIDE, "bridge.host"),
    "bridge.host": (*_SERVER_SIDE, "bridge.client", "bridge.jsonrpc"),
    "bridge.providers": (
        *_SERVER_SIDE,
        *_CLIENT_SIDE,
        "bridge.elicit",
        "bridge.jsonrpc",
        "bridge.transports",
    ),
    "bridge.telemetry": (
        *_SERVER_SIDE,
        *_CLIENT_SIDE,
        *_ANSWERERS,
        "bridge.transports",
    ),
    "bridge.stores": (
        *_SERVER_SIDE,
        *_CLIENT_SIDE,
        *_ANSWERERS,
        "bridge.jsonrpc",
        "bridge.transports",
        "bridge.telemetry",
    ),
    "bridge.elicit": (
        *_SERVER_SIDE,
        *_CLIENT_SIDE,
        "bridge.providers",
        "bridge.jsonrpc",
        "bridge.transports",
    ),
}
# The server's HTTP endpoint sits on the server (it is the server side).
EXCEPTIONS = {"bridge.transports.http": ("bridge.server",)}


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules(root: Path) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            found[_module_name(path, root)] = path
    return found


def _imported(path: Path, name: str, known: dict[str, Path]) -> Iterator[str]:
    """Every module of ours, or top-level package, that ``path`` imports."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield _resolve(alias.name, known)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package
                for _ in range(node.level - 1):
                    anchor = anchor.rpartition(".")[0]
                base = f"{anchor}.{base}" if base else anchor
            for alias in node.names:  # ``from pkg import submodule``
                if f"{base}.{alias.name}" in known:
                    yield f"{base}.{alias.name}"
                else:
                    yield _resolve(base, known)


def _resolve(module: str, known: dict[str, Path]) -> str:
    """Our module ``module`` names, or its top-level package if not ours."""
    candidate = module
    while candidate and candidate not in known:
        candidate = candidate.rpartition(".")[0]
    return candidate or module.split(".")[0]


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    known = _modules(root)
    return {
        name: set(_imported(path, name, known)) - {name} for name, path in known.items()
    }


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in graph:
                continue
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component: list[str] = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


GRAPH = import_graph()


@pytest.mark.parametrize("package", PACKAGES)
def test_package_imports_only_downward(package: str) -> None:
    offenders = {
        module: sorted(bad)
        for module, targets in GRAPH.items()
        if _within(module, package)
        and (bad := {t for t in targets if t.split(".")[0] in FORBIDDEN[package]})
    }
    assert offenders == {}


@pytest.mark.parametrize("part", sorted(BRIDGE_RULES))
def test_each_part_of_bridge_keeps_to_its_side(part: str) -> None:
    offenders: dict[str, list[str]] = {}
    for module, targets in GRAPH.items():
        if not _within(module, part):
            continue
        allowed = next((v for k, v in EXCEPTIONS.items() if _within(module, k)), ())
        bad = [
            target
            for target in sorted(targets)
            if any(_within(target, rule) for rule in BRIDGE_RULES[part])
            and not any(_within(target, ok) for ok in allowed)
            and not _within(target, part)
        ]
        if bad:
            offenders[module] = bad
    assert offenders == {}


def test_no_module_is_part_of_an_import_cycle() -> None:
    assert cycles(GRAPH) == []


def test_the_checker_sees_every_kind_of_import(tmp_path: Path) -> None:
    package = tmp_path / "bridge"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "a.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "import trio\n"
        "from . import b\n"
        "if TYPE_CHECKING:\n"
        "    from bridge.c import X\n"
    )
    (package / "sub" / "b.py").write_text("def f():\n    from .a import g\n")
    (package / "c.py").write_text("from .sub.b import f\n")
    graph = import_graph(tmp_path)
    assert graph["bridge.sub.a"] == {"typing", "trio", "bridge.sub.b", "bridge.c"}
    assert graph["bridge.sub.b"] == {"bridge.sub.a"}
    assert graph["bridge.c"] == {"bridge.sub.b"}
    assert cycles(graph) == [["bridge.c", "bridge.sub.a", "bridge.sub.b"]]


@pytest.mark.parametrize("package", PACKAGES)
def test_packages_resolve_inside_this_repository(package: str) -> None:
    # PyPI has unrelated distributions named runtime/encoders/decoders.
    module = __import__(package)
    assert Path(module.__file__).resolve().is_relative_to(ROOT)


def test_every_package_says_what_it_owns() -> None:
    undocumented = [
        name
        for name, path in _modules(ROOT).items()
        if path.name == "__init__.py"
        and not ast.get_docstring(ast.parse(path.read_text()))
    ]
    assert undocumented == []


def test_public_runtime_names_are_exported_once() -> None:
    import runtime
    import runtime.testing

    assert len(runtime.__all__) == len(set(runtime.__all__))
    for name in runtime.__all__:
        assert hasattr(runtime, name), name
    overlap = set(runtime.__all__) & set(runtime.testing.__all__)
    assert overlap == set()

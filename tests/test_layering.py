"""The import graph: one-way layers, no cycles, public faces, one folder per concept.

``runtime`` imports nothing from ``bridge``, ``encoders`` or ``decoders``;
``encoders`` and ``decoders`` import nothing from ``bridge`` and nothing from
trio (they are pure). Inside ``bridge``, each subpackage has one role and the
rules below say what it may not import: the server side never imports the
client side and the reverse.

No package imports another's private modules (a path segment starting with
``_``), and everything outside ``runtime`` reaches it through its two faces
(``runtime`` for tool authors, ``runtime.lowlevel`` for integrators) and its
public modules, never the inside of a concept folder. A module may be long
when it holds one concept: there is no line cap, and every folder's
``__init__`` says what it owns and what it does not.

Every check parses the source with :mod:`ast`, so it sees every import: at
module level, inside functions, and under ``if TYPE_CHECKING:`` (a type-only
cycle is still two modules that cannot be understood one without the other).
Importing a submodule also runs its package's ``__init__``; those implied
edges are not counted, so a package may re-export its modules' names.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import ROOT

PACKAGES = ("runtime", "encoders", "decoders", "bridge")
# Code outside the packages, held to the same face of ``runtime``.
OUTSIDE = ("tests", "examples", "benchmarks")

# What other packages may import from ``runtime``: its two faces and its
# public modules (and the public modules of the ``picture``/``testing`` folders).
RUNTIME_PUBLIC = frozenset(
    {"runtime", "runtime.lowlevel"}
    | {
        f"runtime.{name}"
        for name in (
            "errors",
            "messages",
            "principal",
            "codec",
            "requests",
            "replies",
            "results",
            "context",
            "effects",
            "tools",
            "picture",
            "testing",
        )
    }
)
RUNTIME_PUBLIC_FOLDERS = ("runtime.picture", "runtime.testing")
RUNTIME_AUTHOR_FACE_MAX = 30

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
    "bridge.durable": (
        *_SERVER_SIDE,
        *_CLIENT_SIDE,
        *_ANSWERERS,
        "bridge.jsonrpc",
        "bridge.transports",
        "bridge.telemetry",
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


def _modules(root: Path, packages: tuple[str, ...] = PACKAGES) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            if ".venv" in path.parts:
                continue
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


def outside_imports(root: Path = ROOT) -> dict[str, set[str]]:
    """What each module of tests, examples and benchmarks imports of ours."""
    known = _modules(root)
    return {
        name: set(_imported(path, name, known))
        for name, path in _modules(root, OUTSIDE).items()
    }


def _is_private(module: str) -> bool:
    return any(part.startswith("_") for part in module.split("."))


def private_imports(graph: dict[str, set[str]]) -> dict[str, list[str]]:
    """Imports of another package's private modules, by importing module."""
    found: dict[str, list[str]] = {}
    for module, targets in graph.items():
        package = module.split(".")[0]
        bad = sorted(
            target
            for target in targets
            if target.split(".")[0] in PACKAGES
            and target.split(".")[0] != package
            and _is_private(target)
        )
        if bad:
            found[module] = bad
    return found


def _public_runtime(module: str) -> bool:
    return module in RUNTIME_PUBLIC or (
        any(_within(module, folder) for folder in RUNTIME_PUBLIC_FOLDERS)
        and not _is_private(module)
    )


def runtime_inside_imports(graph: dict[str, set[str]]) -> dict[str, list[str]]:
    """Imports from outside ``runtime`` of anything but its public modules."""
    found: dict[str, list[str]] = {}
    for module, targets in graph.items():
        if _within(module, "runtime"):
            continue
        bad = sorted(
            target
            for target in targets
            if _within(target, "runtime") and not _public_runtime(target)
        )
        if bad:
            found[module] = bad
    return found


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


@functools.cache
def repository_graph() -> dict[str, set[str]]:
    """This repository's import graph, parsed once a worker (when first needed:
    parsing every module at collection cost each pytest worker a second)."""
    return import_graph()


@pytest.mark.parametrize("package", PACKAGES)
def test_package_imports_only_downward(package: str) -> None:
    offenders = {
        module: sorted(bad)
        for module, targets in repository_graph().items()
        if _within(module, package)
        and (bad := {t for t in targets if t.split(".")[0] in FORBIDDEN[package]})
    }
    assert offenders == {}


@pytest.mark.parametrize("part", sorted(BRIDGE_RULES))
def test_each_part_of_bridge_keeps_to_its_side(part: str) -> None:
    offenders: dict[str, list[str]] = {}
    for module, targets in repository_graph().items():
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
    assert cycles(repository_graph()) == []


def test_no_package_imports_another_s_private_modules() -> None:
    assert private_imports(repository_graph()) == {}


def test_other_packages_reach_runtime_only_through_its_public_modules() -> None:
    assert runtime_inside_imports(repository_graph()) == {}


def test_tests_examples_and_benchmarks_reach_runtime_through_its_public_modules() -> (
    None
):
    assert runtime_inside_imports(outside_imports()) == {}


def test_the_face_checks_see_private_and_inner_modules(tmp_path: Path) -> None:
    for folder in ("runtime", "runtime/call", "runtime/effects", "bridge", "tests"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "__init__.py").write_text("")
    for module in ("lowlevel", "errors", "_hidden", "call/stepper", "effects/base"):
        (tmp_path / "runtime" / f"{module}.py").write_text("")
    (tmp_path / "runtime" / "user.py").write_text("from ._hidden import x\n")
    (tmp_path / "bridge" / "a.py").write_text(
        "from runtime import tool\n"
        "from runtime.lowlevel import run\n"
        "from runtime.errors import PeerError\n"
        "from runtime.effects import Sample\n"
        "from runtime._hidden import x\n"
        "from runtime.call.stepper import Stepper\n"
        "from runtime.call import stepper\n"
        "import runtime.effects.base\n"
    )
    (tmp_path / "tests" / "t.py").write_text("from runtime.call import stepper\n")
    graph = import_graph(tmp_path)
    assert private_imports(graph) == {"bridge.a": ["runtime._hidden"]}
    assert runtime_inside_imports(graph) == {
        "bridge.a": [
            "runtime._hidden",
            "runtime.call.stepper",
            "runtime.effects.base",
        ]
    }
    assert runtime_inside_imports(outside_imports(tmp_path)) == {
        "tests.t": ["runtime.call.stepper"]
    }


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


def test_every_folder_is_a_package() -> None:
    # A folder of modules without an ``__init__`` would be a namespace
    # package: importable, but with no docstring to say what it owns.
    bare = sorted(
        str(path.parent.relative_to(ROOT))
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if not (path.parent / "__init__.py").exists()
    )
    assert bare == []


def test_every_runtime_folder_says_what_it_owns_and_what_it_does_not() -> None:
    vague = [
        name
        for name, path in _modules(ROOT, ("runtime",)).items()
        if path.name == "__init__.py"
        and name != "runtime"
        and " not " not in (ast.get_docstring(ast.parse(path.read_text())) or "")
    ]
    assert vague == []


def test_runtime_has_two_faces_that_share_no_name() -> None:
    import runtime
    import runtime.lowlevel
    import runtime.testing

    author = runtime.__all__
    integrator = runtime.lowlevel.__all__
    assert len(author) <= RUNTIME_AUTHOR_FACE_MAX
    for face, names in ((runtime, author), (runtime.lowlevel, integrator)):
        assert len(names) == len(set(names))
        for name in names:
            assert hasattr(face, name), (face.__name__, name)
    assert set(author) & set(integrator) == set()
    assert set(author) & set(runtime.testing.__all__) == set()

"""The import DAG: runtime <- encoders/decoders <- bridge, and sans-IO codecs.

``runtime`` imports nothing from ``bridge``, ``encoders`` or ``decoders``;
``encoders`` and ``decoders`` import nothing from ``bridge`` and nothing from
trio (they are pure). Checked by parsing every module's imports.
"""

from __future__ import annotations

import ast
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


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def _modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("package", PACKAGES)
def test_package_imports_only_downward(package: str) -> None:
    offenders = {
        str(path.relative_to(ROOT)): sorted(_imports(path) & FORBIDDEN[package])
        for path in _modules(package)
        if _imports(path) & FORBIDDEN[package]
    }
    assert offenders == {}


def test_the_checker_sees_a_forbidden_import(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import trio\nfrom bridge.x import y\nfrom . import z\n")
    assert _imports(bad) == {"trio", "bridge"}


@pytest.mark.parametrize("package", PACKAGES)
def test_packages_resolve_inside_this_repository(package: str) -> None:
    # PyPI has unrelated distributions named runtime/encoders/decoders.
    module = __import__(package)
    assert Path(module.__file__).resolve().is_relative_to(ROOT)


def test_public_runtime_names_are_exported_once() -> None:
    import runtime
    import runtime.testing

    assert len(runtime.__all__) == len(set(runtime.__all__))
    for name in runtime.__all__:
        assert hasattr(runtime, name), name
    overlap = set(runtime.__all__) & set(runtime.testing.__all__)
    assert overlap == set()

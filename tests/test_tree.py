"""The tests mirror the source: a module's tests live in the folder of its source.

The tests of ``bridge/server/calls/rounds.py`` are in
``tests/bridge/server/calls/``, of ``runtime/call/`` in ``tests/runtime/call/``,
and so on. Read from the tree, so a new flat test file fails here:

* every test module under ``tests/runtime``, ``tests/bridge``,
  ``tests/encoders`` and ``tests/decoders`` sits in a folder that exists in the
  source and holds modules of its own (``bridge/`` holds none: its tests are in
  its folders' mirrors);
* every other top-level folder of ``tests`` is one of the suites that test the
  whole stack (against outside peers, processes, load, the examples, the type
  checker), or test data, and its ``__init__`` says why it stands apart;
* the test modules at the top of ``tests`` are the checks of the whole
  repository, listed here.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.helpers import ROOT

TESTS = ROOT / "tests"
MIRRORED = ("runtime", "bridge", "encoders", "decoders")
# Suites that test the whole stack rather than a module, and what else lives
# beside the mirror.
APART = frozenset(
    {"interop", "reliability", "system", "examples", "typing", "fixtures", "data"}
)
# The checks of the whole repository: its layout, its docs, its benchmarks,
# the vendored official examples against both codecs.
WHOLE_REPOSITORY = frozenset(
    {
        "test_benchmarks.py",
        "test_docs.py",
        "test_layering.py",
        "test_official_examples.py",
        "test_structure.py",
        "test_tree.py",
    }
)


def _test_modules(folder: Path) -> list[Path]:
    return sorted(folder.rglob("test_*.py"))


def _holds_modules(source: Path) -> bool:
    return source.is_dir() and any(
        path.name != "__init__.py" for path in source.glob("*.py")
    )


def test_every_test_module_sits_in_the_mirror_of_a_source_folder() -> None:
    astray = [
        str(path.relative_to(ROOT))
        for package in MIRRORED
        for path in _test_modules(TESTS / package)
        if not _holds_modules(ROOT / path.parent.relative_to(TESTS))
    ]
    assert astray == [], "move each to the folder of the source it tests"


def test_every_top_level_folder_mirrors_a_package_or_stands_apart() -> None:
    folders = {
        path.name
        for path in TESTS.iterdir()
        if path.is_dir() and path.name != "__pycache__"
    }
    assert folders <= set(MIRRORED) | APART, folders - set(MIRRORED) - APART


def test_the_suites_apart_say_why() -> None:
    for name in sorted(APART - {"fixtures", "data"}):
        init = TESTS / name / "__init__.py"
        assert init.is_file(), name
        assert ast.get_docstring(ast.parse(init.read_text())), name


def test_every_mirror_folder_is_a_package_that_names_its_source() -> None:
    for package in MIRRORED:
        for folder in [TESTS / package, *sorted((TESTS / package).rglob("*/"))]:
            if folder.name == "__pycache__":
                continue
            init = folder / "__init__.py"
            assert init.is_file(), folder
            source = folder.relative_to(TESTS)
            assert (ROOT / source).is_dir(), f"{source} is not a source folder"


def test_only_the_checks_of_the_whole_repository_are_at_the_top() -> None:
    top = {path.name for path in TESTS.glob("test_*.py")}
    assert top <= WHOLE_REPOSITORY, top - WHOLE_REPOSITORY


def test_the_tree_check_sees_a_flat_file(tmp_path: Path) -> None:
    (tmp_path / "bridge" / "server").mkdir(parents=True)
    (tmp_path / "bridge" / "__init__.py").write_text("")
    (tmp_path / "bridge" / "server" / "modern.py").write_text("")
    assert not _holds_modules(tmp_path / "bridge")
    assert _holds_modules(tmp_path / "bridge" / "server")
    assert not _holds_modules(tmp_path / "bridge" / "nowhere")

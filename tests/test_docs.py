"""Code in the README and docs/ runs, so the documentation cannot rot.

Every ```python block of a document runs on its own, in a fresh namespace, as
a reader who copies just that block would run it, unless its first line is a
``# continued`` comment: then it runs with what every block above it defined
(the document says it builds on them). Then every ``test_*`` function the
blocks defined is called.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)
CONTINUED = "# continued"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_python_blocks_run(doc: Path) -> None:
    # Keyed by the function: a continued block sees the test functions of the
    # blocks above, and each must run once (a test counting side effects
    # fails if run again).
    tests: dict[object, str] = {}
    above: dict[str, object] = {"__name__": f"doc_{doc.stem}"}  # every block's
    for index, block in enumerate(BLOCK.findall(doc.read_text())):
        namespace = above if block.startswith(CONTINUED) else {"__name__": "doc"}
        code = compile(block, f"{doc.name}[block {index}]", "exec")
        exec(code, namespace)
        if namespace is not above:
            above.update((k, v) for k, v in namespace.items() if k != "__name__")
        tests.update(
            (value, f"{index}:{name}")
            for name, value in namespace.items()
            if name.startswith("test_") and callable(value) and value not in tests
        )
    for test in tests:
        test()  # pyright: ignore[reportCallIssue]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_docs_do_not_import_the_test_suite(doc: Path) -> None:
    """A reader has the package, not our tests: docs use only the package."""
    for block in BLOCK.findall(doc.read_text()):
        assert not re.search(r"^\s*(from|import) tests\b", block, re.MULTILINE), block

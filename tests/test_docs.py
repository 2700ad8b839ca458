"""Code in the README and docs/ runs, so the documentation cannot rot.

Every ```python block of a document is executed in order in one namespace; then
every ``test_*`` function the blocks defined is called.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_python_blocks_run(doc: Path) -> None:
    namespace: dict[str, object] = {"__name__": f"doc_{doc.stem}"}
    for index, block in enumerate(BLOCK.findall(doc.read_text())):
        code = compile(block, f"{doc.name}[block {index}]", "exec")
        exec(code, namespace)
    for name, value in list(namespace.items()):
        if name.startswith("test_") and callable(value):
            value()

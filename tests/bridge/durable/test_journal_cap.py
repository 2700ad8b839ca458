"""The journal cap holds with a store, in both eras.

``yieldmcp serve tests/fixtures/attack_tools.py --http ... --store sqlite:...``
runs as a real process. A call asks a question (so it is written down in the
store as it goes), then a step returns 30 MB: past ``--max-journal-bytes``
(1 MiB by default) the call fails with the journal-too-large tool error,
naming the limit, and the store is not made to hold the step's result.
Issue 37: a 2025-11-25 call with a store had no cap, and a 30 MB step result
became 63 MB in SQLite. A 2026-07-28 round checks the journal it seals in its
state, but with a store the journal is in the store, and there it had no cap
either (60 MB, when a step follows the big one).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from bridge.client import connect
from bridge.elicit import ScriptedAnswers
from tests.helpers import ROOT
from tests.processes import serving

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

SERVED = str(ROOT / "tests/fixtures/attack_tools.py")
BIG = 30_000_000
CAP = 1024 * 1024  # --max-journal-bytes's default
SMALL = 4_000_000  # bytes the SQLite files may take


def _sqlite_bytes(path: Path) -> int:
    """The store's file and its write-ahead log."""
    files = [path, path.with_name(path.name + "-wal")]
    return sum(file.stat().st_size for file in files if file.exists())


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
async def test_a_step_result_past_the_cap_fails_the_call_and_stays_out_of_the_store(
    tmp_path: Path, era: str
) -> None:
    database = tmp_path / "store.sqlite3"
    answers = ScriptedAnswers({"ok": {"ok": True}})
    with trio.fail_after(120):
        async with (
            serving(SERVED, tmp_path, "--store", f"sqlite:{database}") as (server,),
            connect(server.url, era=era, elicitation=answers) as client,
        ):
            result = await client.call_tool("ask_then_big", {"size": BIG})
        stored = _sqlite_bytes(database)
    text = result.content[0].text if result.content else ""
    assert result.is_error, f"the call went past the cap: {text[:80]}"
    assert "journal" in text, text
    assert str(CAP) in text, text
    assert stored < SMALL, f"the store grew to {stored / 1e6:.0f} MB"

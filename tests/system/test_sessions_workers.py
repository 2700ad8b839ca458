"""``serve --http --workers N`` with a store serves the 2025-11-25 era.

Without a store the era is refused (tests/bridge/cli/test_workers.py); with
one, a session opened on one worker is taken on by any other, and a call's
answers reach it wherever the kernel sends their POSTs. ``--store memory:``
lives in one process, so several workers refuse it, in one line.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import trio

from bridge.client import connect
from bridge.elicit import ScriptedAnswers
from bridge.providers import OfflineModel
from tests.bridge.cli.test_workers import workers
from tests.helpers import ROOT

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]


async def test_workers_with_a_store_serve_2025_sessions(sqlite_url: str) -> None:
    with trio.fail_after(120):
        async with (
            workers(2, "--store", sqlite_url) as running,
            connect(
                running.url,
                era="legacy",
                sampler=OfflineModel(),
                elicitation=ScriptedAnswers({"confirm": {"ok": True}}),
            ) as client,
        ):
            assert client.era != "2026-07-28"
            sampled = [await client.call_tool("sampled") for _ in range(3)]
            elicited = [await client.call_tool("elicited") for _ in range(3)]
    assert not any(result.is_error for result in sampled + elicited)
    assert all(e.content[0].text.endswith(";accept") for e in elicited)


def test_workers_refuse_a_store_of_one_process(tmp_path: Path) -> None:
    served = str(ROOT / "tests/fixtures/worker_tools.py")
    done = subprocess.run(
        [sys.executable, "-m", "bridge.cli", "serve", served, "--http",
         "127.0.0.1:0", "--workers", "2", "--store", "memory:"],
        capture_output=True, cwd=ROOT, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode != 0
    error = done.stderr.decode()
    assert error.count("\n") == 1, error
    assert "--store memory:" in error
    assert "Traceback" not in error

"""``yieldmcp tasks get|cancel|wait SERVER ID``: an ID the user got wrong is
the user's one line, exit status 1, before anything is sent.

The server is a real ``yieldmcp serve --http`` process, and so is the
command: its argument is the bytes a shell passes.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import trio

from tests.helpers import ROOT
from tests.processes import serving

SERVED = str(ROOT / "tests/fixtures/attack_tools.py")

NOT_UTF8 = b"ab\xff".decode("utf-8", "surrogateescape")
"""What Python makes of ``$(printf 'ab\\xff')`` on the command line."""


@pytest.mark.parametrize("action", ["get", "cancel", "wait"])
async def test_an_id_that_is_not_utf8_or_too_long_is_the_users_one_line(
    tmp_path: Path, action: str
) -> None:
    # Not UTF-8: a traceback (UnicodeEncodeError in the Mcp-Name header).
    # 20,000 characters: "the server answered HTTP 431", which blamed the
    # server for the user's own input.
    with trio.fail_after(60):
        async with serving(SERVED, tmp_path) as (server,):
            for task_id, said in [
                (NOT_UTF8, 'the task id "ab\\udcff" is not UTF-8 text'),
                ("a" * 20_000, "the task id given is 20,000 characters"),
            ]:
                done = await trio.run_process(
                    [sys.executable, "-m", "bridge.cli", "tasks", action, server.url,
                     task_id],
                    cwd=ROOT, capture_stdout=True, capture_stderr=True, check=False,
                )  # fmt: skip
                out, err = done.stdout.decode(), done.stderr.decode()
                assert (done.returncode, out) == (1, ""), err
                assert err.count("\n") == 1, err
                assert err.startswith(f"yieldmcp: error: {said}"), err
                assert len(err) < 300

"""Tasks parked on unanswered questions cannot take every slot from other callers.

``yieldmcp serve tests/fixtures/attack_tools.py --http ... --auth ISSUER``
runs as a real process with ``--max-tasks 20``; two callers hold access
tokens of their own. alice makes 20 tasks that park on a question nobody
answers; bob can still make a task, and it completes. alice stays bounded by
``--max-tasks-per-caller``. Issue 37: the 20 parked tasks held every slot, and
bob was refused with -32000.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from tests.bridge.auth_issuer import issuing
from tests.bridge.server.tasks.kit import RpcError, auth_flags, callers
from tests.helpers import ROOT
from tests.processes import Serving, started

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

SERVED = str(ROOT / "tests/fixtures/attack_tools.py")
SLOTS = 20


async def test_parked_tasks_leave_another_caller_a_slot(tmp_path: Path) -> None:
    limits = ["--max-tasks", str(SLOTS), "--max-tasks-per-caller", str(SLOTS)]
    bobs: Any = None
    with trio.fail_after(120):
        async with issuing() as issuer:
            server = Serving(SERVED, tmp_path, *auth_flags(issuer), *limits)
            async with (
                started(server),
                callers(issuer, server.url, "alice", "bob") as (alice, bob),
            ):
                parked = [(await alice.call("ask_ok"))["taskId"] for _ in range(SLOTS)]
                for task_id in parked:
                    await alice.until(task_id, "input_required")
                try:
                    bobs = await bob.call("slow_step")
                except RpcError as refused:
                    bobs = refused
                else:
                    done = await bob.until(bobs["taskId"])
                    assert done["status"] == "completed", done
                with pytest.raises(RpcError) as one_more:
                    await alice.call("ask_ok")
    assert not isinstance(bobs, RpcError), f"bob was refused a task: {bobs}"
    # alice is still held to her own share.
    assert one_more.value.code == -32000
    assert one_more.value.data == {"reason": "limit", "limit": SLOTS}
    assert "for this caller" in str(one_more.value), one_more.value

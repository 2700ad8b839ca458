"""``--internal-patience``: how long ``call --task`` keeps asking a task's
server that answers -32603 (its store away), a real CLI process against a
served server whose store fails for good once the task is made."""

from __future__ import annotations

import subprocess
import sys

import pytest
import trio

from bridge.server import Server
from bridge.server.limits import ServerLimits
from tests.bridge.client.test_tasks import _StoreAway
from tests.bridge.http_kit import served
from tests.fixtures import task_tools as tools
from tests.helpers import ROOT

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

CALL = [sys.executable, "-m", "bridge.cli", "call"]


async def test_internal_patience_bounds_a_task_s_failing_server() -> None:
    store = _StoreAway()
    server = Server(tools.ALL, store=store, limits=ServerLimits(task_lease=1.0))
    async with served(server) as url:
        command = [*CALL, url, "sleepy", "--arg", "seconds=60", "--task"]
        with trio.fail_after(30):
            process = await trio.lowlevel.open_process(
                [*command, "--internal-patience", "1"],
                cwd=ROOT,
                stderr=subprocess.PIPE,
            )
            assert process.stderr is not None
            seen = b""
            while b"created" not in seen:
                chunk = await process.stderr.receive_some()
                assert chunk, "the call ended before its task was made"
                seen += chunk
            store.down = True
            began = trio.current_time()
            async for chunk in process.stderr:
                seen += chunk
            returncode = await process.wait()
            took = trio.current_time() - began
    assert returncode == 1
    assert "Internal error: the server's store failed; try again (-32603)" in (
        seen.decode()
    )
    assert took < 1 + 2 + 3  # the patience, a last pause, the process's exit


async def test_internal_patience_is_a_positive_number() -> None:
    done = await trio.run_process(
        [*CALL, "http://127.0.0.1:9/mcp", "x", "--internal-patience", "0"],
        cwd=ROOT, capture_stdout=True, capture_stderr=True, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert b"--internal-patience" in done.stderr


def test_internal_patience_s_default_is_the_client_s() -> None:
    import inspect

    from bridge.cli.host_options import INTERNAL_PATIENCE
    from bridge.client import Client

    default = inspect.signature(Client).parameters["internal_patience"].default
    assert default == INTERNAL_PATIENCE

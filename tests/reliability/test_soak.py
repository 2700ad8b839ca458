"""Soak: 200 sampling clients, a cancellation storm and 2,000 idle connections
at once against one server over loopback, then the heap is back near its
baseline and a normal call still works.

The server runs in a fresh process of its own
(:mod:`tests.reliability.soak_server`), so that tracemalloc sees its heap alone
and the baseline does not depend on which tests ran before (the baseline is
taken after a warm-up of each kind of client). The
load comes from another process (:mod:`tests.reliability.soak_clients`), with
a core of its own:

* 200 clients making sampling calls: 150 in the 2026-07-28 era (rounds over
  plain POSTs) and 50 in the 2025-11-25 era (a session each, live sampling on
  each call's stream, answered with POSTs); every result is checked;
* a cancellation storm: 25 more 2025-11-25 sessions, each starting calls and
  ending them the ways a client does: ``notifications/cancelled``, dropping
  the stream (the client "dies"), or ``DELETE`` of the session, and reusing
  the cancelled call's request id at once;
* 2,000 idle TCP connections opened and held, sending nothing.

Bounded at 60 s. The server listens with a backlog of 4096, so the connection
burst is queued by the kernel, not reset: no client sees a reset.
"""

from __future__ import annotations

import json
import sys

import pytest
import trio

from tests.fixtures import load_tools
from tests.helpers import ROOT
from tests.reliability import soak_clients

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]


async def test_soak_sampling_cancellations_and_idle_connections() -> None:
    with trio.fail_after(60):
        done = await trio.run_process(
            [sys.executable, "-m", "tests.reliability.soak_server"],
            cwd=ROOT,
            capture_stdout=True,
        )
    counts = json.loads(done.stdout.decode().strip().splitlines()[-1])
    baseline, current = counts.pop("baseline"), counts.pop("current")
    print(  # the soak's figures, for the CI log
        f"soak: {counts}, heap {baseline / 1e6:.1f} MB -> {current / 1e6:.1f} MB"
    )
    assert counts["idle_held"] == soak_clients.IDLE
    assert counts["resets"] == 0  # the backlog holds the burst (issue 27 item 7)
    assert counts["modern"] >= soak_clients.MODERN_CLIENTS
    assert counts["legacy"] >= soak_clients.LEGACY_CLIENTS
    assert counts["storm"] >= 3 * soak_clients.STORM_CLIENTS  # each way, each
    assert counts["after"] == load_tools.expected(5, 3)
    assert current <= baseline * 1.2, f"heap {baseline} -> {current} bytes"

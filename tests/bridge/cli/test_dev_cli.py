"""``yieldmcp dev``'s mistakes a user can make: one line each, never a traceback."""

from __future__ import annotations

import contextlib
import json
import math
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.helpers import ROOT

TOOLS = ROOT / "tests/fixtures/dev_tools.py"
DEV = [sys.executable, "-m", "bridge.cli", "dev"]


def _dev(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bridge.cli", "dev", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


def test_a_busy_port_is_one_line() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _dev(str(TOOLS), "--port", str(port))
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"yieldmcp: error: cannot listen on 127.0.0.1:{port}: address already in use"
    ], done.stderr


def test_a_file_that_does_not_load_is_one_line(tmp_path: Path) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("x = (\n")
    done = _dev(str(broken))
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"yieldmcp: error: cannot load {broken}: SyntaxError: '(' was never "
        "closed (broken.py, line 1)"
    ], done.stderr


_TRIP = {"traveller": "Ada", "budget": 1, "stay": {"city": "Faro"}}


@contextlib.contextmanager
def _running_dev(*args: str) -> Iterator[tuple[httpx.Client, list[str]]]:
    """A ``yieldmcp dev`` process, a client holding its cookie, and (once
    the process ended) the lines it wrote to stderr after its URL."""
    process = subprocess.Popen([*DEV, *args], stderr=subprocess.PIPE, cwd=ROOT)
    assert process.stderr is not None
    logged: list[str] = []
    try:
        line = process.stderr.readline().decode()
        found = re.search(r"open (http://127\.0\.0\.1:\d+/\S+)/\?token=(\S+)", line)
        assert found, line
        with httpx.Client(base_url=found[1], timeout=120) as http:
            assert http.get(f"/?token={found[2]}").status_code == 303
            yield http, logged
    finally:
        process.terminate()
        process.wait(timeout=30)
        logged.extend(process.stderr.read().decode().splitlines()[1:])
        process.stderr.close()


def test_the_page_keeps_the_last_calls_and_bounds_a_body() -> None:
    process = subprocess.Popen(
        [
            *DEV,
            str(TOOLS),
            "--keep-calls",
            "2",
            "--max-body",
            "200",
            "--keep-logs",
            "2",
        ],
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    assert process.stderr is not None
    try:
        line = process.stderr.readline().decode()
        found = re.search(r"open (http://127\.0\.0\.1:\d+/\S+)/\?token=(\S+)", line)
        assert found, line
        with httpx.Client(base_url=found[1]) as http:
            assert http.get(f"/?token={found[2]}").status_code == 303
            for _ in range(3):
                made = http.post("/api/run", json={"tool": "plan", "arguments": _TRIP})
                assert made.status_code == 200
            kept = [run["id"] for run in http.get("/api/state").json()["runs"]]
            assert len(kept) == 2
            assert kept == sorted(kept)[-2:]  # the last two
            big = {"tool": "plan", "arguments": {"traveller": "x" * 300}}
            refused = http.post("/api/run", json=big)
            assert refused.status_code == 400
            assert refused.text == "a JSON object of at most 200 bytes"
            made = http.post("/api/run", json={"tool": "flood", "arguments": {"n": 5}})
            run_id = made.json()["id"]
            while (run := http.get("/api/state").json()["runs"][-1])[
                "id"
            ] != run_id or run["status"] == "running":
                time.sleep(0.05)
            assert [entry["data"] for entry in run["logs"]] == ["line 3", "line 4"]
            assert run["logsLeftOut"] == 3
    finally:
        process.terminate()
        process.wait(timeout=30)
        process.stderr.close()


async def test_a_run_the_page_drops_is_cancelled_not_left_waiting() -> None:
    # Past --keep-calls the page forgets a run, so its question can never be
    # answered: 3,000 runs left 2,995 waiting for ever (+140 MiB).
    import trio
    import trio.testing

    from bridge.cli.dev import DevApp
    from bridge.cli.loader import load_server

    server = load_server(str(TOOLS))
    app = DevApp(server, keep_calls=2)
    with trio.fail_after(30):
        async with server.running(), trio.open_nursery() as nursery:
            app.nursery = nursery
            runs = [
                app.start_run("book", {"city": "Lisbon"}, "legacy") for _ in range(5)
            ]
            while not all(run.questions for run in runs[-2:]):
                await trio.sleep(0.01)
            await trio.testing.wait_all_tasks_blocked()
            assert sorted(app.runs) == [runs[-2].number, runs[-1].number]
            assert len(nursery.child_tasks) == 2  # the dropped three ended
            assert all(run.scope.cancel_called for run in runs[:3])
            nursery.cancel_scope.cancel()


def test_thousands_of_logs_keep_the_page_answering_and_keep_the_last() -> None:
    # Each log serialised the whole run's picture, on the event loop: 6,000
    # logs blocked the dev server for 166 s (quadratic in the logs).
    with _running_dev(str(TOOLS)) as (http, _logged):
        made = http.post("/api/run", json={"tool": "flood", "arguments": {"n": 5000}})
        run_id = made.json()["id"]
        deadline = time.monotonic() + 40  # a quadratic dev misses it by minutes
        while True:
            asked = time.monotonic()
            state = http.get("/api/state").json()
            assert time.monotonic() - asked < 10, "the event loop was blocked"
            run = next(r for r in state["runs"] if r["id"] == run_id)
            if run["status"] != "running":
                break
            assert time.monotonic() < deadline, "5,000 logs took too long"
            time.sleep(0.2)
        assert run["result"]["text"] == "done after 5000"
        assert [entry["data"] for entry in run["logs"]] == [
            f"line {i}"
            for i in range(4800, 5000)  # the last 200, by default
        ]
        assert run["logsLeftOut"] == 4800
        bars = run["picture"]["bars"]
        assert len(bars) <= 1001  # the picture keeps the first effects
        assert "left out" in bars[-2]["label"] or "left out" in bars[-1]["label"]


def _busy_run_watched(http: httpx.Client, pages: int) -> tuple[int, float, int, str]:
    """Open ``pages`` event streams, start ``busy`` (15 s of 4 KB logs) and
    watch it 6 s: the bytes the pages received, the seconds, the size of the
    run as JSON, and its status. The streams stay open."""
    received: list[int] = []
    opened = threading.Semaphore(0)

    def listen() -> None:
        with (
            contextlib.suppress(httpx.HTTPError),
            http.stream("GET", "/api/events") as events,
        ):
            opened.release()
            for chunk in events.iter_raw():
                received.append(len(chunk))

    for _ in range(pages):
        threading.Thread(target=listen, daemon=True).start()
    for _ in range(pages):
        assert opened.acquire(timeout=30)
    made = http.post(
        "/api/run", json={"tool": "busy", "arguments": {"n": 1500, "size": 4000}}
    )
    assert made.status_code == 200
    began = time.monotonic()
    time.sleep(6)
    seconds = time.monotonic() - began
    runs = http.get("/api/state").json()["runs"]
    run = next(r for r in runs if r["id"] == made.json()["id"])
    return sum(received), seconds, len(json.dumps(run)), run["status"]


def test_a_busy_large_run_is_sent_at_the_pace_not_every_refresh() -> None:
    # Its picture (200 logs of 4 KB, and the effects) was sent whole every
    # 0.1 s while it ran: 51 MB in 8 s to a page, for one run.
    from bridge.cli.dev import PACE

    with _running_dev(str(TOOLS)) as (http, _logged):
        sent, seconds, size, status = _busy_run_watched(http, 1)
    assert status == "running"  # busy all along (15 s of logs)
    assert size > 500_000  # each event of it is large
    # At most what the pace allows, and the one large event sent before the wait.
    assert sent <= PACE * seconds + 2 * size, (sent, seconds, size)
    assert sent >= 2 * size  # and the page was kept up to date


def test_pages_share_the_pace_and_their_number_is_bounded() -> None:
    # The pace was per page: 40 pages of one busy run took 54 MiB/s, and
    # 40 stalled ones 2.3 GB, each holding a copy of the whole state.
    from bridge.cli.dev import MAX_PAGES, PACE

    with _running_dev(str(TOOLS)) as (http, _logged):
        sent, seconds, size, _ = _busy_run_watched(http, MAX_PAGES)
        one_more = http.get("/api/events", timeout=10)  # (was a stream: read timeout)
    assert one_more.status_code == 503
    assert one_more.text == f"{MAX_PAGES} pages are open already: close one"
    # At most what the pace allows all pages together, and each page's one
    # large event sent before its first wait.
    assert sent <= PACE * seconds + 2 * MAX_PAGES * size, (sent, seconds, size)


def test_deeply_nested_json_is_a_400_in_one_line() -> None:
    # It was a 500, and a RecursionError's traceback on stderr.
    deep = b"[" * 100_000 + b"]" * 100_000
    with _running_dev(str(TOOLS)) as (http, logged):
        json_body = {"content-type": "application/json"}
        for path in ("/api/run", "/api/answer"):
            refused = http.post(path, content=deep, headers=json_body)
            assert refused.status_code == 400
            assert refused.text == "a JSON object nested less deeply"
        assert http.get("/api/state").status_code == 200
    assert not any("Traceback" in line or "Error" in line for line in logged), logged


def test_nan_in_a_post_is_a_400_and_the_stream_stays_json() -> None:
    # Python's reader took NaN; echoed in the run's arguments, the page's
    # JSON.parse could not read the state or the stream any more.
    with _running_dev(str(TOOLS)) as (http, _logged):
        json_body = {"content-type": "application/json"}
        body = b'{"tool": "plan", "arguments": {"budget": NaN}}'
        refused = http.post("/api/run", content=body, headers=json_body)
        assert refused.status_code == 400
        state = http.get("/api/state").text
        json.loads(state, parse_constant=lambda c: pytest.fail(f"{c} in the state"))


def test_what_the_page_is_sent_is_json_its_javascript_reads() -> None:
    # Python's json writes NaN and Infinity bare; one in a run's state made
    # the page's JSON.parse fail, and with it every later event of the stream.
    import json

    from bridge.cli.dev import _page_json  # pyright: ignore[reportPrivateUsage]

    class Odd:
        def __repr__(self) -> str:
            return "Odd()"

    sent = _page_json({"x": [math.nan, math.inf, -math.inf], "odd": Odd()})

    def strict(constant: str) -> None:
        raise AssertionError(f"JSON.parse refuses {constant}")

    assert json.loads(sent, parse_constant=strict) == {
        "x": ["NaN", "Infinity", "-Infinity"],
        "odd": "Odd()",
    }

"""How long a process takes to be useful: yieldmcp beside fastmcp and the
official ``mcp`` SDK, in one run.

Rows (wall time from spawn to the end of the work, medians; each repeat runs
the stacks one after another, so load hits them alike):

* ``cli.version``: ``yieldmcp --version`` against ``fastmcp version``. (The
  SDK's ``mcp`` command needs the ``[cli]`` extra, typer, which is not
  installed here: no SDK column.)
* ``cli.help``: ``yieldmcp --help`` against ``fastmcp --help``.
* ``stdio.first_answer``: spawn the server over stdio with an ``initialize``
  already written to its stdin; time until its response line. Ours is
  ``yieldmcp serve startup_servers/ours.py``, fastmcp's is ``fastmcp run
  startup_servers/fast.py``, the SDK's is ``python startup_servers/sdk.py``
  (``MCPServer.run()``): an ``echo`` tool each, the way each documents it.
* ``stdio.first_question``: the same process, once ``initialize`` is
  answered, asked to call its ``ask`` tool (one form, a ``seat`` string);
  time from the ``tools/call`` written to the ``elicitation/create`` read:
  what a fresh process adds to its first form (``yieldmcp serve`` builds no
  ``mcp-types`` models for a plain form).

Each answer is checked (an ``initialize`` result naming the server's protocol
version; the form asked for the seat; a command that exits 0 and prints): a
refused or failed run stops the
benchmark rather than count as fast. Ratios are theirs / ours (higher is
better for us). Issue 40's aims for ours, on a calm machine: ``--help`` and
``--version`` at most 0.3 s, the first stdio answer at most 0.4 s; the table
says whether this run met them, as information (this machine is rarely calm).

    .venv/bin/python benchmarks/startup.py            # 15 repeats, ~1 min
    .venv/bin/python benchmarks/startup.py --quick    # 5 repeats
    .venv/bin/python benchmarks/startup.py --smoke    # once each (the test's)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import select
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parent.parent
SERVERS = ROOT / "benchmarks" / "startup_servers"
BIN = Path(sys.executable).parent
DEADLINE = 60.0  # seconds one spawn may take before the run is called failed

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "startup-bench", "version": "0"},
    },
}

AIMS: dict[str, float | None] = {
    "cli.version": 0.3,
    "cli.help": 0.3,
    "stdio.first_answer": 0.4,
    "stdio.first_question": None,
}


class BenchmarkError(Exception):
    """A run that did not do the work it is timed for."""


Probe = Callable[[], dict[str, float]]
"""One run of one stack: the seconds of each row it measures."""


def _command(row: str, argv: Sequence[str]) -> Probe:
    def run() -> dict[str, float]:
        started = time.perf_counter()
        done = subprocess.run(
            argv, capture_output=True, timeout=DEADLINE, cwd=ROOT, check=False
        )
        took = time.perf_counter() - started
        if done.returncode != 0 or not done.stdout.strip():
            raise BenchmarkError(
                f"{' '.join(argv)} exited {done.returncode}: "
                f"{done.stderr.decode(errors='replace')[-300:]}"
            )
        return {row: took}

    return run


@contextlib.contextmanager
def _spawned(argv: Sequence[str]) -> Iterator[tuple[IO[bytes], _Lines]]:
    """``argv`` started, its stdin and its stdout's lines; killed after."""
    process = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
    )
    assert process.stdin is not None
    assert process.stdout is not None
    try:
        lines = _Lines(process.stdout.fileno(), time.perf_counter() + DEADLINE)
        yield process.stdin, lines
    finally:
        process.kill()
        process.wait()
        process.stdin.close()
        process.stdout.close()


def _send(stdin: IO[bytes], message: bytes) -> None:
    stdin.write(message + b"\n")
    stdin.flush()


def _served(argv: Sequence[str]) -> Probe:
    """The server ``argv``, spawned with an ``initialize`` written to it: the
    seconds to its answer (``stdio.first_answer``), then from the
    ``tools/call`` of its ``ask`` tool to its ``elicitation/create``
    (``stdio.first_question``). One process for both rows: fastmcp's alone
    takes seconds to start."""

    def run() -> dict[str, float]:
        started = time.perf_counter()
        with _spawned(argv) as (stdin, lines):
            _send(stdin, json.dumps(ASKING).encode())
            line = lines.next()
            answered = time.perf_counter() - started
            _check_initialized(argv, line)
            _send(stdin, INITIALIZED)
            started = time.perf_counter()
            _send(stdin, CALL_ASK)
            while True:  # notifications (a log line) may come first
                message: Any = json.loads(lines.next())
                if message.get("method") == "elicitation/create":
                    asked = time.perf_counter() - started
                    break
                if message.get("id") == 2:
                    raise BenchmarkError(
                        f"{argv[-1]} answered the call without asking: "
                        f"{json.dumps(message)[:300]}"
                    )
        properties = message["params"]["requestedSchema"]["properties"]
        if "seat" not in properties:
            raise BenchmarkError(f"{argv[-1]} asked another form: {properties}")
        return {"stdio.first_answer": answered, "stdio.first_question": asked}

    return run


def _check_initialized(argv: Sequence[str], line: bytes) -> None:
    answer: Any = json.loads(line)
    result = answer.get("result") if isinstance(answer, dict) else None
    if answer.get("id") != 1 or not isinstance(result, dict):
        raise BenchmarkError(f"{argv[-1]} did not answer initialize: {line[:300]!r}")
    if "protocolVersion" not in result:
        raise BenchmarkError(f"{argv[-1]} answered without a version: {line[:300]!r}")


ASKING = {**INITIALIZE, "params": {
    **INITIALIZE["params"], "capabilities": {"elicitation": {"form": {}}},
}}  # fmt: skip
INITIALIZED = json.dumps(
    {"jsonrpc": "2.0", "method": "notifications/initialized"}
).encode()
CALL_ASK = json.dumps({
    "jsonrpc": "2.0", "id": 2, "method": "tools/call",
    "params": {"name": "ask", "arguments": {}},
}).encode()  # fmt: skip


class _Lines:
    """The lines on ``fd``, each read as it arrives (no buffering delay)."""

    def __init__(self, fd: int, deadline: float) -> None:
        self.fd, self.deadline, self.data = fd, deadline, b""

    def next(self) -> bytes:
        while b"\n" not in self.data:
            left = self.deadline - time.perf_counter()
            if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                raise BenchmarkError("no answer within the deadline")
            chunk = os.read(self.fd, 65536)
            if not chunk:
                raise BenchmarkError("the server closed stdout without answering")
            self.data += chunk
        line, _, self.data = self.data.partition(b"\n")
        return line


def probes() -> dict[str, list[Probe]]:
    """What each stack runs once per repeat."""
    yieldmcp, fastmcp = str(BIN / "yieldmcp"), str(BIN / "fastmcp")
    return {
        "ours": [
            _command("cli.version", [yieldmcp, "--version"]),
            _command("cli.help", [yieldmcp, "--help"]),
            _served([yieldmcp, "serve", str(SERVERS / "ours.py")]),
        ],
        "fastmcp": [
            _command("cli.version", [fastmcp, "version"]),
            _command("cli.help", [fastmcp, "--help"]),
            _served([fastmcp, "run", str(SERVERS / "fast.py"), "--transport",
                     "stdio", "--no-banner"]),
        ],
        "sdk": [_served([sys.executable, str(SERVERS / "sdk.py")])],
    }  # fmt: skip


def measure(repeats: int) -> dict[str, dict[str, float]]:
    """Median seconds per row and stack (the stacks take turns, so load hits
    them alike)."""
    times: dict[str, dict[str, list[float]]] = {row: {} for row in AIMS}
    stacks = probes()
    for _ in range(repeats):
        for stack, runs in stacks.items():
            for run in runs:
                for row, seconds in run().items():
                    times[row].setdefault(stack, []).append(seconds)
    return {
        row: {stack: statistics.median(each) for stack, each in by_stack.items()}
        for row, by_stack in times.items()
    }


def report(medians: dict[str, dict[str, float]], repeats: int) -> dict[str, Any]:
    print(f"start-up, medians of {repeats} (s); ratio = theirs / ours")
    print(f"{'row':<20} {'ours':>7} {'fastmcp':>8} {'sdk':>7}  {'aim':>5}  ratios")
    summary: dict[str, Any] = {"repeats": repeats, "load": os.getloadavg()[0]}
    for row, stacks in medians.items():
        ours = stacks["ours"]
        ratios = {s: round(t / ours, 2) for s, t in stacks.items() if s != "ours"}
        aim = AIMS[row]
        met = "" if aim is None else " (met)" if ours <= aim else " (NOT met)"
        cells = [f"{stacks.get(s, float('nan')):>7.3f}" for s in ("fastmcp", "sdk")]
        print(f"{row:<20} {ours:>7.3f} {cells[0]:>8} {cells[1]}  "
              f"{'-' if aim is None else aim:>5}  {ratios}{met}")  # fmt: skip
        summary[row] = {
            "seconds": stacks,
            "ratios": ratios,
            "aim_met": None if aim is None else ours <= aim,
        }
    print(f"load average at the end: {summary['load']:.2f}")
    return summary


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="5 repeats")
    size.add_argument("--smoke", action="store_true", help="each row once")
    args = parser.parse_args(argv)
    repeats = 1 if args.smoke else 5 if args.quick else 15
    try:
        medians = measure(repeats)
    except (BenchmarkError, subprocess.TimeoutExpired) as exc:
        print(f"startup: error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(report(medians, repeats)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

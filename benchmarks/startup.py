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
  (``MCPServer.run()``): one ``echo`` tool each, the way each documents it.

Each answer is checked (an ``initialize`` result naming the server's protocol
version; a command that exits 0 and prints): a refused or failed run stops the
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
import json
import os
import select
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

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

AIMS = {"cli.version": 0.3, "cli.help": 0.3, "stdio.first_answer": 0.4}


class BenchmarkError(Exception):
    """A run that did not do the work it is timed for."""


def _command(argv: Sequence[str]) -> Callable[[], float]:
    def run() -> float:
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
        return took

    return run


def _first_answer(argv: Sequence[str]) -> Callable[[], float]:
    def run() -> float:
        started = time.perf_counter()
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
            process.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
            process.stdin.flush()
            line = _line(process.stdout.fileno(), started + DEADLINE)
            took = time.perf_counter() - started
        finally:
            process.kill()
            process.wait()
            process.stdin.close()
            process.stdout.close()
        answer: Any = json.loads(line)
        result = answer.get("result") if isinstance(answer, dict) else None
        if answer.get("id") != 1 or not isinstance(result, dict):
            raise BenchmarkError(
                f"{argv[-1]} did not answer initialize: {line[:300]!r}"
            )
        if "protocolVersion" not in result:
            raise BenchmarkError(
                f"{argv[-1]} answered without a version: {line[:300]!r}"
            )
        return took

    return run


def _line(fd: int, deadline: float) -> bytes:
    """The first line on ``fd``, read as it arrives (no buffering delay)."""
    data = b""
    while b"\n" not in data:
        left = deadline - time.perf_counter()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise BenchmarkError("no answer within the deadline")
        chunk = os.read(fd, 65536)
        if not chunk:
            raise BenchmarkError("the server closed stdout without answering")
        data += chunk
    return data.partition(b"\n")[0]


def rows() -> dict[str, dict[str, Callable[[], float]]]:
    yieldmcp, fastmcp = str(BIN / "yieldmcp"), str(BIN / "fastmcp")
    return {
        "cli.version": {
            "ours": _command([yieldmcp, "--version"]),
            "fastmcp": _command([fastmcp, "version"]),
        },
        "cli.help": {
            "ours": _command([yieldmcp, "--help"]),
            "fastmcp": _command([fastmcp, "--help"]),
        },
        "stdio.first_answer": {
            "ours": _first_answer([yieldmcp, "serve", str(SERVERS / "ours.py")]),
            "fastmcp": _first_answer(
                [
                    fastmcp,
                    "run",
                    str(SERVERS / "fast.py"),
                    "--transport",
                    "stdio",
                    "--no-banner",
                ]
            ),
            "sdk": _first_answer([sys.executable, str(SERVERS / "sdk.py")]),
        },
    }


def measure(repeats: int) -> dict[str, dict[str, float]]:
    """Median seconds per row and stack."""
    table = rows()
    times: dict[str, dict[str, list[float]]] = {
        row: {stack: [] for stack in stacks} for row, stacks in table.items()
    }
    for _ in range(repeats):
        for row, stacks in table.items():
            for stack, run in stacks.items():
                times[row][stack].append(run())
    return {
        row: {stack: statistics.median(each) for stack, each in stacks.items()}
        for row, stacks in times.items()
    }


def report(medians: dict[str, dict[str, float]], repeats: int) -> dict[str, Any]:
    print(f"start-up, medians of {repeats} (s); ratio = theirs / ours")
    print(f"{'row':<20} {'ours':>7} {'fastmcp':>8} {'sdk':>7}  {'aim':>5}  ratios")
    summary: dict[str, Any] = {"repeats": repeats, "load": os.getloadavg()[0]}
    for row, stacks in medians.items():
        ours = stacks["ours"]
        ratios = {s: round(t / ours, 2) for s, t in stacks.items() if s != "ours"}
        met = "met" if ours <= AIMS[row] else "NOT met"
        cells = [f"{stacks.get(s, float('nan')):>7.3f}" for s in ("fastmcp", "sdk")]
        print(f"{row:<20} {ours:>7.3f} {cells[0]:>8} {cells[1]}  {AIMS[row]:>5}  "
              f"{ratios} ({met})")  # fmt: skip
        summary[row] = {
            "seconds": stacks,
            "ratios": ratios,
            "aim_met": ours <= AIMS[row],
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

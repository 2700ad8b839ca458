"""yieldmcp against the official ``mcp`` SDK: the same work on both stacks, one run.

Usage::

    python benchmarks/compare_mcp.py [--quick | --smoke] [--rows PREFIX,...]

Rows (each is a median over repeated batches; stacks are interleaved batch by
batch so that background load hits both alike; the IQR of the batches, as a
fraction of the median, is the row's noise):

* ``mem.*``: in-memory, sequential, 2025-11-25 era: ``plain`` (a tool call with
  no effect), ``sample1`` (one sampling round trip), ``sample10`` (ten). Ours:
  our client and server over ``memory_pair()`` (JSON on the wire). SDK:
  ``mcp.Client(server, mode="legacy")`` (its in-memory transport passes
  message objects, no JSON), on asyncio and on trio; the faster is the baseline.
* ``stdio.*``: the same over a spawned server process (each stack's own client).
* ``http.*``: the same over loopback Streamable HTTP, 32 concurrent clients; one
  raw JSON-RPC-over-HTTP client (h11 on trio, see ``_http.py``) drives both
  servers. Time per call = wall time / calls; ``http.*.server`` rows give the
  server process's CPU time per call, and each ``http.*`` row's note the
  client's own: while that stays well under the wall time, the server, not
  the client, sets the pace.
  ``http.floor``: the same client against our HTTP server (h11 on trio)
  serving a no-op app (see ``_floor.py``) beside the SDK's plain call: the
  best ratio that HTTP layer allows.
* ``workers.N.*``: throughput, calls/s (higher is better), of ``serve --http
  --workers N`` (N = 1, 2) in the 2026-07-28 era with 64 concurrent clients,
  ours only, no target: ``plain`` and ``sample1`` (two requests a call). The
  load client shares the machine's cores (see ``_workers.py``).
* ``park.1k``: heap per parked call (tracemalloc), both servers; ``park.100k``:
  RSS growth for 100,000 parked calls, ours only (see ``parked.py``).
* ``mrtr.rounds10``: 2026-07-28 era, in memory, a call answered over 10 input
  rounds, both stacks; ``mrtr.resume``: ours, server side, one ``tools/call``
  round that opens a sealed state holding 10 answers, replays them, and takes
  the 11th answer to the result (``mrtr.run_round``: the same, ``run_round`` alone).

Ratios are SDK / ours (higher is better for us), except memory (bytes, SDK /
ours as well). The last line of output is one JSON object with every ratio.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import anyio  # noqa: E402
import attrs  # noqa: E402
import trio  # noqa: E402

from benchmarks import _stats, ours, parked, sdk  # noqa: E402
from benchmarks._stats import Sample  # noqa: E402

TOOLS = {"plain": "echo", "sample1": "sample1", "sample10": "sample10"}
ARGS = {"text": "hi"}


@attrs.define
class Settings:
    repeats: int
    batch_seconds: float
    stdio_repeats: int
    http_repeats: int
    http_seconds: float
    park_repeats: int
    http_clients: int = 32
    park_small: int = 1_000
    park_large: int = 100_000


QUICK = Settings(
    repeats=5, batch_seconds=0.12, stdio_repeats=3, http_repeats=3,
    http_seconds=1.0, park_repeats=1,
)  # fmt: skip
FULL = Settings(
    repeats=11, batch_seconds=0.3, stdio_repeats=7, http_repeats=7,
    http_seconds=3.0, park_repeats=3,
)  # fmt: skip
SMOKE = Settings(
    repeats=1, batch_seconds=0.02, stdio_repeats=1, http_repeats=1,
    http_seconds=0.2, park_repeats=1,
)  # fmt: skip
"""Each row once and small: that the script runs (tests/test_benchmarks.py);
its figures mean nothing."""


@attrs.define
class Row:
    key: str
    title: str
    unit: str
    target: str
    ours: Sample = attrs.field(factory=Sample)
    sdk: Sample = attrs.field(factory=Sample)
    sdk_alt: Sample = attrs.field(factory=Sample)  # the SDK on its other backend
    note: str = ""

    @property
    def baseline(self) -> Sample:
        if self.sdk_alt.values and self.sdk_alt.median < self.sdk.median:
            return self.sdk_alt
        return self.sdk

    @property
    def ratio(self) -> float | None:
        if not self.ours.values or not self.baseline.values:
            return None
        return self.baseline.median / self.ours.median


# --- timing helpers -------------------------------------------------------------


async def _timed_batch(
    call: Callable[[], Awaitable[Any]],
    seconds: float,
    clock: Callable[[], float] = _stats.cpu,
) -> float:
    """Seconds per call over a batch lasting about ``seconds`` (≥ 10 calls).

    In-process rows count this process's CPU time: all their work happens here,
    and CPU time does not count time stolen by other processes on the machine.
    Rows with a server process pass the wall clock.
    """
    for _ in range(3):
        await call()  # warm
    n, start = 0, clock()
    while True:
        await call()
        n += 1
        elapsed = clock() - start
        if n >= 10 and elapsed >= seconds:
            return elapsed / n


def _run_trio(fn: Callable[..., Awaitable[Any]], *args: Any) -> Any:
    return trio.run(fn, *args)


def _run_asyncio(fn: Callable[..., Awaitable[Any]], *args: Any) -> Any:
    return anyio.run(fn, *args, backend="asyncio")


# --- in-memory, 2025-11-25 ------------------------------------------------------


async def _mem_ours(names: Sequence[str], seconds: float) -> dict[str, float]:
    out: dict[str, float] = {}
    async with ours.in_memory("legacy") as client:
        for name in names:
            tool = TOOLS[name]
            out[name] = await _timed_batch(
                lambda tool=tool: client.call_tool(tool, ARGS), seconds
            )
    return out


async def _mem_sdk(names: Sequence[str], seconds: float) -> dict[str, float]:
    out: dict[str, float] = {}
    async with sdk.client(sdk.server, "legacy") as client:
        for name in names:
            tool = TOOLS[name]
            out[name] = await _timed_batch(
                lambda tool=tool: client.call_tool(tool, ARGS), seconds
            )
    return out


def bench_memory(rows: dict[str, Row], s: Settings) -> None:
    names = [n for n in TOOLS if f"mem.{n}" in rows]
    if not names:
        return
    for _ in range(s.repeats):
        for name, value in _run_trio(_mem_ours, names, s.batch_seconds).items():
            rows[f"mem.{name}"].ours.add(value)
        for name, value in _run_asyncio(_mem_sdk, names, s.batch_seconds).items():
            rows[f"mem.{name}"].sdk.add(value)
        for name, value in _run_trio(_mem_sdk, names, s.batch_seconds).items():
            rows[f"mem.{name}"].sdk_alt.add(value)
    for name in names:
        row = rows[f"mem.{name}"]
        which = "trio" if row.baseline is row.sdk_alt else "asyncio"
        row.note = (
            f"SDK baseline on {which} (asyncio {_us(row.sdk.median)} µs, "
            f"trio {_us(row.sdk_alt.median)} µs)"
        )


# --- stdio ----------------------------------------------------------------------


async def _stdio_ours(names: Sequence[str], seconds: float) -> dict[str, float]:
    from bridge.client import Client
    from bridge.client.process import spawn

    out: dict[str, float] = {}
    async with (
        spawn(ours.stdio_command(), cwd=str(ROOT)) as (transport, _process),
        Client.connect(
            transport, era="legacy", sampler=ours.Model(), elicitation=ours.Steps()
        ) as client,
    ):
        for name in names:
            tool = TOOLS[name]
            out[name] = await _timed_batch(
                lambda tool=tool: client.call_tool(tool, ARGS), seconds, _stats.now
            )
    return out


async def _stdio_sdk(names: Sequence[str], seconds: float) -> dict[str, float]:
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable, args=[str(ROOT / "benchmarks/sdk.py"), "stdio"],
        cwd=str(ROOT),
    )  # fmt: skip
    out: dict[str, float] = {}
    async with sdk.client(params, "legacy") as client:
        for name in names:
            tool = TOOLS[name]
            out[name] = await _timed_batch(
                lambda tool=tool: client.call_tool(tool, ARGS), seconds, _stats.now
            )
    return out


def bench_stdio(rows: dict[str, Row], s: Settings) -> None:
    names = [n for n in TOOLS if f"stdio.{n}" in rows]
    if not names:
        return
    for _ in range(s.stdio_repeats):
        for name, value in _run_trio(_stdio_ours, names, s.batch_seconds).items():
            rows[f"stdio.{name}"].ours.add(value)
        for name, value in _run_asyncio(_stdio_sdk, names, s.batch_seconds).items():
            rows[f"stdio.{name}"].sdk.add(value)


# --- loopback HTTP --------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start(command: list[str], port: int) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return process
        if process.poll() is not None:
            break
        time.sleep(0.05)
    process.kill()
    raise RuntimeError(f"server did not start: {' '.join(command)}")


def bench_http(rows: dict[str, Row], s: Settings) -> None:
    floor = "http.floor" in rows or "http.floor.server" in rows
    names = [n for n in TOOLS if f"http.{n}" in rows or f"http.{n}.server" in rows]
    if floor and "plain" not in names:
        names.insert(0, "plain")  # the floor's row compares with the SDK's plain call
    for name in names:  # both rows come from the same batches
        rows.setdefault(f"http.{name}", Row(f"http.{name}", "", "µs", ""))
    for floor_key, sdk_key in _FLOOR_BESIDE.items():
        if floor_key in rows:  # the SDK's plain samples, filled as batches come in
            rows[floor_key].sdk = rows.setdefault(
                sdk_key, Row(sdk_key, "", "µs", "")
            ).sdk
    if not names:
        return
    if importlib.util.find_spec("bridge.transports.http") is None:
        for name in names:
            rows[f"http.{name}"].note = "skipped: bridge/transports/http missing"
        return
    from benchmarks import _http

    commands = [("ours", ours.http_command), ("sdk", _sdk_http)]
    if floor:
        commands.append(("floor", _floor_http))
    servers: dict[str, tuple[subprocess.Popen[bytes], str]] = {}
    clients = {(n, stack): Sample() for n in names for stack in ("ours", "sdk")}
    try:
        for stack, command in commands:
            port = _free_port()
            servers[stack] = (
                _start(command(port), port),
                f"http://127.0.0.1:{port}/mcp",
            )
        for _ in range(s.http_repeats):
            for stack in ("ours", "sdk"):
                process, url = servers[stack]
                result = _run_trio(
                    _http.measure, url, [TOOLS[n] for n in names],
                    s.http_clients, s.http_seconds / len(names), process.pid,
                )  # fmt: skip
                for name in names:
                    wall, cpu, client_cpu = result[TOOLS[name]]
                    getattr(rows[f"http.{name}"], stack).add(wall)
                    clients[name, stack].add(client_cpu)
                    cpu_row = rows.get(f"http.{name}.server")
                    if cpu_row is not None:
                        getattr(cpu_row, stack).add(cpu)
            if floor:
                _measure_floor(
                    rows, s.http_clients, s.http_seconds / len(names),
                    *servers["floor"],
                )  # fmt: skip
        for name in names:
            rows[f"http.{name}"].note = (
                f"the load client's own CPU per call: "
                f"{_us(clients[name, 'ours'].median)} µs against ours, "
                f"{_us(clients[name, 'sdk'].median)} µs against the SDK"
            )
    finally:
        for process, _url in servers.values():
            process.terminate()
            try:
                process.wait(5)
            except subprocess.TimeoutExpired:
                process.kill()


def _sdk_http(port: int) -> list[str]:
    return [sys.executable, str(ROOT / "benchmarks/sdk.py"), "http", str(port)]


def _floor_http(port: int) -> list[str]:
    return [sys.executable, str(ROOT / "benchmarks/_floor.py"), str(port)]


_FLOOR_BESIDE = {"http.floor": "http.plain", "http.floor.server": "http.plain.server"}


def _measure_floor(
    rows: dict[str, Row],
    clients: int,
    seconds: float,
    process: subprocess.Popen[bytes],
    url: str,
) -> None:
    """The no-op app's plain call (see ``_floor.py``), beside the SDK's: the
    row's ratio is the best ``http.plain`` ratio our HTTP server allows."""
    from benchmarks import _http

    plain = TOOLS["plain"]
    result = _run_trio(_http.measure, url, [plain], clients, seconds, process.pid)
    wall, cpu, _client_cpu = result[plain]
    for key, value in (("http.floor", wall), ("http.floor.server", cpu)):
        if key in rows:
            rows[key].ours.add(value)


# --- parked calls ---------------------------------------------------------------


def bench_parked(rows: dict[str, Row], s: Settings) -> None:
    if "park.1k" in rows:
        row = rows["park.1k"]
        for _ in range(s.park_repeats):
            row.ours.add(_run_trio(parked.park_ours, s.park_small, "tracemalloc"))
            row.sdk.add(_run_asyncio(parked.park_sdk, s.park_small, "tracemalloc"))
    if "park.100k" in rows:
        # A fresh process, so the RSS growth is not hidden by freed memory.
        code = (
            "import sys, trio; sys.path.insert(0, sys.argv[1]);"
            "from benchmarks import parked;"
            "print(trio.run(parked.park_ours, int(sys.argv[2]), 'rss'))"
        )
        out = subprocess.run(
            [sys.executable, "-c", code, str(ROOT), str(s.park_large)],
            capture_output=True, text=True, check=True, cwd=ROOT,
        )  # fmt: skip
        rows["park.100k"].ours.add(float(out.stdout.split()[-1]) * s.park_large)


# --- 2026-07-28 -----------------------------------------------------------------


async def _rounds_ours(seconds: float) -> float:
    async with ours.in_memory("2026-07-28") as client:
        return await _timed_batch(lambda: client.call_tool("elicit10", ARGS), seconds)


async def _rounds_sdk(seconds: float) -> float:
    async with sdk.client(sdk.server, "2026-07-28") as client:
        return await _timed_batch(lambda: client.call_tool("elicit10", ARGS), seconds)


def bench_mrtr(rows: dict[str, Row], s: Settings) -> None:
    from benchmarks import _resume

    for _ in range(s.repeats):
        if "mrtr.rounds10" in rows:
            rows["mrtr.rounds10"].ours.add(_run_trio(_rounds_ours, s.batch_seconds))
            rows["mrtr.rounds10"].sdk.add(_run_asyncio(_rounds_sdk, s.batch_seconds))
        if "mrtr.resume" in rows:
            rows["mrtr.resume"].ours.add(
                _run_trio(_resume.handle_request, s.batch_seconds)
            )
        if "mrtr.run_round" in rows:
            rows["mrtr.run_round"].ours.add(
                _run_trio(_resume.run_round, s.batch_seconds)
            )


def bench_workers(rows: dict[str, Row], s: Settings) -> None:
    from benchmarks._workers import measure_workers

    for workers in (1, 2):
        names = [n for n in ("plain", "sample1") if f"workers.{workers}.{n}" in rows]
        if not names:
            continue
        rates = measure_workers(
            workers, [TOOLS[n] for n in names], 64, s.http_seconds, s.http_repeats
        )
        for name in names:
            row, cpu = rows[f"workers.{workers}.{name}"], Sample()
            for rate, cpu_per_call in rates[TOOLS[name]]:
                row.ours.add(rate)
                cpu.add(cpu_per_call)
            row.note = f"the workers' CPU per call: {_us(cpu.median)} µs"


# --- report ---------------------------------------------------------------------


def _rows() -> list[Row]:
    t = "≥ 8x"
    return [
        Row("mem.plain", "in-memory: plain tools/call", "µs", t),
        Row("mem.sample1", "in-memory: tool sampling once", "µs", t),
        Row("mem.sample10", "in-memory: tool sampling 10x", "µs", t),
        Row("stdio.plain", "stdio: plain tools/call", "µs", "≥ 3x"),
        Row("stdio.sample1", "stdio: tool sampling once", "µs", "≥ 3x"),
        Row("stdio.sample10", "stdio: tool sampling 10x", "µs", "≥ 3x"),
        Row("http.plain", "HTTP x32: plain tools/call", "µs", "≥ 3x"),
        Row("http.sample1", "HTTP x32: tool sampling once", "µs", "≥ 2x"),
        Row("http.sample10", "HTTP x32: tool sampling 10x", "µs", "≥ 2x"),
        Row("http.plain.server", "HTTP x32: plain, server CPU", "µs", "-"),
        Row("http.sample1.server", "HTTP x32: sampling once, server CPU", "µs", "-"),
        Row("http.sample10.server", "HTTP x32: sampling 10x, server CPU", "µs", "-"),
        Row("http.floor", "HTTP x32: our HTTP server, no-op app (floor)", "µs", "-"),
        Row("http.floor.server", "HTTP x32: the same, server CPU", "µs", "-"),
        Row("workers.1.plain", "2026 HTTP x64, 1 worker: plain", "calls/s", "-"),
        Row("workers.2.plain", "2026 HTTP x64, 2 workers: plain", "calls/s", "-"),
        Row(
            "workers.1.sample1",
            "2026 HTTP x64, 1 worker: sampling once",
            "calls/s",
            "-",
        ),
        Row(
            "workers.2.sample1",
            "2026 HTTP x64, 2 workers: sampling once",
            "calls/s",
            "-",
        ),
        Row("park.1k", "parked call, 1,000 (heap/call)", "KB", "≤ 4 KB"),
        Row("park.100k", "100,000 parked calls (RSS)", "MB", "< 1 GB"),
        Row("mrtr.rounds10", "2026: call with 10 input rounds", "µs", "-"),
        Row("mrtr.resume", "2026: resume, 10-answer journal", "µs", "≤ 100 µs"),
        Row("mrtr.run_round", "2026: the same, run_round only", "µs", "-"),
    ]


def _us(value: float) -> str:
    return f"{value * 1e6:,.0f}" if value == value else "-"


def _fmt(row: Row, sample: Sample) -> str:
    if not sample.values:
        return "-"
    if row.unit == "KB":
        return f"{sample.median / 1024:,.1f}"
    if row.unit == "calls/s":
        return f"{sample.median:,.0f}"
    if row.unit == "MB":
        return f"{sample.median / 2**20:,.0f}"
    return _us(sample.median)


def _noise(sample: Sample) -> str:
    return f"±{sample.spread * 100:.0f}%" if len(sample.values) > 1 else "-"


def report(rows: list[Row], settings: Settings, started: float) -> str:
    lines = [
        "| row | unit | yieldmcp | noise | mcp SDK | noise | SDK/ours | target |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        ratio = row.ratio
        lines.append(
            f"| {row.title} | {row.unit} | {_fmt(row, row.ours)} | "
            f"{_noise(row.ours)} | {_fmt(row, row.baseline)} | "
            f"{_noise(row.baseline)} | "
            f"{'-' if ratio is None else f'{ratio:.2f}x'} | {row.target} |"
        )
    notes = [f"- {row.key}: {row.note}" for row in rows if row.note]
    import mcp

    header = (
        f"{platform.python_implementation()} {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, mcp {getattr(mcp, '__version__', '2.x')}, "
        f"trio {trio.__version__}; repeats {settings.repeats} (stdio "
        f"{settings.stdio_repeats}, HTTP {settings.http_repeats}); "
        f"{time.perf_counter() - started:.0f} s; load average "
        f"{os.getloadavg()[0]:.2f}"
    )
    return "\n".join([header, "", *lines, "", *notes])


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    speed = parser.add_mutually_exclusive_group()
    speed.add_argument("--quick", action="store_true", help="finish in < 2 min")
    speed.add_argument(
        "--smoke", action="store_true", help="each row once: that it runs"
    )
    parser.add_argument(
        "--rows", default="", help="comma-separated row prefixes (mem,park.1k,...)"
    )
    args = parser.parse_args(argv)
    settings = SMOKE if args.smoke else QUICK if args.quick else FULL
    every = _rows()
    wanted = [p.strip() for p in args.rows.split(",") if p.strip()]
    unknown = [p for p in wanted if not any(r.key.startswith(p) for r in every)]
    if unknown:
        parser.error(
            f"--rows: no row starts with {', '.join(map(repr, unknown))}; "
            f"rows: {', '.join(r.key for r in every)}"
        )
    chosen = [
        r for r in every if not wanted or any(r.key.startswith(p) for p in wanted)
    ]
    rows = {r.key: r for r in chosen}
    started = time.perf_counter()
    bench_memory(rows, settings)
    bench_mrtr(rows, settings)
    bench_parked(rows, settings)
    bench_stdio(rows, settings)
    bench_http(rows, settings)
    bench_workers(rows, settings)
    print(report(chosen, settings, started))
    ratios: dict[str, Any] = {}
    for row in chosen:
        ratio = row.ratio
        ratios[row.key] = {
            "ours": row.ours.median if row.ours.values else None,
            "sdk": row.baseline.median if row.baseline.values else None,
            "ratio": None if ratio is None else round(ratio, 2),
            "noise": round(row.ours.spread, 3) if len(row.ours.values) > 1 else None,
        }
    print(json.dumps({"ratios": ratios}, separators=(",", ":")))


if __name__ == "__main__":
    main()

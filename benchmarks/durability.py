"""What durability costs: a recorded answer and a recorded step, per store.

Usage::

    python benchmarks/durability.py [--quick] [--calls] [--redis URL] [--postgres URL]

A call with a store appends every answer and step result to its journal
stream *before* it moves on (write-ahead): one ``AsyncStore.append`` of one
record, as ``bridge.durable.log`` shapes it, awaited from trio. This
times that append on each backend:

- ``memory``: the in-memory store (the baseline: no I/O, called inline);
- ``sqlite``: a file in a temporary directory, WAL with ``synchronous=NORMAL``;
- ``redis``: ``appendonly yes``, ``appendfsync everysec``;
- ``postgres``: PostgreSQL's defaults (``fsync``, ``synchronous_commit = on``).

Redis and PostgreSQL are started on loopback in a temporary directory (the
tests' helpers, with those durable settings) unless a URL is given; a missing
server skips its rows. Rows: a recorded answer (an elicitation's reply), a
recorded step (a small result), each a call's 10 records in sequence; and
the same answer with 16 calls recording at once (per answer: what group
commit buys). With ``--calls``, the rows are instead whole calls end to end:
``elicit10`` of :mod:`benchmarks.ours` (ten questions, one after the other)
through our client over the in-memory transport, in the 2026-07-28 era (ten
rounds, each resumed from the store) and in the 2025-11-25 era, on a server
with the store against the same server with none; "added" is then per
answer (the call's extra time over 10). The stores are timed one after
another, each in batches interleaved with the in-memory store's (its
baseline under the same load); medians, wall time; the cost "added" is the
store's time less memory's. The last line of output is one JSON object (µs).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import trio  # noqa: E402

from benchmarks._stats import median  # noqa: E402
from bridge.durable.log import CALLS  # noqa: E402
from bridge.stores import AsyncStore, JournalStore, open_store  # noqa: E402
from runtime.lowlevel import answer_record, digest  # noqa: E402

RECORDS_PER_CALL = 10
AT_ONCE = 16
ANSWER = {"action": "accept", "content": {"name": "Ada Lovelace", "seats": 2}}
QUESTION = {"message": "Who is travelling?", "requestedSchema": {"type": "object"}}


def answer(n: int) -> dict[str, Any]:
    return answer_record(f"e:{n}", digest(QUESTION), ANSWER)


def step(n: int) -> dict[str, Any]:
    return answer_record(f"s:{n}", digest({"step": "fetch", "n": n}), {"ok": n})


@contextlib.contextmanager
def servers(args: argparse.Namespace) -> Iterator[dict[str, str]]:
    """The store URLs to time: given, or started here."""
    from tests.store_servers import postgres_bin, running_postgres, running_redis

    urls: dict[str, str] = {"memory": "memory:"}
    wanted = set(args.stores.split(","))
    with contextlib.ExitStack() as stack:
        tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="yieldmcp-bench-"))
        if "sqlite" in wanted:
            urls["sqlite"] = f"sqlite:{tmp}/store.sqlite3"
        if "redis" not in wanted:
            pass
        elif args.redis:
            urls["redis"] = args.redis
        elif shutil.which("redis-server"):
            urls["redis"] = stack.enter_context(running_redis(durable=True))
        else:
            print("redis-server is not installed: no redis rows", file=sys.stderr)
        if "postgres" not in wanted:
            pass
        elif args.postgres:
            urls["postgres"] = args.postgres
        elif postgres_bin() is not None:
            urls["postgres"] = stack.enter_context(running_postgres(durable=True))
        else:
            print("PostgreSQL is not installed: no postgres rows", file=sys.stderr)
        yield urls


class Rows:
    """One backend's batches: seconds per record, by row."""

    def __init__(self, store: JournalStore) -> None:
        self.store = AsyncStore(store)
        self.calls = 0
        self.times: dict[str, list[float]] = {"answer": [], "step": [], "at once": []}

    def _call_id(self) -> str:
        self.calls += 1
        return f"bench-{self.calls}"

    async def one_call(self, make: Callable[[int], dict[str, Any]]) -> None:
        call = self._call_id()
        for n in range(RECORDS_PER_CALL):
            await self.store.append(CALLS, call, [make(n)])

    async def batch(self, calls: int) -> None:
        for row, make in (("answer", answer), ("step", step)):
            self.times[row].append(
                await _timed(lambda m=make: self.one_call(m), calls) / RECORDS_PER_CALL
            )

        async def together() -> None:
            async with trio.open_nursery() as nursery:
                for _ in range(AT_ONCE):
                    nursery.start_soon(self.one_call, answer)

        self.times["at once"].append(
            await _timed(together, max(1, calls // AT_ONCE))
            / (RECORDS_PER_CALL * AT_ONCE)
        )


async def _timed(work: Callable[[], Awaitable[None]], count: int) -> float:
    started = time.perf_counter()
    for _ in range(count):
        await work()
    return (time.perf_counter() - started) / count


async def measure(urls: dict[str, str], batches: int, calls: int) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for name, url in urls.items():
        if name == "memory":
            continue
        # One store at a time, its batches interleaved with memory's (the
        # baseline, measured under the same load): one server's fsyncs then
        # never slow another store's rows.
        pair = {"memory": Rows(open_store("memory:")), name: Rows(open_store(url))}
        for backend in pair.values():  # warm up: connections, tables, caches
            await backend.batch(2)
            backend.times = {row: [] for row in backend.times}
        for _ in range(batches):
            for backend in pair.values():
                await backend.batch(calls)
        base = {row: median(t) for row, t in pair["memory"].times.items()}
        for row, times in pair[name].times.items():
            value = median(times)
            result[f"{name}: {row}"] = {
                "us": value * 1e6,
                "memory_us": base[row] * 1e6,
                "added_us": (value - base[row]) * 1e6,
                "x_memory": value / base[row],
            }
        for backend in pair.values():
            await backend.store.aclose()
    return result


class Calls:
    """One server's batches of ``elicit10`` calls, per era: seconds per call."""

    def __init__(self, url: str | None) -> None:
        from benchmarks import ours
        from bridge.server import Server

        self.server = Server(
            ours.TOOLS, name="bench", store=None if url is None else open_store(url)
        )
        self.times: dict[str, list[float]] = {era: [] for era in ERAS}

    async def batch(self, clients: dict[str, Any], calls: int) -> None:
        for era, client in clients.items():
            self.times[era].append(
                await _timed(
                    lambda c=client: c.call_tool("elicit10", {"text": "q"}), calls
                )
            )


ERAS = {"2026-07-28": "2026-07-28", "2025-11-25": "legacy"}


async def measure_calls(
    urls: dict[str, str], batches: int, calls: int
) -> dict[str, Any]:
    from benchmarks import ours

    result: dict[str, Any] = {}
    for name, url in urls.items():
        # Each store against the same server with none, batches interleaved.
        pair = {"none": Calls(None), name: Calls(url)}
        async with contextlib.AsyncExitStack() as stack:
            clients = {
                key: {
                    era: await stack.enter_async_context(
                        ours.in_memory(mode, calls_.server)
                    )
                    for era, mode in ERAS.items()
                }
                for key, calls_ in pair.items()
            }
            for key, calls_ in pair.items():  # warm up
                await calls_.batch(clients[key], 2)
                calls_.times = {era: [] for era in ERAS}
            for _ in range(batches):
                for key, calls_ in pair.items():
                    await calls_.batch(clients[key], calls)
        for era in ERAS:
            base, value = median(pair["none"].times[era]), median(pair[name].times[era])
            result[f"{name}: {era}"] = {
                "us": value * 1e6,
                "memory_us": base * 1e6,
                "added_us": (value - base) * 1e6 / 10,
                "x_memory": value / base,
            }
        store = pair[name].server.store
        if store is not None:
            await store.aclose()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer batches")
    parser.add_argument("--redis", metavar="URL", help="time this Redis")
    parser.add_argument("--postgres", metavar="URL", help="time this PostgreSQL")
    parser.add_argument(
        "--stores",
        default="memory,sqlite,redis,postgres",
        help="which to time, comma-separated (memory is always timed)",
    )
    parser.add_argument(
        "--calls",
        action="store_true",
        help="time whole 10-answer calls (both eras) instead of single appends",
    )
    args = parser.parse_args()
    with servers(args) as urls:
        if args.calls:
            result = trio.run(
                measure_calls, urls, 5 if args.quick else 11, 3 if args.quick else 10
            )
            head = ("µs/call", "none", "+µs/ans", "x none")
        else:
            result = trio.run(
                measure, urls, 5 if args.quick else 15, 4 if args.quick else 20
            )
            head = ("µs/record", "memory", "added µs", "x memory")
    print(f"{'row':<24} {head[0]:>10} {head[1]:>7} {head[2]:>9} {head[3]:>9}")
    for name, row in result.items():
        print(
            f"{name:<24} {row['us']:10.1f} {row['memory_us']:7.1f}"
            f" {row['added_us']:9.1f} {row['x_memory']:9.1f}"
        )
    print(json.dumps({k: round(v["us"], 1) for k, v in result.items()}))


if __name__ == "__main__":
    main()

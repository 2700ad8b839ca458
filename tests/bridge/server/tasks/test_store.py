"""Tasks on a shared store: polled and answered on another server, resumed
after the process running them dies, steps done before it died not run again.

Two servers share one store in this process (a :class:`MemoryStore`); the one
that "dies" runs its own ``trio.run`` in a thread, which ends with its runner
in the middle of a step (as a killed process stops, nothing is written after).
``test_kill_9_*`` does the same with a real ``kill -9`` of a
``yieldmcp serve --store sqlite:PATH`` process, when the SQLite store exists.
"""

from __future__ import annotations

import contextlib
import functools
import json
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from bridge.durable.tasks import TaskDoc
from bridge.server import Server
from bridge.server.limits import ServerLimits
from bridge.server.tasks import tasks_of
from bridge.stores import JournalStore, MemoryStore
from bridge.transports.http import serve_http
from tests.bridge.http_kit import served
from tests.bridge.server.tasks.kit import TaskWire
from tests.fixtures import task_tools as tools

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

QUICK = ServerLimits(task_lease=0.5)


@contextlib.asynccontextmanager
async def _two_servers(
    limits: ServerLimits | None = None,
) -> AsyncIterator[tuple[TaskWire, TaskWire]]:
    """Two servers on one store (two processes, in this one), a client's
    wire to each."""
    store, limits = MemoryStore(), limits or ServerLimits()
    one = Server(tools.ALL, name="one", store=store, limits=limits)
    two = Server(tools.ALL, name="two", store=store, limits=limits)
    async with (
        served(one) as first,
        served(two) as second,
        httpx.AsyncClient(timeout=30) as http,
    ):
        yield TaskWire(http, first), TaskWire(http, second)


async def test_a_task_made_on_one_server_is_answered_and_polled_on_another() -> None:
    async with _two_servers() as (on_one, on_two):
        with trio.fail_after(30):
            task_id = (await on_one.call("ask_ok"))["taskId"]
            waiting = await on_two.until(task_id, "input_required")
            assert list(waiting["inputRequests"]) == ["ok@0"]
            await on_two.update(task_id, {"ok@0": {"action": "decline"}})
            done = await on_two.until(task_id)
    assert done["result"]["content"][0]["text"] == "answer: decline"


async def test_a_task_parked_by_a_version_before_placed_keys_takes_its_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A version before f73e0f9 keyed a task's question "ok", not "ok@0". Its
    # client answers "ok"; the new version asked the question again instead.
    from bridge.server.calls import rounds

    placed = rounds.wire_key
    monkeypatch.setattr(
        rounds, "wire_key", lambda key, question, **_: placed(key, question)
    )
    async with _two_servers() as (on_old, on_new):
        with trio.fail_after(30):
            task_id = (await on_old.call("ask_ok"))["taskId"]
            waiting = await on_old.until(task_id, "input_required")
            assert list(waiting["inputRequests"]) == ["ok"]
            monkeypatch.setattr(rounds, "wire_key", placed)  # the new version
            await on_new.update(task_id, {"ok": {"action": "decline"}})
            done = await on_new.until(task_id, "completed")
    assert done["status"] == "completed"
    assert done["result"]["content"][0]["text"] == "answer: decline"


async def test_a_cancel_on_another_server_frees_the_place_at_once() -> None:
    # The process that parked the task learned of the cancel only at its
    # next recovery pass (half a lease: 15 s by default), and refused the
    # caller -32000 until then.
    async with _two_servers(ServerLimits(max_tasks_per_caller=1)) as (on_one, on_two):
        with trio.fail_after(30):
            task_id = (await on_one.call("ask_ok"))["taskId"]
            await on_one.until(task_id, "input_required")
            await on_two.cancel(task_id)
            assert (await on_two.until(task_id))["status"] == "cancelled"
            again = await on_one.call("ask_ok")
    assert again["status"] == "working"


class _Doomed:
    """A server in a ``trio.run`` of its own, in a thread, that can be ended."""

    def __init__(self, store: JournalStore) -> None:
        self.store = store
        self.url: str | None = None
        self.ready = threading.Event()
        self.end = threading.Event()
        self.thread = threading.Thread(target=trio.run, args=(self._main,))

    async def _main(self) -> None:
        server = Server(tools.ALL, name="doomed", store=self.store, limits=QUICK)
        async with trio.open_nursery() as nursery:
            start = functools.partial(serve_http, server, "127.0.0.1", 0)
            self.url = await nursery.start(start)
            self.ready.set()
            await trio.to_thread.run_sync(self.end.wait)
            nursery.cancel_scope.cancel()  # and its runners with the run


def _runs(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()] if path.exists() else []


async def test_a_task_whose_server_died_is_resumed_where_it_was(
    tmp_path: Path,
) -> None:
    store = MemoryStore()
    counter = tmp_path / "steps.txt"
    doomed = _Doomed(store)
    doomed.thread.start()
    try:
        await trio.to_thread.run_sync(doomed.ready.wait)
        assert doomed.url is not None
        async with httpx.AsyncClient(timeout=30) as http:
            wire = TaskWire(http, doomed.url)
            arguments: dict[str, Any] = {"path": str(counter), "pause": 0.5}
            with trio.fail_after(30):
                task_id = (await wire.call("counted_steps", **arguments))["taskId"]
                while len(_runs(counter)) < 2:
                    await trio.sleep(0.01)
    finally:
        doomed.end.set()
        await trio.to_thread.run_sync(doomed.thread.join)
    died_after = _runs(counter)
    assert len(died_after) < 5  # it died in the middle
    heir = Server(tools.ALL, name="heir", store=store, limits=QUICK)
    async with served(heir) as url, httpx.AsyncClient(timeout=30) as http:
        wire = TaskWire(http, url)
        with trio.fail_after(30):
            done = await wire.until(task_id)
    assert done["status"] == "completed"
    assert done["result"]["content"][0]["text"].startswith("ran 5 steps, total 15")
    runs = _runs(counter)
    assert sorted(set(runs)) == [1, 2, 3, 4, 5]
    for number in died_after[:-1]:
        assert runs.count(number) == 1  # done before the death: never again


async def test_a_task_that_can_no_longer_run_fails_instead_of_looping() -> None:
    store = MemoryStore()
    stale = TaskDoc.new(
        tool="sleepy",
        arguments={"seconds": "not a number any more"},
        capabilities={},
        ttl_ms=60_000,
        poll_ms=100,
        principal=None,
        now=time.time(),
    )
    store.put("task", "stale", stale.to_json(), expect=0)
    server = Server(tools.ALL, name="heir", store=store, limits=QUICK)
    async with served(server) as url, httpx.AsyncClient(timeout=30) as http:
        wire = TaskWire(http, url)
        with trio.fail_after(30):
            done = await wire.until("stale")
    assert done["status"] == "failed"
    assert done["error"]["code"] == -32603


async def test_a_cancel_on_another_server_stops_the_run() -> None:
    store = MemoryStore()
    one = Server(tools.ALL, name="one", store=store)
    two = Server(tools.ALL, name="two", store=store)
    async with (
        served(one) as first,
        served(two) as second,
        httpx.AsyncClient(timeout=30) as http,
    ):
        with trio.fail_after(30):
            task_id = (await TaskWire(http, first).call("sleepy", seconds=60))["taskId"]
            await TaskWire(http, second).cancel(task_id)
        # well within the lease's renewal (10 s): the run reads its task often
        with trio.fail_after(5):
            while tasks_of(one).running:
                await trio.sleep(0.02)


_HUGE_NO_RESULT = json.dumps({"k": "x", "d": "\x1b[2J" + "z" * 1_000_000})


def _damage_journal(damage: str, where: str, task_id: str) -> None:
    """Put in the task's journal what no writer of ours writes."""
    if damage == "redis-string":
        import redis

        with redis.Redis.from_url(where) as raw:
            key = f"yieldmcp:s:{json.dumps(['call', task_id])}"
            raw.delete(key)
            raw.set(key, "not a stream")
        return
    import sqlite3

    record = "not json" if damage == "not-json" else _HUGE_NO_RESULT
    with sqlite3.connect(where.removeprefix("sqlite:")) as conn:
        conn.execute("UPDATE records SET record = ?", (record,))


@pytest.mark.parametrize("damage", ["not-json", "no-result", "redis-string"])
async def test_a_task_whose_journal_cannot_be_read_fails_once(
    damage: str,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    request: pytest.FixtureRequest,
) -> None:
    # StoreUnreadable is a StoreError, so a record no writer of ours stored
    # was taken for an outage: the task was tried again every second, for
    # ever, "working" to its client. One that read as JSON but was not a
    # record was logged whole, at ERROR with a traceback (a 5 MB line). A
    # journal that is a Redis string failed every change of the task (each
    # moves the journal's expiry on): it was neither ended nor cancellable.
    import logging

    from bridge.stores import open_store
    from tests.fixtures import attack_tools

    where = (
        request.getfixturevalue("redis_url")
        if damage.startswith("redis")
        else f"sqlite:{tmp_path / 'store.sqlite3'}"
    )
    server = Server([attack_tools.long_then_ask], name="one", store=open_store(where))
    async with served(server) as url, httpx.AsyncClient(timeout=30) as http:
        wire = TaskWire(http, url)
        with trio.fail_after(30):
            ran = str(tmp_path / "ran")
            made = await wire.call("long_then_ask", path=ran, seconds=0)
            task_id = made["taskId"]
            await wire.until(task_id, "input_required")
            _damage_journal(damage, where, task_id)
            caplog.set_level(logging.WARNING)
            await wire.answer(task_id, "ok", {"action": "accept"})
            done = await wire.until(task_id)
            await trio.sleep(2)  # past a retry, had there been one
            await wire.cancel(task_id)  # answered: the task can change
    assert done["status"] == "failed", done
    assert done["error"]["message"] == (
        "Internal error: the task's journal in the store cannot be read"
    )
    assert all(r.exc_info is None for r in caplog.records), caplog.text[:2000]
    assert len(caplog.text) < 2000, caplog.text[:2000]
    said = [r.getMessage() for r in caplog.records]
    assert [m for m in said if "its journal cannot be read" in m] == [
        f"task {task_id}: its journal cannot be read; it fails"
    ]
    assert not [m for m in said if "the store failed" in m], said  # no retries


ODD_TASK_DOCUMENTS = {
    # JSON objects, so the store reads them: only their shape is not a task's.
    "string-time": ({"created": "yesterday"}, "a field is not of its type"),
    "no-tool": ({"tool": None}, "its tool is not text"),
    "token-claims-as-caller": ({"caller": {"sub": "eve"}}, "not of its type"),
    "error-of-words": (
        {"status": "failed", "error": {"code": "x", "message": 5}},
        "its error is not a JSON-RPC error",
    ),
    "result-not-content": (
        {"status": "completed", "result": {"content": "\x1b[2Jnot a list"}},
        "its result is not a tool's result",
    ),
}


@pytest.mark.parametrize("case", sorted(ODD_TASK_DOCUMENTS))
async def test_tasks_get_of_a_task_document_no_writer_of_ours_made_is_one_line(
    case: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # It logged "internal error while handling a request" with a traceback,
    # and an odd result or error went to the client as it was stored.
    import json
    import logging
    import sqlite3

    from bridge.jsonrpc.errors import STORE_UNREADABLE
    from bridge.stores import open_store
    from tests.bridge.server.tasks.kit import RpcError

    change, why = ODD_TASK_DOCUMENTS[case]
    path = tmp_path / "store.sqlite3"
    server = Server([tools.sleepy], name="one", store=open_store(f"sqlite:{path}"))
    caplog.set_level(logging.WARNING)
    async with served(server) as url, httpx.AsyncClient(timeout=30) as http:
        wire = TaskWire(http, url)
        with trio.fail_after(30):
            task_id = (await wire.call("sleepy", seconds=0))["taskId"]
            await wire.until(task_id, "completed")
            with sqlite3.connect(path) as conn:
                ((text,),) = conn.execute(
                    "SELECT value FROM docs WHERE id = ?", (task_id,)
                ).fetchall()
                odd = {**json.loads(text), **change}
                conn.execute(
                    "UPDATE docs SET value = ? WHERE id = ?", (json.dumps(odd), task_id)
                )
            with pytest.raises(RpcError) as refused:
                await wire.get(task_id)
            with pytest.raises(RpcError) as cancelled:
                await wire.cancel(task_id)
            with pytest.raises(RpcError) as updated:
                await wire.update(task_id, {"ok": {"action": "accept"}})
    for error in (refused, cancelled, updated):
        assert (error.value.code, error.value.message) == (-32603, STORE_UNREADABLE)
    said = [r for r in caplog.records if task_id in r.getMessage()]
    assert said, caplog.text
    assert all(r.exc_info is None for r in caplog.records), caplog.text
    assert why in said[0].getMessage()
    assert "\x1b" not in caplog.text
    assert "yesterday" not in caplog.text

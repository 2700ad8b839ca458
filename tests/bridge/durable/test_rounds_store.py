"""2026-07-28 rounds with a store, in one process: what a user relies on.

With ``Server(store=...)``, a call's journal lives in the store, written
ahead of the round; the client carries only a small sealed reference, used
once. These tests run real servers over in-memory JSON-RPC sessions against a
real :class:`~bridge.stores.MemoryStore`.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest
import trio
from pydantic import BaseModel

from bridge.durable.log import CALLS
from bridge.server import Server, prompt
from bridge.server.limits import ServerLimits
from bridge.stores import Document, MemoryStore, StoreUnavailable
from runtime import Context, Image, Op, Text, tool
from runtime.errors import PeerError
from tests.bridge.wire import modern_meta, wire_peer


class Note(BaseModel):
    text: str


class Ok(BaseModel):
    ok: bool


def _counting_tool(runs: list[str], questions: int = 1) -> Any:
    """Asks ``questions`` questions, with a step before each; ``runs`` counts
    the steps' executions."""

    def work(n: int) -> str:
        runs.append(f"work{n}")
        return f"w{n}"

    @tool(name="survey", elicits={"note": Note}, version="1")
    def survey(ctx: Context) -> Op[str]:
        parts: list[str] = []
        for n in range(questions):
            parts.append((yield from ctx.step_as(f"work{n}")(work, n)))
            answer = yield from ctx.elicit("note", f"Question {n}?")
            parts.append(answer.content.text if answer.content else "-")
        return " ".join(parts)

    return survey


def _answer(text: str) -> dict[str, Any]:
    return {"note": {"action": "accept", "content": {"text": text}}}


async def _call(
    server: Server,
    state: str | None = None,
    responses: Mapping[str, Any] | None = None,
    name: str = "survey",
) -> Any:
    """One round's result, or the JSON-RPC error it got."""
    params: dict[str, Any] = {"name": name, "arguments": {}, "_meta": modern_meta()}
    if state is not None:
        params["requestState"] = state
    if responses is not None:
        params["inputResponses"] = dict(responses)
    async with wire_peer(server) as peer:
        try:
            return await peer.request("tools/call", params)
        except PeerError as exc:
            return exc


def _server(items: Sequence[Any], store: Any, key: bytes, **kwargs: Any) -> Server:
    return Server(list(items), state_keys=[key], store=store, **kwargs)


def _records(store: MemoryStore) -> list[Mapping[str, Any]]:
    ids = [id for id, _doc in store.scan(CALLS)]
    assert len(ids) == 1
    return store.read(CALLS, ids[0])


async def test_the_state_stays_the_same_size_however_many_rounds() -> None:
    key, runs = secrets.token_bytes(32), []
    survey = _counting_tool(runs, questions=6)
    server = _server([survey], MemoryStore(), key)
    sizes: list[int] = []
    result = await _call(server)
    while result.get("resultType") == "input_required":
        sizes.append(len(result["requestState"]))
        result = await _call(server, result["requestState"], _answer("x" * 500))
    assert result["content"][0]["text"].count("x" * 500) == 6
    assert len(sizes) == 6
    assert max(sizes) - min(sizes) <= 4
    assert max(sizes) < 400
    assert runs == [f"work{n}" for n in range(6)]  # each step ran once


async def test_the_journal_is_in_the_store_in_the_call_records_format() -> None:
    key, runs, store = secrets.token_bytes(32), [], MemoryStore()
    server = _server([_counting_tool(runs, questions=2)], store, key)
    first = await _call(server)
    second = await _call(server, first["requestState"], _answer("hi"))
    assert second["resultType"] == "input_required"
    records = _records(store)
    assert [r["k"] for r in records if "k" in r] == ["0", "1", "2"]
    assert "w0" in str(records[0]["r"])
    assert "w1" in str(records[2]["r"])
    assert "hi" in str(records[1]["r"])
    state = server.sealer.open(second["requestState"], purpose="tools/call")
    assert state["round"] == 2
    assert "journal" not in state


async def test_a_used_state_is_refused_with_a_clear_error() -> None:
    key, runs = secrets.token_bytes(32), []
    server = _server([_counting_tool(runs, questions=2)], MemoryStore(), key)
    first = await _call(server)
    state = first["requestState"]
    second = await _call(server, state, _answer("a"))
    assert second["resultType"] == "input_required"
    again = await _call(server, state, _answer("b"))
    assert isinstance(again, PeerError)
    assert again.code == -32602
    assert again.message.startswith("requestState already used")
    assert again.data == {"reason": "request_state_used"}
    # A tampered state still gets the one uniform error.
    forged = await _call(server, state[:-2] + "AA", _answer("b"))
    assert isinstance(forged, PeerError)
    assert forged.message == "Invalid or expired requestState"
    assert runs == ["work0", "work1"]


async def test_a_retry_of_a_finished_calls_last_round_gets_its_result_again() -> None:
    """The last round wrote the call's end, then its reply was lost (its
    process died, found by the random-kills test): the client's retry with
    the same state gets the same result, and nothing runs again. An earlier
    round's state is still refused."""
    key, runs, store = secrets.token_bytes(32), [], MemoryStore()
    servers = [_server([_counting_tool(runs, 2)], store, key) for _ in range(2)]
    first = await _call(servers[0])
    second = await _call(servers[0], first["requestState"], _answer("a"))
    done = await _call(servers[0], second["requestState"], _answer("b"))
    assert done["content"][0]["text"] == "w0 a w1 b"
    again = await _call(servers[1], second["requestState"], _answer("b"))
    assert again["content"] == done["content"]
    assert again.get("structuredContent") == done.get("structuredContent")
    assert runs == ["work0", "work1"]  # nothing ran again
    earlier = await _call(servers[1], first["requestState"], _answer("a"))
    assert isinstance(earlier, PeerError)
    assert earlier.data == {"reason": "request_state_used"}


async def test_a_retry_with_other_answers_is_refused_not_given_the_result() -> None:
    key, runs = secrets.token_bytes(32), []
    server = _server([_counting_tool(runs)], MemoryStore(), key)
    first = await _call(server)
    done = await _call(server, first["requestState"], _answer("a"))
    assert done["content"][0]["text"] == "w0 a"
    other = await _call(server, first["requestState"], _answer("b"))
    assert isinstance(other, PeerError)
    assert other.data == {"reason": "request_state_used"}
    none = await _call(server, first["requestState"])
    assert isinstance(none, PeerError)
    assert none.data == {"reason": "request_state_used"}
    assert runs == ["work0"]


@tool(name="draw", elicits={"note": Note}, version="1")
def _draw(ctx: Context) -> Op[Any]:
    answer = yield from ctx.elicit("note", "What?")
    text = answer.content.text if answer.content else "-"
    if text == "fail":
        raise ValueError("cannot draw that")
    return [Image(data="aGk=", mime_type="image/png"), Text(text=text)]


@pytest.mark.parametrize("what", ["cat", "fail"])
async def test_a_kept_result_is_the_result_as_sent_content_blocks_and_errors_too(
    what: str,
) -> None:
    """The retry gets the result as the lost reply carried it: content blocks
    stay blocks (not their JSON), and a tool's error result is kept too."""
    key, store = secrets.token_bytes(32), MemoryStore()
    servers = [_server([_draw], store, key) for _ in range(2)]
    first = await _call(servers[0], name="draw")
    done = await _call(servers[0], first["requestState"], _answer(what), name="draw")
    again = await _call(servers[1], first["requestState"], _answer(what), name="draw")
    assert again == done
    if what == "fail":
        assert done["isError"] is True  # one error id, logged once
        assert "internal error (error id" in done["content"][0]["text"]
    else:
        assert done["content"][0] == {
            "type": "image", "data": "aGk=", "mimeType": "image/png"
        }  # fmt: skip


async def test_a_result_past_the_journal_bound_is_not_kept_and_its_retry_refused() -> (
    None
):
    key, runs = secrets.token_bytes(32), []
    limits = ServerLimits(max_journal_bytes=4096)
    server = _server([_counting_tool(runs)], MemoryStore(), key, limits=limits)
    first = await _call(server)
    big = "x" * 3000
    done = await _call(server, first["requestState"], _answer(big))
    assert done["content"][0]["text"] == f"w0 {big}"
    again = await _call(server, first["requestState"], _answer(big))
    assert isinstance(again, PeerError)
    assert again.data == {"reason": "request_state_used"}
    assert runs == ["work0"]


async def test_another_server_on_the_same_store_and_key_finishes_the_call() -> None:
    key, runs, store = secrets.token_bytes(32), [], MemoryStore()
    first = await _call(_server([_counting_tool(runs, 2)], store, key))
    later = _server([_counting_tool(runs, 2)], store, key)  # a "restart"
    second = await _call(later, first["requestState"], _answer("a"))
    third = await _call(later, second["requestState"], _answer("b"))
    assert third["content"][0]["text"] == "w0 a w1 b"
    assert runs == ["work0", "work1"]
    state = later.sealer.open(second["requestState"], purpose="tools/call")
    assert "journal" not in state  # it came from the store


async def test_an_invalid_answer_gives_the_state_back() -> None:
    key, runs, store = secrets.token_bytes(32), [], MemoryStore()
    server = _server([_counting_tool(runs)], store, key)
    first = await _call(server)
    bad = {"note": {"action": "accept", "content": {"text": 5}}}
    refused = await _call(server, first["requestState"], bad)
    assert isinstance(refused, PeerError)
    assert refused.code == -32602
    assert "is not a valid answer" in refused.message
    assert len(_records(store)) == 1  # the step's result, kept for the retry
    done = await _call(server, first["requestState"], _answer("fixed"))
    assert done["content"][0]["text"] == "w0 fixed"


async def test_call_documents_and_streams_expire_with_the_state() -> None:
    key, runs, store = secrets.token_bytes(32), [], MemoryStore()
    server = _server([_counting_tool(runs, 2)], store, key, state_ttl=30.0)
    first = await _call(server)
    second = await _call(server, first["requestState"], _answer("a"))
    [(call_id, doc)] = list(store.scan(CALLS))
    assert doc.expires_at is not None
    assert time.time() + 20 < doc.expires_at <= time.time() + 31
    assert store.sweep(time.time() + 60) == 2  # the document and the stream
    assert store.read(CALLS, call_id) == []
    gone = await _call(server, second["requestState"], _answer("b"))
    assert isinstance(gone, PeerError)
    assert gone.message == "Invalid or expired requestState"


# --- write-ahead ---------------------------------------------------------------------


@pytest.fixture
def shared_store() -> Iterator[MemoryStore]:
    store = MemoryStore()
    global _OBSERVED
    _OBSERVED = store
    return store


_OBSERVED: MemoryStore | None = None


def _stored_keys() -> list[str]:
    assert _OBSERVED is not None
    ids = [id for id, _doc in _OBSERVED.scan(CALLS)]
    if not ids:
        return []
    return [r["k"] for r in _OBSERVED.read(CALLS, ids[0]) if "k" in r]


def first_step() -> str:
    return "one"


def look() -> list[str]:
    return _stored_keys()  # what the store holds when this step runs


@tool(name="ahead", elicits={"note": Note}, version="1")
def ahead(ctx: Context) -> Op[str]:
    yield from ctx.step(first_step)
    answer = yield from ctx.elicit("note", "Say something")
    seen = yield from ctx.step(look)
    more = yield from ctx.step_as("again")(look)
    text = answer.content.text if answer.content else "-"
    return f"{text}: {','.join(seen)} / {','.join(more)}"


async def test_answers_and_step_results_reach_the_store_before_the_next_step(
    shared_store: MemoryStore,
) -> None:
    key = secrets.token_bytes(32)
    server = _server([ahead], shared_store, key)
    first = await _call(server, name="ahead")
    done = await _call(server, first["requestState"], _answer("hi"), name="ahead")
    # When `look` ran, the step before it and the answer were stored; when
    # `again` ran, `look`'s own result was too.
    assert done["content"][0]["text"] == "hi: 0,1 / 0,1,2"


# --- two retries at once ---------------------------------------------------------


class _Interleaved:
    """A real MemoryStore, called from threads, whose reads of a call's
    document wait for each other: two retries both read the document before
    either writes it, the race the compare-and-swap must settle."""

    blocking = True

    def __init__(self) -> None:
        self.inner = MemoryStore()
        self.barrier: threading.Barrier | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def get(self, namespace: str, id: str) -> Document | None:
        found = self.inner.get(namespace, id)
        if self.barrier is not None and namespace == CALLS:
            self.barrier.wait(timeout=30)
        return found

    def get_and_read(
        self, namespace: str, id: str
    ) -> tuple[Document | None, list[Mapping[str, Any]]]:
        found = self.inner.get_and_read(namespace, id)
        if self.barrier is not None and namespace == CALLS:
            self.barrier.wait(timeout=30)
        return found


async def test_two_retries_with_the_same_state_exactly_one_proceeds() -> None:
    key, runs, store = secrets.token_bytes(32), [], _Interleaved()
    servers = [_server([_counting_tool(runs, 2)], store, key) for _ in range(2)]
    first = await _call(servers[0])
    store.barrier = threading.Barrier(2)
    results: list[Any] = [None, None]

    async def retry(index: int) -> None:
        results[index] = await _call(
            servers[index], first["requestState"], _answer(f"r{index}")
        )

    async with trio.open_nursery() as nursery:
        for index in range(2):
            nursery.start_soon(retry, index)
    refused = [r for r in results if isinstance(r, PeerError)]
    went_on = [r for r in results if not isinstance(r, PeerError)]
    assert len(refused) == 1
    assert len(went_on) == 1
    assert refused[0].data == {"reason": "request_state_used"}
    assert went_on[0]["resultType"] == "input_required"
    assert runs == ["work0", "work1"]  # the second step ran once


async def test_a_round_that_died_is_taken_over_after_its_claim() -> None:
    key, runs, store = secrets.token_bytes(32), [], MemoryStore()
    started, hang = trio.Event(), trio.Event()

    def slow() -> str:
        runs.append("slow")
        return "done"

    @tool(name="survey", elicits={"note": Note}, version="1")
    def survey(ctx: Context) -> Op[str]:
        answer = yield from ctx.elicit("note", "?")
        yield from ctx.step_as("wait")(_wait_for, started, hang)
        done = yield from ctx.step(slow)
        return f"{answer.content.text if answer.content else '-'} {done}"

    limits = ServerLimits(round_claim_seconds=3.0)
    server = _server([survey], store, key, limits=limits)
    first = await _call(server)
    async with trio.open_nursery() as nursery:  # the round "dies" in its step
        nursery.start_soon(_call, server, first["requestState"], _answer("a"))
        await started.wait()
        nursery.cancel_scope.cancel()
    hang.set()
    held = await _call(server, first["requestState"], _answer("a"))
    assert isinstance(held, PeerError)  # claimed by the round that died...
    assert held.data == {"reason": "request_state_used"}
    await trio.sleep(3.2)  # ...until its claim runs out
    done = await _call(server, first["requestState"], _answer("a"))
    assert done["content"][0]["text"] == "a done"


async def _wait_for(started: trio.Event, event: trio.Event) -> str:
    started.set()
    await event.wait()
    return "waited"


async def test_a_store_that_lost_rounds_refuses_the_state_as_invalid() -> None:
    key, runs, store = secrets.token_bytes(32), [], MemoryStore()
    server = _server([_counting_tool(runs, 2)], store, key)
    first = await _call(server)
    [(call_id, before)] = list(store.scan(CALLS))
    second = await _call(server, first["requestState"], _answer("a"))
    store.put(CALLS, call_id, before.value)  # restored from an older backup
    lost = await _call(server, second["requestState"], _answer("b"))
    assert isinstance(lost, PeerError)
    assert lost.message == "Invalid or expired requestState"


class _Partitioned:
    """A real MemoryStore as one process sees it: while ``cut``, that
    process's writes fail (the store is unreachable from it), as they would
    for a process cut off from the network; other processes use ``inner``."""

    def __init__(self, inner: MemoryStore) -> None:
        self.inner = inner
        self.cut = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def put(self, *args: Any, **kwargs: Any) -> int:
        if self.cut:
            raise StoreUnavailable("cut off")
        return self.inner.put(*args, **kwargs)

    def put_and_append(self, *args: Any, **kwargs: Any) -> int:
        if self.cut:
            raise StoreUnavailable("cut off")
        return self.inner.put_and_append(*args, **kwargs)


async def test_a_live_round_keeps_its_claim_through_a_step_longer_than_it() -> None:
    """A step (or a sleep) that outlasts the claim does not let a retry
    take the round over while the round still runs it: the step would run
    twice, the second time beside the first."""
    key, ran, store = secrets.token_bytes(32), [], MemoryStore()
    started, gate = trio.Event(), trio.Event()

    async def long_step() -> str:
        ran.append("long")
        if len(ran) == 1:  # a second run (the bug) must not wait on the gate
            started.set()
            await gate.wait()
        return "done"

    @tool(name="survey", elicits={"note": Note}, version="1")
    def survey(ctx: Context) -> Op[str]:
        answer = yield from ctx.elicit("note", "?")
        done = yield from ctx.step(long_step)
        return f"{answer.content.text if answer.content else '-'} {done}"

    limits = ServerLimits(round_claim_seconds=1.0)
    servers = [_server([survey], store, key, limits=limits) for _ in range(2)]
    state = (await _call(servers[0]))["requestState"]
    outcome: list[Any] = []

    async def running() -> None:
        outcome.append(await _call(servers[0], state, _answer("a")))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(running)
        await started.wait()
        await trio.sleep(2.5)  # two and a half claims into the step
        retried = await _call(servers[1], state, _answer("a"))
        gate.set()
    assert isinstance(retried, PeerError)
    assert retried.data == {"reason": "request_state_used"}
    assert outcome[0]["content"][0]["text"] == "a done"
    assert ran == ["long"]


@pytest.mark.parametrize("then", ["a step", "a question"])
async def test_a_round_cut_off_from_the_store_is_taken_over_and_stops_at_its_next_write(
    then: str,
) -> None:
    key, ran, store = secrets.token_bytes(32), [], MemoryStore()
    started, gate = trio.Event(), trio.Event()
    seen_by_stalled = _Partitioned(store)

    async def first() -> str:
        ran.append("first")
        if len(ran) == 1:  # the first round to run it stalls past its claim
            started.set()
            await gate.wait()
        return "one"

    def second() -> str:
        ran.append("second")
        return "two"

    @tool(name="survey", elicits={"note": Note, "more": Note}, version="1")
    def survey(ctx: Context) -> Op[str]:
        answer = yield from ctx.elicit("note", "?")
        one = yield from ctx.step(first)
        if then == "a step":  # the stalled round's next write is before it
            two = yield from ctx.step(second)
        else:  # its next write is the end of its round
            two = (yield from ctx.elicit("more", "more?")).action
        return f"{answer.content.text if answer.content else '-'} {one} {two}"

    limits = ServerLimits(round_claim_seconds=1.0)
    cut_off = _server([survey], seen_by_stalled, key, limits=limits)
    server = _server([survey], store, key, limits=limits)
    state = (await _call(server))["requestState"]
    outcome: list[Any] = []

    async def stalled() -> None:
        outcome.append(await _call(cut_off, state, _answer("a")))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(stalled)
        await started.wait()
        seen_by_stalled.cut = True  # its claim can no longer be renewed
        await trio.sleep(1.2)  # and runs out
        done = await _call(server, state, _answer("a"))  # takes the round over
        seen_by_stalled.cut = False
        gate.set()
    assert outcome[0].data == {"reason": "request_state_used"}
    keys = [r["k"] for r in _records(store) if "k" in r]
    # The stalled round wrote nothing after losing (its step's result would
    # be a second "1"); the round that took over wrote each once, and the
    # last step's result with the call's end.
    assert keys == (["0", "1", "2"] if then == "a step" else ["0", "1"])
    if then == "a step":
        assert done["content"][0]["text"] == "a one two"
        assert ran == ["first", "first", "second"]  # the stalled round stopped
    else:
        assert list(done["inputRequests"]) == ["more"]


async def test_a_prompt_that_asks_keeps_its_journal_in_the_store_too() -> None:
    @prompt(name="greet", elicits={"note": Note})
    def greet(ctx: Context) -> Op[str]:
        answer = yield from ctx.elicit("note", "Your name?")
        return f"Hello {answer.content.text if answer.content else '-'}"

    key, store = secrets.token_bytes(32), MemoryStore()
    server = _server([greet], store, key)
    params: dict[str, Any] = {"name": "greet", "arguments": {}, "_meta": modern_meta()}
    async with wire_peer(server) as peer:
        first = await peer.request("prompts/get", params)
        retry = {**params, "requestState": first["requestState"]}
        retry["inputResponses"] = _answer("Ada")
        done = await peer.request("prompts/get", retry)
        again = await peer.request("prompts/get", retry)  # its reply was lost
    assert done["messages"][0]["content"]["text"] == "Hello Ada"
    assert again["messages"] == done["messages"]  # kept, not run again
    [(_call_id, doc)] = list(store.scan(CALLS))
    assert doc.value["done"] is True


async def test_servers_with_and_without_a_store_refuse_each_others_states() -> None:
    key, runs = secrets.token_bytes(32), []
    durable = _server([_counting_tool(runs, 2)], MemoryStore(), key)
    stateless = _server([_counting_tool(runs, 2)], None, key)
    for made, given in ((durable, stateless), (stateless, durable)):
        first = await _call(made)
        refused = await _call(given, first["requestState"], _answer("a"))
        assert isinstance(refused, PeerError)
        assert refused.message == "Invalid or expired requestState"
    assert runs == ["work0", "work0"]  # nothing ran again on the wrong server


class _Failing:
    """A real MemoryStore whose writes fail while ``down`` is set."""

    blocking = False

    def __init__(self) -> None:
        self.inner = MemoryStore()
        self.down = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def put(self, *args: Any, **kwargs: Any) -> int:
        if self.down:
            raise StoreUnavailable("the store is down")
        return self.inner.put(*args, **kwargs)

    def put_and_append(self, *args: Any, **kwargs: Any) -> int:
        if self.down:
            raise StoreUnavailable("the store is down")
        return self.inner.put_and_append(*args, **kwargs)


async def test_a_store_that_fails_fails_the_request_not_the_call() -> None:
    key, runs, store = secrets.token_bytes(32), [], _Failing()
    server = _server([_counting_tool(runs)], store, key)
    first = await _call(server)
    store.down = True
    failed = await _call(server, first["requestState"], _answer("a"))
    assert isinstance(failed, PeerError)
    assert (failed.code, failed.message) == (
        -32603,
        "Internal error: the server's store failed; try again",
    )
    store.down = False  # the store is back: the same state goes on
    done = await _call(server, first["requestState"], _answer("a"))
    assert done["content"][0]["text"] == "w0 a"

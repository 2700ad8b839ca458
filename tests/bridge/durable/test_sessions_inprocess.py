"""Durable 2025-11-25 sessions in process: two servers sharing one store.

Each server stands for a process. The first serves a session until it is torn
down mid-call; the second takes the session and its call on from the store
when the client comes back to it, by replaying the call's journal: recorded
answers and step results are reused, and no question is asked twice.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from bridge.durable.live import ASKED, SESSIONS
from bridge.durable.log import CALLS
from bridge.server import Server
from bridge.server.limits import ServerLimits
from bridge.stores import MemoryStore
from bridge.transports.http import HttpLimits
from tests.bridge.http_kit import Raw, SseReader, message_of, served
from tests.fixtures import session_tools

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

TOOLS = [session_tools.interview, session_tools.sequence]


@pytest.fixture
def counter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "counter"
    monkeypatch.setenv("SESSION_TOOLS_COUNTER", str(path))
    monkeypatch.setenv("SESSION_TOOLS_SLOW", "0")
    return path


def _ran(counter: Path) -> list[str]:
    return counter.read_text().splitlines() if counter.exists() else []


def _call(raw: Raw, request_id: Any, name: str) -> dict[str, Any]:
    return raw.request(request_id, "tools/call", {"name": name, "arguments": {}})


async def _next_message(reader: SseReader) -> tuple[str, dict[str, Any]]:
    """The next message event (skipping the priming event) and its id."""
    while True:
        event = await reader.next()
        assert event is not None, "the stream ended early"
        if event.data:
            assert event.id
            return event.id, message_of(event)


def _accept(ask: dict[str, Any], **content: str) -> dict[str, Any]:
    answer = {"action": "accept", "content": content}
    return {"jsonrpc": "2.0", "id": ask["id"], "result": answer}


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=20) as client:
        yield client


async def test_a_parked_call_completes_on_another_server_sharing_the_store(
    http: httpx.AsyncClient, counter: Path
) -> None:
    store = MemoryStore()
    with trio.fail_after(30):
        async with served(Server(TOOLS, store=store)) as first_url:
            raw = Raw(http, first_url)
            await raw.initialize()
            async with raw.stream("POST", _call(raw, 7, "interview")) as (_, reader):
                _, ask_name = await _next_message(reader)
                assert ask_name["method"] == "elicitation/create"
                posted = await raw.post(_accept(ask_name, name="Ada"))
                assert posted.status_code == 202
                _, log = await _next_message(reader)
                assert log["method"] == "notifications/message"
                last_id, ask_colour = await _next_message(reader)
                assert ask_colour["method"] == "elicitation/create"
        # The first server is gone, mid-call. The client goes on with the
        # second one: it answers, then resumes the call's stream.
        async with served(Server(TOOLS, store=store)) as second_url:
            raw.url = second_url
            posted = await raw.post(_accept(ask_colour, colour="green"))
            assert posted.status_code == 202
            async with raw.stream("GET", last_event_id=last_id) as (response, reader):
                assert response.status_code == 200
                rest = [raw.check(message_of(e)) for e in await reader.rest()]
    assert [m.get("method") for m in rest] == [None]  # no question asked again
    assert rest[-1]["id"] == 7
    text = rest[-1]["result"]["content"][0]["text"]
    assert text == "hello Ada, who likes green"
    assert _ran(counter) == ["greet Ada"]  # the step ran once, on the first
    assert list(store.scan(CALLS)) == [] or all(
        "done" in doc.value for _id, doc in store.scan(CALLS)
    )


@pytest.mark.parametrize("late", [True, False], ids=["answered-late", "in-time"])
async def test_a_question_times_out_across_processes_from_when_it_was_asked(
    http: httpx.AsyncClient, counter: Path, late: bool
) -> None:
    # The timeout began again in the process that took the call on, so an
    # answer posted long past it, while no process held the call, was taken.
    store = MemoryStore()
    with trio.fail_after(30):
        async with served(Server(TOOLS, store=store, elicitation_timeout=1.5)) as url:
            raw = Raw(http, url)
            await raw.initialize()
            async with raw.stream("POST", _call(raw, 7, "interview")) as (_, reader):
                last_id, ask_name = await _next_message(reader)
        await trio.sleep(2.0 if late else 0.0)
        async with served(Server(TOOLS, store=store, elicitation_timeout=1.5)) as url:
            raw.url = url
            posted = await raw.post(_accept(ask_name, name="Ada"))
            assert posted.status_code == 202
            async with raw.stream("GET", last_event_id=last_id) as (response, reader):
                assert response.status_code == 200
                _, then = await _next_message(reader)
                if late:
                    rest = [then] + [message_of(e) for e in await reader.rest()]
    if late:
        assert then["method"] == "notifications/cancelled"
        assert then["params"]["requestId"] == ask_name["id"]
        result = rest[-1]["result"]
        assert result["isError"] is True
        assert "elicitation/create got no reply within 1.5 s" in str(result)
        assert _ran(counter) == []
    else:  # the answer was taken: the call went on to its next question
        assert then["method"] == "notifications/message"
        assert _ran(counter) == ["greet Ada"]


async def test_questions_out_before_a_take_over_count_against_the_bound(
    http: httpx.AsyncClient,
) -> None:
    # The process taking the call on counted only the questions it sent
    # itself: with 2 out already, it sent 2 more (4 out, over a bound of 2).
    store = MemoryStore()
    limits = ServerLimits(max_questions_per_round=2)
    tools = [session_tools.sample_many]

    def answered(ask: dict[str, Any]) -> dict[str, Any]:
        reply = {"role": "assistant", "content": {"type": "text", "text": "a"}}
        return {"jsonrpc": "2.0", "id": ask["id"], "result": {**reply, "model": "m"}}

    with trio.fail_after(30):
        async with served(Server(tools, store=store, limits=limits)) as url:
            raw = Raw(http, url)
            await raw.initialize()
            params = {"name": "sample_many", "arguments": {"count": 4}}
            call = raw.request(7, "tools/call", params)
            async with raw.stream("POST", call) as (_, reader):
                _, first = await _next_message(reader)
                last_id, second = await _next_message(reader)
        async with served(Server(tools, store=store, limits=limits)) as url:
            raw.url = url
            async with raw.stream("GET", last_event_id=last_id) as (response, reader):
                assert response.status_code == 200
                with trio.move_on_after(1.0):
                    early = await reader.next()
                    assert early is None or not early.data, early.data
            for ask in (first, second):
                await raw.post(answered(ask))
            # The wait above cut that reader short: resume from the last event.
            async with raw.stream("GET", last_event_id=last_id) as (_, reader):
                _, third = await _next_message(reader)
                last_id, fourth = await _next_message(reader)
            for ask in (third, fourth):
                assert ask["method"] == "sampling/createMessage"
                await raw.post(answered(ask))
            async with raw.stream("GET", last_event_id=last_id) as (_, reader):
                _, done = await _next_message(reader)
    assert done["result"]["structuredContent"] == {"result": ["a"] * 4}


async def test_a_resumed_stream_gets_a_question_it_never_saw(
    http: httpx.AsyncClient, counter: Path
) -> None:
    store = MemoryStore()
    with trio.fail_after(30):
        async with served(Server(TOOLS, store=store)) as first_url:
            raw = Raw(http, first_url)
            await raw.initialize()
            async with raw.stream("POST", _call(raw, 8, "interview")) as (_, reader):
                priming = await reader.next()
                assert priming is not None
                assert priming.id
                _, ask_name = await _next_message(reader)
            await raw.post(_accept(ask_name, name="Bo"))
            # The answer is recorded before the call goes on past it.
            with trio.fail_after(5):
                while not any("r" in r for r in _records(store)):
                    await trio.sleep(0.01)
            await trio.sleep(0.2)
        async with served(Server(TOOLS, store=store)) as second_url:
            raw.url = second_url
            # Resuming from the question about the name: the colour question
            # comes (the client never saw it), and is the only one.
            last = str(priming.id)
            async with raw.stream("GET", last_event_id=last) as (response, reader):
                assert response.status_code == 200
                _, ask = await _next_message(reader)
                methods = [ask.get("method")]
                await raw.post(_accept(ask, colour="red"))
                rest = [raw.check(message_of(e)) for e in await reader.rest()]
    messages = [ask, *rest]
    assert [m.get("method") for m in messages if "id" in m] == [
        "elicitation/create",
        None,
    ]
    assert methods == ["elicitation/create"]
    assert "Favourite" in json.dumps(ask)
    assert rest[-1]["result"]["content"][0]["text"] == "hello Bo, who likes red"
    assert _ran(counter) == ["greet Bo"]


def _records(store: MemoryStore) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    for call_id, _doc in store.scan(CALLS):
        records.extend(dict(r) for r in store.read(CALLS, call_id))
    return records


async def test_answers_posted_to_another_server_reach_the_call(
    http: httpx.AsyncClient, counter: Path
) -> None:
    # Two live servers on one store, the client alternating between them as a
    # round-robin balancer would: every answer lands on the server that does
    # not hold the call, and is routed to the one that does.
    store = MemoryStore()
    with trio.fail_after(30):
        async with (
            served(Server(TOOLS, store=store)) as one,
            served(Server(TOOLS, store=store)) as two,
        ):
            raw = Raw(http, one)
            await raw.initialize()  # initialize on one, initialized on one
            raw.url = two
            async with raw.stream("POST", _call(raw, 9, "interview")) as (_, reader):
                raw.url = one
                _, ask_name = await _next_message(reader)
                assert (await raw.post(_accept(ask_name, name="Cy"))).status_code == 202
                _, _log = await _next_message(reader)
                _, ask_colour = await _next_message(reader)
                posted = await raw.post(_accept(ask_colour, colour="blue"))
                assert posted.status_code == 202
                rest = [raw.check(message_of(e)) for e in await reader.rest()]
    assert rest[-1]["result"]["content"][0]["text"] == "hello Cy, who likes blue"
    assert _ran(counter) == ["greet Cy"]


async def test_a_call_of_a_server_gone_mid_call_resumes_on_the_other(
    http: httpx.AsyncClient, counter: Path
) -> None:
    store = MemoryStore()
    with trio.fail_after(30):
        async with served(Server(TOOLS, store=store)) as two:
            async with served(Server(TOOLS, store=store)) as one:
                raw = Raw(http, one)
                await raw.initialize()
                request = _call(raw, 10, "interview")
                async with raw.stream("POST", request) as (_, reader):
                    last_id, ask_name = await _next_message(reader)
            # The server holding the call is gone; the client resumes its
            # stream on the other, and answers there.
            raw.url = two
            assert (await raw.post(_accept(ask_name, name="Di"))).status_code == 202
            async with raw.stream("GET", last_event_id=last_id) as (response, reader):
                assert response.status_code == 200
                _, _log = await _next_message(reader)
                _, ask_colour = await _next_message(reader)
                await raw.post(_accept(ask_colour, colour="teal"))
                rest = [raw.check(message_of(e)) for e in await reader.rest()]
    assert rest[-1]["result"]["content"][0]["text"] == "hello Di, who likes teal"
    assert _ran(counter) == ["greet Di"]


async def test_a_cancel_posted_to_another_server_reaches_the_call(
    http: httpx.AsyncClient, counter: Path
) -> None:
    store = MemoryStore()
    with trio.fail_after(30):
        async with (
            served(Server(TOOLS, store=store)) as one,
            served(Server(TOOLS, store=store)) as two,
        ):
            raw = Raw(http, one)
            await raw.initialize()
            async with raw.stream("POST", _call(raw, 11, "interview")) as (_, reader):
                _, ask = await _next_message(reader)
                assert ask["method"] == "elicitation/create"
                raw.url = two
                cancel = {
                    "jsonrpc": "2.0",
                    "method": "notifications/cancelled",
                    "params": {"requestId": 11, "reason": "changed my mind"},
                }
                assert (await raw.post(cancel)).status_code == 202
                rest = await reader.rest()  # the stream ends, with no response
            while list(store.scan(CALLS)):  # the call is forgotten
                await trio.sleep(0.01)
    sent = [json.loads(e.data) for e in rest if e.data]
    # Its question is withdrawn, and no response comes.
    assert [m.get("method") for m in sent] == ["notifications/cancelled"]
    assert sent[0]["params"]["requestId"] == ask["id"]
    assert _ran(counter) == []


async def test_a_session_ended_for_want_of_a_client_comes_back_with_its_call(
    http: httpx.AsyncClient, counter: Path
) -> None:
    # With a store, a session whose client went away is let go from memory
    # (orphan_timeout) but not lost: the client's return takes it on again,
    # in the same process, with its call.
    store = MemoryStore()
    limits = HttpLimits(orphan_timeout=0.2)
    with trio.fail_after(30):
        async with served(Server(TOOLS, store=store), limits=limits) as url:
            raw = Raw(http, url)
            await raw.initialize()
            async with raw.stream("POST", _call(raw, 12, "interview")) as (_, reader):
                priming = await reader.next()
                assert priming is not None
                _, ask_name = await _next_message(reader)
            await raw.post(_accept(ask_name, name="Ed"))
            await trio.sleep(1.0)  # the session ends here, its call let go
            last = str(priming.id)
            async with raw.stream("GET", last_event_id=last) as (response, reader):
                assert response.status_code == 200
                # The question it had not read comes again (the log line
                # it had not read either was sent: it is not sent twice).
                _, ask_colour = await _next_message(reader)
                assert ask_colour["method"] == "elicitation/create"
                await raw.post(_accept(ask_colour, colour="gold"))
                rest = [raw.check(message_of(e)) for e in await reader.rest()]
    assert rest[-1]["result"]["content"][0]["text"] == "hello Ed, who likes gold"
    assert _ran(counter) == ["greet Ed"]


async def test_a_finished_call_is_kept_for_its_ttl_then_expires_whole(
    http: httpx.AsyncClient, counter: Path
) -> None:
    # The finished call's document (its params, its response) was kept 10
    # minutes, but its journal and its questions stayed a session's idle
    # time after their last write (30 minutes): a client's arguments and
    # step results in the store, with nothing naming them.
    store = MemoryStore()
    limits = HttpLimits(finished_call_ttl=1.0)
    with trio.fail_after(30):
        async with served(Server(TOOLS, store=store), limits=limits) as url:
            raw = Raw(http, url)
            await raw.initialize()
            async with raw.stream("POST", _call(raw, 13, "interview")) as (_, reader):
                priming = await reader.next()
                assert priming is not None
                _, ask_name = await _next_message(reader)
                await raw.post(_accept(ask_name, name="Flo"))
                _, _log = await _next_message(reader)
                _, ask_colour = await _next_message(reader)
                await raw.post(_accept(ask_colour, colour="jade"))
                rest = [raw.check(message_of(e)) for e in await reader.rest()]
        assert rest[-1]["result"]["content"][0]["text"] == "hello Flo, who likes jade"
        (call_id,) = [call_id for call_id, _doc in store.scan(CALLS)]
        assert store.read(CALLS, call_id)  # its journal, for `yieldmcp journal`
        assert store.read(ASKED, call_id)  # its two questions
        # Another process resumes the finished call's stream: its response.
        async with served(Server(TOOLS, store=store), limits=limits) as second:
            raw.url = second
            async with raw.stream("GET", last_event_id=priming.id) as (
                response,
                reader,
            ):
                assert response.status_code == 200
                again = [raw.check(message_of(e)) for e in await reader.rest()]
            assert again[-1] == rest[-1]
        await trio.sleep(1.2)
        assert store.get(CALLS, call_id) is None
        assert store.read(CALLS, call_id) == []
        assert store.read(ASKED, call_id) == []
        # A process that never held the session: the call is gone, said so.
        async with served(Server(TOOLS, store=store), limits=limits) as third:
            raw.url = third
            async with raw.stream("GET", last_event_id=priming.id) as (response, _):
                await response.aread()
                assert response.status_code == 400, response.text
    assert _ran(counter) == ["greet Flo"]


async def test_a_step_longer_than_the_idle_time_keeps_the_session_in_the_store(
    http: httpx.AsyncClient, counter: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Requests and writes renewed the session's and the call's records;
    # a step that outlasted --session-idle-timeout had them expire under the
    # running call, so after a kill no other process could take it on
    # ("404 unknown or terminated session"), and without one the next
    # request routed to another process got the same 404.
    monkeypatch.setenv("SESSION_TOOLS_SLOW", "2.5")
    store = MemoryStore()
    limits = HttpLimits(session_idle_timeout=1.5)
    with trio.fail_after(30):
        async with (
            served(Server(TOOLS, store=store), limits=limits) as url,
            trio.open_nursery() as nursery,
        ):
            raw = Raw(http, url)
            await raw.initialize()
            session_id = raw.session_id
            assert session_id is not None

            async def call() -> None:
                await raw.post(_call(raw, 14, "sequence"))

            nursery.start_soon(call)
            while "start 0" not in _ran(counter):
                await trio.sleep(0.05)
            await trio.sleep(2.2)  # in the first step: past the idle time
            assert "end 0" not in _ran(counter)
            assert store.get(SESSIONS, session_id) is not None
            (call_id,) = [call_id for call_id, _doc in store.scan(CALLS)]
            assert store.get(CALLS, call_id) is not None
            assert [e["c"] for e in store.read(SESSIONS, session_id)] == [call_id]
            nursery.cancel_scope.cancel()


@pytest.mark.parametrize(
    "generation",
    ["two", 10**400, [1], True, -1],
    ids=["text", "huge", "list", "bool", "negative"],
)
async def test_a_session_document_of_no_writers_shape_is_one_line_not_a_500(
    generation: Any, http: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    # "gen": "two" (or 10**400) made every request of the session an HTTP
    # 500 with a 20-line traceback, on every process taking it on.
    import logging

    from bridge.jsonrpc.errors import STORE_UNREADABLE

    store = MemoryStore()
    caplog.set_level(logging.WARNING)
    with trio.fail_after(30):
        async with served(Server(TOOLS, store=store)) as first_url:
            raw = Raw(http, first_url)
            await raw.initialize()
        assert raw.session_id is not None
        found = store.get(SESSIONS, raw.session_id)
        assert found is not None
        store.put(SESSIONS, raw.session_id, {**found.value, "gen": generation})
        async with served(Server(TOOLS, store=store)) as second_url:
            raw.url = second_url
            answered = await raw.post(raw.request(2, "tools/list", {}))
    assert answered.status_code == 200, answered.text
    assert answered.json()["error"] == {"code": -32603, "message": STORE_UNREADABLE}
    assert all(r.exc_info is None for r in caplog.records), caplog.text
    assert "its generation is" in caplog.text


@pytest.mark.parametrize(
    "record",
    [{"k": 7, "e": 1}, {"k": "name", "e": "1"}, {"k": "name", "e": True}, {"e": 1}],
    ids=["key-number", "position-text", "position-bool", "no-key"],
)
async def test_a_questions_record_of_no_writers_shape_is_one_line_not_a_traceback(
    record: dict[str, Any],
    http: httpx.AsyncClient,
    counter: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The questions a parked call asked are read when another process takes
    # the call on; a record no writer of ours wrote is the store's one line.
    import logging

    store = MemoryStore()
    caplog.set_level(logging.WARNING)
    with trio.fail_after(30):
        async with served(Server(TOOLS, store=store)) as first_url:
            raw = Raw(http, first_url)
            await raw.initialize()
            async with raw.stream("POST", _call(raw, 8, "interview")) as (_, reader):
                priming = await reader.next()
                assert priming is not None
                await _next_message(reader)
        [(call_id, _doc)] = store.scan(CALLS)
        assert store.read(ASKED, call_id)  # the name question
        store.append(ASKED, call_id, [record])
        async with served(Server(TOOLS, store=store)) as second_url:
            raw.url = second_url
            async with raw.stream("GET", last_event_id=str(priming.id)) as (
                response,
                reader,
            ):
                status, text = response.status_code, (await response.aread()).decode()
    # Not 503: a client tries that again, and asking again will not help.
    assert (status, text) == (
        500,
        "Internal Server Error: the server's store holds a record this server "
        "did not write and cannot read; asking again will not help",
    )
    assert all(r.exc_info is None for r in caplog.records), caplog.text
    assert "not a question's key and position" in caplog.text

"""``runtime.testing.replay``: a tool against a recorded journal, no peer.

Journals are recorded here by running the tool with ``run_scripted`` and a
``Journal`` (what a server with a store writes, record by record); the
system test ``tests/system/test_journal_replay.py`` takes them out of real
stores through ``yieldmcp journal``.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from runtime import Context, ElicitKey, Limits, Op, ReplayDivergence, ToolError, tool
from runtime.lowlevel import (
    JOURNAL_FORMAT,
    InvalidAnswer,
    Journal,
    JournalDocument,
    RandomBits,
)
from runtime.testing import (
    JournalExhausted,
    ScriptedPeer,
    accept,
    decline,
    load_journal,
    picture,
    replay,
    run_scripted,
    text,
)
from tests.fixtures.journal_tools import trip
from tests.helpers import ROOT
from tests.programs import (
    Program,
    Trace,
    answer_for,
    failure_label,
    program_tool,
    timed_programs,
    work_now,
    worked,
)


class Confirm(BaseModel):
    ok: bool


CONFIRM = ElicitKey("confirm", Confirm)
charged: list[int] = []


def charge(cents: int) -> str:
    charged.append(cents)
    return f"receipt {cents}"


@tool(elicits=[CONFIRM])
def checkout(city: str, ctx: Context) -> Op[str]:
    answer = yield from ctx.elicit(CONFIRM, f"Book {city}?")
    if answer.content is None or not answer.content.ok:
        return "not booked"
    receipt = yield from ctx.step(charge, 1200)
    tip = yield from ctx.sample(f"One tip for {city}")
    stamp = yield from ctx.now()
    return f"{receipt}; {tip.text}; at {stamp}"


def record(
    a_tool: Any, params: dict[str, Any], peer: ScriptedPeer, *, keep: int | None = None
) -> tuple[Any, JournalDocument]:
    """Run ``a_tool`` against ``peer``, and its journal as a document (the
    first ``keep`` records only: a call taken while in flight)."""
    journal = Journal()
    try:
        result: Any = run_scripted(
            a_tool, params, peer, journal=journal, clock=lambda: 7.0
        )
    except Exception as exc:
        result = exc
    records = journal.records()[:keep]
    document = JournalDocument(
        id=journal.call_id,
        source="task",
        tool=a_tool.name,
        arguments=params,
        records=tuple(records),
    )
    return result, document


def booked_peer() -> ScriptedPeer:
    return ScriptedPeer(
        elicits={"confirm": [accept(ok=True)]}, samples=[text("Go early.")]
    )


def test_replay_returns_what_the_recorded_call_returned_and_runs_no_step() -> None:
    result, document = record(checkout, {"city": "Rome"}, booked_peer())
    assert result == "receipt 1200; Go early.; at 7.0"
    charged.clear()
    assert replay(checkout, document) == result
    assert charged == []  # the step's result came from the journal


def test_replay_reads_the_document_as_json_and_from_a_file(tmp_path: Path) -> None:
    result, document = record(checkout, {"city": "Rome"}, booked_peer())
    data = json.loads(json.dumps(document.to_json()))
    assert data["format"] == JOURNAL_FORMAT
    assert replay(checkout, data) == result
    path = tmp_path / "journal.json"
    path.write_text(json.dumps(data))
    assert replay(checkout, path, {"city": "Rome"}) == result


def test_a_changed_prompt_is_a_divergence_naming_the_key() -> None:
    _result, document = record(checkout, {"city": "Rome"}, booked_peer())

    @tool(name="checkout", elicits=[CONFIRM])
    def changed(city: str, ctx: Context) -> Op[str]:
        yield from ctx.elicit(CONFIRM, f"Book {city}?")
        receipt = yield from ctx.step(charge, 1200)
        tip = yield from ctx.sample(f"Two tips for {city}")  # changed
        return f"{receipt}; {tip.text}"

    with pytest.raises(ReplayDivergence) as caught:
        replay(changed, document)
    error = caught.value
    assert not isinstance(error, JournalExhausted)
    assert error.key == "2"
    assert error.recorded.startswith("Sample (digest ")
    assert "'Two tips for Rome'" in error.asked
    assert "key '2'" in str(error)


def test_another_kind_of_question_at_a_recorded_key_is_a_divergence() -> None:
    _result, document = record(checkout, {"city": "Rome"}, booked_peer())

    @tool(name="checkout", elicits=[CONFIRM])
    def reordered(city: str, ctx: Context) -> Op[str]:
        yield from ctx.elicit(CONFIRM, f"Book {city}?")
        tip = yield from ctx.sample(f"One tip for {city}")  # before the step now
        return tip.text

    with pytest.raises(ReplayDivergence) as caught:
        replay(reordered, document)
    assert caught.value.key == "1"
    assert caught.value.recorded == "step 'charge'"
    assert caught.value.asked == "Sample"


def test_a_divergence_the_tool_swallows_is_still_raised() -> None:
    _result, document = record(checkout, {"city": "Rome"}, booked_peer())

    @tool(name="checkout", elicits=[CONFIRM])
    def swallowing(city: str, ctx: Context) -> Op[str]:
        yield from ctx.elicit(CONFIRM, f"Book {city}?")
        try:
            yield from ctx.sample("something else entirely")
        except Exception:
            return "carried on"
        return "asked"

    with pytest.raises(ReplayDivergence) as caught:
        replay(swallowing, document)
    assert caught.value.key == "1"


def test_a_tool_that_ends_early_diverges_at_the_first_answer_it_skipped() -> None:
    _result, document = record(checkout, {"city": "Rome"}, booked_peer())

    @tool(name="checkout", elicits=[CONFIRM])
    def shorter(city: str, ctx: Context) -> Op[str]:
        yield from ctx.elicit(CONFIRM, f"Book {city}?")
        return "done early"

    with pytest.raises(ReplayDivergence) as caught:
        replay(shorter, document)
    assert caught.value.key == "1"
    assert "nothing" in caught.value.asked


def test_a_journal_that_runs_out_says_what_the_tool_asks_next() -> None:
    _result, document = record(checkout, {"city": "Rome"}, booked_peer(), keep=2)
    with pytest.raises(JournalExhausted) as caught:
        replay(checkout, document)
    assert caught.value.key == "2"
    assert "Sample 'One tip for Rome'" in str(caught.value)
    assert isinstance(caught.value, ReplayDivergence)  # one hierarchy


def test_a_time_not_recorded_is_not_made_up() -> None:
    _result, document = record(checkout, {"city": "Rome"}, booked_peer(), keep=3)
    with pytest.raises(JournalExhausted) as caught:
        replay(checkout, document)
    assert caught.value.key == "3"
    assert caught.value.asked.startswith("Clock")


def test_a_step_not_recorded_is_not_run() -> None:
    _result, document = record(checkout, {"city": "Rome"}, booked_peer(), keep=1)
    charged.clear()
    with pytest.raises(JournalExhausted, match="step 'charge'"):
        replay(checkout, document)
    assert charged == []


def test_a_recorded_failure_is_raised_again() -> None:
    @tool
    def failing(ctx: Context) -> Op[str]:
        reply = yield from ctx.sample("hi")
        raise ToolError(f"no: {reply.text}")

    result, document = record(failing, {}, ScriptedPeer(samples=[text("x")]))
    assert isinstance(result, ToolError)
    with pytest.raises(ToolError, match="no: x"):
        replay(failing, document)


def test_a_branch_that_timed_out_in_the_recording_times_out_again() -> None:
    @tool
    def racing(ctx: Context) -> Op[str]:
        def slow(c: Context) -> Op[str]:
            return (yield from c.sample("slow")).text

        try:
            yield from ctx.branch(slow, limits=Limits(timeout=5))
        except Exception as exc:
            return type(exc).__name__
        return "finished"

    deadline = {"t": "0", "at": 12.0}  # what the machine records; it passed
    document = JournalDocument(
        id="c1", source="task", tool="racing", arguments={}, records=(deadline,)
    )
    assert replay(racing, document) == "BranchTimeout"


def test_a_round_journal_needs_its_arguments() -> None:
    _result, document = record(checkout, {"city": "Rome"}, booked_peer())
    bare = JournalDocument(
        id=document.id, source="round", tool=None, arguments=None,
        records=document.records,
    )  # fmt: skip
    with pytest.raises(ValueError, match="pass them"):
        replay(checkout, bare)
    assert replay(checkout, bare, {"city": "Rome"}).startswith("receipt 1200")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "not a JSON object"),
        ({"format": "other"}, "not a yieldmcp journal document"),
        ({"format": "yieldmcp.journal/9"}, "a newer yieldmcp wrote it"),
        (
            {"format": JOURNAL_FORMAT, "id": "x", "source": "task", "records": [{}]},
            "malformed journal record",
        ),
        ({"format": JOURNAL_FORMAT, "id": "", "source": "task"}, "'id'"),
        ({"format": JOURNAL_FORMAT, "id": "x", "source": [None]}, "'source'"),
        ({"format": JOURNAL_FORMAT, "id": "x", "source": {}}, "'source'"),
    ],
)
def test_what_is_not_a_journal_document_is_one_clear_line(
    data: Any, message: str
) -> None:
    with pytest.raises(ValueError, match=message) as caught:
        load_journal(data)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("reading", [{}, "soon", True, 10**400, float("nan")])
def test_a_clock_reading_that_is_not_a_number_is_an_invalid_answer(
    reading: Any,
) -> None:
    """A hand-edited or foreign journal's clock reading is refused as an
    answer, named, never a TypeError or OverflowError from inside replay."""
    document = json.loads((KEPT / "trip-task.json").read_text())
    [clock] = [r for r in document["records"] if r["l"] == "Clock"]
    clock["r"] = reading
    with pytest.raises(InvalidAnswer, match="a clock reading") as caught:
        replay(trip, document)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("drawn", [{}, -1, 2**64, 1.5, True, "7"])
def test_a_random_draw_out_of_its_bits_is_an_invalid_answer(drawn: Any) -> None:
    @tool
    def dice(ctx: Context) -> int:
        return (yield from ctx.choice([1, 2, 3, 4, 5, 6]))

    record = {"k": "0", "d": RandomBits(64).digest(), "r": drawn}
    document = {
        "format": JOURNAL_FORMAT, "id": "x", "source": "task", "tool": "dice",
        "arguments": {}, "ended": None, "records": [record],
    }  # fmt: skip
    with pytest.raises(InvalidAnswer, match="a random draw of 64 bits"):
        replay(dice, document)


def test_a_missing_file_is_one_clear_line(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot read a journal"):
        load_journal(tmp_path / "nope.json")


@given(
    city=st.text(max_size=8),
    ok=st.booleans(),
    declined=st.booleans(),
    tip=st.text(max_size=20),
    now=st.floats(min_value=0, max_value=2e9),
)
def test_record_then_replay_gives_the_same_result(
    city: str, ok: bool, declined: bool, tip: str, now: float
) -> None:
    answer = decline() if declined else accept(ok=ok)
    peer = ScriptedPeer(elicits={"confirm": [answer]}, samples=[text(tip)])
    journal = Journal()
    result = run_scripted(
        checkout, {"city": city}, peer, journal=journal, clock=lambda: now
    )
    document = JournalDocument(
        id=journal.call_id, source="call", tool="checkout",
        arguments={"city": city}, records=tuple(journal.records()),
    )  # fmt: skip
    assert replay(checkout, json.loads(json.dumps(document.to_json()))) == result


KEPT = ROOT / "tests/data/journals"


def test_a_journal_a_real_server_wrote_replays_to_its_result() -> None:
    """A file written by ``yieldmcp journal`` (tests/data/journals/README.md)
    replays under this version: the format is kept, and so is the tool."""
    path = KEPT / "trip-task.json"
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert digest == "f167fa20a71fbdf4a960ad4253852df33f10d51a24946924dcdac76e52fbd13a"
    document = load_journal(path)
    assert document.ended is not None
    recorded = document.ended["result"]["structuredContent"]["result"]
    assert replay(trip, path) == recorded == "Rome booked for 400 at 1795892167"


def _outcome(call: Callable[[], Any]) -> Any:
    try:
        return ("returned", call())
    except Exception as error:
        return ("raised", failure_label(error))


@given(timed_programs, st.integers(0, 2**32), st.floats(0, 2e9))
def test_generated_programs_recorded_then_replayed_agree(
    program: Program, seed: int, now: float
) -> None:
    """For drawn tools (samples, forms, steps that may fail, the clock,
    random draws, nested branches, notices, raises) and their answers, a
    replay of the recorded journal gives the same outcome and sees the
    same clock and random values, running no step."""
    peer = ScriptedPeer(
        samples=lambda q: answer_for(q, frozenset()),
        elicits={"k": lambda q: answer_for(q, frozenset())},
        steps={"work": work_now},
    )
    journal, first_trace = Journal(), Trace()
    first = _outcome(
        lambda: run_scripted(
            program_tool(program, first_trace),
            {},
            peer,
            journal=journal,
            clock=lambda: now,
            rng=random.Random(seed),
        )
    )
    document = JournalDocument(
        id=journal.call_id, source="call", tool="program", arguments={},
        records=tuple(journal.records()),
    )  # fmt: skip
    worked.clear()
    again_trace = Trace()
    again = _outcome(
        lambda: replay(
            program_tool(program, again_trace),
            json.loads(json.dumps(document.to_json())),
        )
    )
    assert again == first
    assert worked == []
    assert again_trace.seen == first_trace.seen


def test_a_picture_around_a_replay_draws_it(tmp_path: Path) -> None:
    result, document = record(checkout, {"city": "Rome"}, booked_peer())
    with picture(tmp_path / "replay.html", title="replay") as timeline:
        assert replay(checkout, document) == result
    assert [bar.key for bar in timeline.bars] == ["0", "1", "2", "3"]
    assert all(bar.replayed for bar in timeline.bars)
    assert (tmp_path / "replay.html").exists()

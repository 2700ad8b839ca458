"""The picture of a call: ``runtime.testing.picture`` and ``call --trace``,
rendered in headless Chromium, with lanes and bars read back from the DOM."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest

from runtime.lowlevel import Journal, run
from runtime.testing import ScriptedPeer, picture, run_scripted, text
from tests.bridge.cli.inprocess import yieldmcp
from tests.fixtures import traced_tools as tt
from tests.helpers import STARTUP

from .browser import Elements, dump_dom

DEBATE = {  # (lane, kind) -> how many bars
    ("", "progress"): 2,
    ("", "sample"): 1,
    ("1.0", "log"): 1,
    ("1.0", "sample"): 1,
    ("1.1", "log"): 1,
    ("1.1", "sample"): 1,
}


def model(question: object) -> object:
    return text("fine")


def drawn(page: Path, fragment: str = "") -> Elements:
    dom = Elements(dump_dom(page, fragment))
    (body,) = [a for t, a in dom.found if t == "body"]
    assert "ready" in body.get("class", "")  # its script ran
    return dom


def bars_by_lane(dom: Elements) -> Counter[tuple[str, str]]:
    return Counter((b["data-lane"], b["data-kind"]) for b in dom.all("rect", "bar"))


def test_a_page_needs_nothing_from_the_network(tmp_path: Path) -> None:
    path = tmp_path / "debate.html"
    with picture(path, title="debate"):
        run_scripted(tt.debate, {"topic": "tea"}, ScriptedPeer(samples=model))
    html = path.read_text()
    assert " src=" not in html
    assert " href=" not in html
    assert "@import" not in html
    assert "url(" not in html


async def test_lanes_and_bars_match_the_branches(tmp_path: Path) -> None:
    path = tmp_path / "debate.html"
    with picture(path, title="debate") as timeline:
        await run(tt.debate, {"topic": "tea"}, ScriptedPeer(samples=model))
    assert timeline.lanes() == ["", "1.0", "1.1"]
    dom = drawn(path)
    lanes = [g["data-lane"] for g in dom.all("g", "lane")]
    assert lanes == ["", "1.0", "1.1"]
    assert bars_by_lane(dom) == Counter(DEBATE)


async def test_replays_are_dimmed_and_errors_red(tmp_path: Path) -> None:
    journal = Journal()
    peer = ScriptedPeer(samples=[text("one"), RuntimeError("the model is down")])
    with pytest.raises(RuntimeError):
        await run(tt.twice, {"topic": "tea"}, peer, journal=journal)
    path = tmp_path / "again.html"
    again = ScriptedPeer(samples=[text("two")])
    with picture(path, title="twice, again") as timeline:
        await run(tt.twice, {"topic": "tea"}, again, journal=journal)
    dom = drawn(path)
    bars = {b["data-key"]: b["class"].split() for b in dom.all("rect", "bar")}
    assert "replayed" in bars["0"]  # answered from the journal
    assert "replayed" not in bars["1"]
    assert [b.replayed for b in timeline.bars] == [True, False]

    path = tmp_path / "broken.html"
    failing = ScriptedPeer(samples=[RuntimeError("the model is down")])
    with picture(path, title="broken"), pytest.raises(RuntimeError):
        await run(tt.broken, {"topic": "tea"}, failing)
    (bar,) = drawn(path).all("rect", "bar")
    assert "error" in bar["class"].split()


async def test_hovering_shows_the_question_and_the_answer(tmp_path: Path) -> None:
    path = tmp_path / "debate.html"
    with picture(path, title="debate") as timeline:
        await run(tt.debate, {"topic": "tea"}, ScriptedPeer(samples=model))
    index = next(i for i, b in enumerate(timeline.bars) if b.key == "1.1/1")
    tip = "".join(drawn(path, f"#hover={index}").tip)
    assert "1.1/1" in tip  # which effect
    assert "con view of tea" in tip  # the question
    assert '"fine"' in tip  # the answer


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
def test_call_trace_draws_the_call_from_the_wire(tmp_path: Path, era: str) -> None:
    path = tmp_path / "call.html"
    done = yieldmcp(
        "call",
        "yieldmcp serve tests/fixtures/traced_tools.py",
        "debate",
        "--arg",
        "topic=tea",
        "--era",
        era,
        "--trace",
        str(path),
        "--connect-timeout",  # the server's start, not the bound, is waited for
        f"{STARTUP}",
        env={**os.environ, "OTEL_TRACES_EXPORTER": ""},
    )
    assert done.returncode == 0, done.stderr
    dom = drawn(path)
    assert [g["data-lane"] for g in dom.all("g", "lane")] == ["", "1.0", "1.1"]
    assert bars_by_lane(dom) == Counter(DEBATE)
    bars = dom.all("rect", "bar")
    index = next(b["data-i"] for b in bars if b["data-key"] == "1.0/1")
    tip = json.dumps("".join(drawn(path, f"#hover={index}").tip))
    assert "pro view of tea" in tip  # the sampling request's params...
    assert "Offline model" in tip  # ...and our answer, as sent


def test_a_trace_file_that_cannot_be_written_is_one_line(tmp_path: Path) -> None:
    done = yieldmcp("call", "x", "t", "--trace", str(tmp_path / "no" / "x.html"))
    assert done.returncode == 1
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("yieldmcp: error: cannot write --trace ")

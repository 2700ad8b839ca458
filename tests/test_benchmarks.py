"""The benchmark compares like with like, and the README's command runs.

``benchmarks/compare_mcp.py`` reports ratios of the official SDK's time to
ours; a ratio only means something if both stacks did the same work. These
tests run each benchmark tool once on each stack and check that the results and
the number of questions the client answered agree, then run the script itself
on a few rows (no timing is asserted: the numbers are the script's business).
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
import trio
from mcp.types import CreateMessageResult, ElicitResult, TextContent

from benchmarks import _resume, compare_mcp, ours, parked, pieces, sdk
from benchmarks.compare_mcp import TOOLS
from bridge.server.limits import ServerLimits
from runtime.replies import ElicitReply, SampleReply
from runtime.requests import ElicitationRequest, SamplingRequest
from tests.helpers import ROOT

ARGS = {"text": "hi"}

# The SDK warns that its sampling capability is deprecated as of 2026-07-28;
# the benchmark measures the 2025-11-25 era on purpose (benchmarks/sdk.py
# silences the same warning when run as a script).
pytestmark = pytest.mark.filterwarnings(
    "ignore::mcp.shared.exceptions.MCPDeprecationWarning"
)


class CountingModel(ours.Model):
    """The benchmark's sampler, counting the requests it answers."""

    def __init__(self) -> None:
        self.asked = 0

    async def complete(self, request: SamplingRequest) -> SampleReply:
        self.asked += 1
        return await super().complete(request)


class CountingSteps(ours.Steps):
    """The benchmark's elicitation handler, counting the requests it answers."""

    def __init__(self) -> None:
        self.asked = 0

    async def handle(self, request: ElicitationRequest) -> ElicitReply:
        self.asked += 1
        return await super().handle(request)


class Counter:
    def __init__(self) -> None:
        self.asked = 0


@pytest.mark.parametrize(
    ("row", "questions"), [("plain", 0), ("sample1", 1), ("sample10", 10)]
)
async def test_both_stacks_do_the_same_work(row: str, questions: int) -> None:
    model = CountingModel()
    async with ours.in_memory(sampler=model) as client:
        our_result = await client.call_tool(TOOLS[row], ARGS)

    counter = Counter()

    async def sampling(context: Any, params: Any) -> CreateMessageResult:
        counter.asked += 1
        return await sdk.sampling(context, params)

    async with sdk.client(sdk.server, sampling_callback=sampling) as client:
        sdk_result = await client.call_tool(TOOLS[row], ARGS)

    assert not our_result.is_error
    assert not sdk_result.is_error
    [sdk_block] = sdk_result.content
    assert isinstance(sdk_block, TextContent)
    assert our_result.text == sdk_block.text
    assert (model.asked, counter.asked) == (questions, questions)


async def test_both_stacks_take_ten_input_rounds_in_the_2026_era() -> None:
    steps = CountingSteps()
    async with ours.in_memory("2026-07-28", elicitation=steps) as client:
        our_result = await client.call_tool("elicit10", ARGS)

    counter = Counter()

    async def elicitation(context: Any, params: Any) -> ElicitResult:
        counter.asked += 1
        return await sdk.elicitation(context, params)

    async with sdk.client(
        sdk.server, "2026-07-28", elicitation_callback=elicitation
    ) as client:
        sdk_result = await client.call_tool("elicit10", ARGS)

    [sdk_block] = sdk_result.content
    assert isinstance(sdk_block, TextContent)
    assert our_result.text == sdk_block.text == "10"
    assert (steps.asked, counter.asked) == (10, 10)


ROWS = ["mem.plain", "stdio.plain", "http.plain", "park.1k", "mrtr.resume"]


def test_compare_mcp_prints_a_table_and_a_json_line_of_ratios() -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks/compare_mcp.py"),
            "--smoke",  # that it runs and prints: one repeat is enough
            "--rows",
            ",".join(ROWS),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    *table, last = done.stdout.strip().splitlines()
    ratios = json.loads(last)["ratios"]
    # A prefix picks every row under it: http.plain brings its server CPU row.
    assert set(ratios) == {*ROWS, "http.plain.server"}
    for key, value in ratios.items():
        assert value["ours"] > 0, key
        if key != "mrtr.resume":  # ours only: the SDK has no sealed journal
            assert value["sdk"] > 0, key
            assert value["ratio"] > 0, key
    text = "\n".join(table)
    for label in ("in-memory: plain tools/call", "2026: resume, 10-answer journal"):
        assert label in text


def test_startup_times_each_stack_doing_the_work() -> None:
    """``benchmarks/startup.py --smoke``: every row has a time for ours and a
    ratio for each other stack; its own checks (each server answered
    ``initialize``, asked its form, each command printed and exited 0)
    passed, or it exits 1."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks/startup.py"), "--smoke"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    for row in ("stdio.first_answer", "stdio.first_question"):
        assert summary[row]["ratios"].keys() == {"fastmcp", "sdk"}
    for row in (
        "cli.version",
        "cli.help",
        "stdio.first_answer",
        "stdio.first_question",
    ):
        assert summary[row]["seconds"]["ours"] > 0, row
        assert all(ratio > 0 for ratio in summary[row]["ratios"].values()), row


def test_compare_mcp_refuses_a_rows_prefix_that_picks_no_row(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        compare_mcp.main(["--rows", "mem,nope"])
    assert exited.value.code == 2
    error = capsys.readouterr().err
    assert "no row starts with 'nope'" in error
    assert "mem.plain" in error  # the rows there are, to pick from


def test_a_fresh_process_measures_a_parked_call_like_a_warm_one() -> None:
    # The first measurement of a process once counted anyio importing its trio
    # backend (over a megabyte) as memory of the parked calls.
    code = (
        "import sys, trio; sys.path.insert(0, sys.argv[1]);"
        "from benchmarks import parked;"
        "print(*(trio.run(parked.park_ours, 200, 'tracemalloc') for _ in '12'))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(ROOT)],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    first, warm = map(float, done.stdout.split())
    assert first <= warm * 1.2, (first, warm)


def test_the_parked_benchmark_parks_every_call_past_the_servers_caps() -> None:
    # 300 calls on one session: past the default cap of 128 calls in flight
    # per session, which the benchmark lifts for its measurement.
    per_call = trio.run(parked.park_ours, 300, "tracemalloc")
    assert per_call > 0


def test_the_parked_benchmark_fails_when_a_call_is_refused() -> None:
    # With the server's default caps the 129th call is refused (-32000): the
    # benchmark must fail rather than divide 128 parked calls' memory by 300.
    with pytest.raises(ExceptionGroup) as raised:  # from the server's nursery
        trio.run(parked.park_ours, 300, "tracemalloc", ServerLimits())
    assert raised.group_contains(parked.Refused, match="not parked")


# --- benchmarks/pieces.py: the steps of a round and of a replay, timed alone ----------


class RecordingModel(ours.Model):
    """The benchmark's sampler, keeping the requests it answers."""

    def __init__(self) -> None:
        self.asked: list[SamplingRequest] = []

    async def complete(self, request: SamplingRequest) -> SampleReply:
        self.asked.append(request)
        return await super().complete(request)


async def test_the_round_pieces_are_the_round_a_real_call_makes() -> None:
    model = RecordingModel()
    async with ours.in_memory(sampler=model) as client:
        result = await client.call_tool(TOOLS["sample1"], ARGS)

    built = pieces.round_steps()
    # The host got the same request, and the tool the same text, as for real.
    assert model.asked == [built.asked]
    assert built.outcome.text == result.text == "ok"
    for step in built.steps:
        step.run(step.make())  # each step runs on its own


async def test_the_replay_pieces_pin_the_digest_a_real_journal_records() -> None:
    server, _connection, _session, params = await _resume._prepare(answers=4)
    state = server.sealer.open(params["requestState"], purpose="tools/call")
    recorded_digest, recorded_answer, label = state["journal"]["answers"]["3"]
    assert label == "Elicit"  # what kind of question, for ReplayDivergence

    built = pieces.replay_steps()
    assert built.digest == recorded_digest
    assert recorded_answer == _resume.ANSWER
    assert built.outcome.content.n == 1
    for step in built.steps:
        step.run(step.make())


def test_pieces_prints_two_tables_and_a_json_line() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks/pieces.py"), "--quick"],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    *table, last = done.stdout.strip().splitlines()
    figures = json.loads(last)
    steps_round = [s.name for s in pieces.round_steps().steps]
    steps_replay = [s.name for s in pieces.replay_steps().steps]
    round_, replay = figures["round"], figures["replay"]
    assert list(round_["steps"]) == steps_round
    assert list(replay["steps"]) == steps_replay
    assert round_["sum"] == pytest.approx(sum(round_["steps"].values()), abs=0.01)
    assert replay["sum"] == pytest.approx(sum(replay["steps"].values()), abs=0.01)
    assert replay["floor"] == pytest.approx(
        replay["resume0"] + 10 * replay["sum"], abs=0.02
    )
    for key in ("ours", "sdk", "allowed"):
        assert round_[key] > 0, key
    for key in ("resume0", "resume10"):
        assert replay[key] > 0, key
    text = "\n".join(table)
    for name in (*steps_round, *steps_replay):
        assert f"| {name} |" in text


def test_durability_prints_a_row_per_store_and_a_json_line() -> None:
    # SQLite only: the rows of the server-backed stores need their servers
    # (the script starts them; tests/bridge/stores covers those stores).
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks/durability.py"), "--quick",
         "--stores", "sqlite"],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    *table, last = done.stdout.strip().splitlines()
    figures = json.loads(last)
    rows = ["sqlite: answer", "sqlite: step", "sqlite: at once"]
    assert list(figures) == rows
    assert all(figures[row] > 0 for row in rows)
    assert all(any(line.startswith(row) for line in table) for row in rows)


def test_durability_calls_prints_a_row_per_store_and_era() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks/durability.py"), "--quick",
         "--calls", "--stores", "sqlite"],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    *table, last = done.stdout.strip().splitlines()
    figures = json.loads(last)
    rows = [
        f"{store}: {era}"
        for store in ("memory", "sqlite")
        for era in ("2026-07-28", "2025-11-25")
    ]
    assert list(figures) == rows
    assert all(figures[row] > 0 for row in rows)
    assert all(any(line.startswith(row) for line in table) for row in rows)

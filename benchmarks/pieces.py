"""The steps a sampling round and a replayed answer cannot skip, timed alone.

Usage::

    python benchmarks/pieces.py [--quick]

``compare_mcp.py`` measures whole calls. This script asks what the two rows
furthest from their targets are made of, on our stack:

* ``round``: one 2025-11-25 sampling round trip, as ``sample10`` makes ten.
  The server's tool makes its ``Sample`` effect; the server checks it against
  the client's capabilities and encodes ``sampling/createMessage``; JSON out
  and in; the client decodes and validates the params; the host's model
  replies; the client encodes and checks the result; JSON out and in; the
  server decodes and validates it and resolves the effect into the tool's
  result. Beside their sum: a whole round, ``(sample10 - plain) / 10``, on
  our stack and on the SDK's (in memory, in this run), and the round that
  ``mem.sample10``'s 8x target leaves us.
* ``replay``: one recorded answer replayed when a 2026-07-28 call resumes
  (``elicit_n``). The tool makes its ``Elicit`` effect again; the effect's
  digest pins the recorded answer; the journal is looked up; the recorded
  answer is decoded and validated again into the tool's result. Beside their
  sum: a resume from no recorded answer and from ten (``mrtr.resume``), and
  the floor ``no answer + 10 x the sum`` against the 100 µs target.

Each step runs alone in a tight loop, best of a few runs, less the cost of
the loop itself: warm caches, no session, no stepper, no scheduling. So the
sum is a floor under the real thing, and the gap between the two is what the
machinery around the steps (sessions, the stepper, tasks) costs. The steps
are built by running the real code once, each from the previous step's
output, so they do the work a real round does. The last line of output is
one JSON object (µs). Every figure is the median of several repeats, and
each repeat measures everything back to back, so that the machine's changes
of speed (large on a shared machine) hit the steps and the whole calls alike.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import attrs  # noqa: E402
import trio  # noqa: E402

from benchmarks import _resume, compare_mcp, ours  # noqa: E402
from benchmarks._stats import median  # noqa: E402
from bridge.jsonrpc import messages as jsonrpc  # noqa: E402
from bridge.server.questions import CallScope, ask, decode_answer  # noqa: E402
from decoders import mcp as mcp_decode  # noqa: E402
from encoders import mcp as mcp_encode  # noqa: E402
from runtime import Text  # noqa: E402
from runtime.lowlevel import (  # noqa: E402
    Journal,
    JournalEntry,
    SampleReply,
)

__all__ = ["Pieces", "Step", "replay_steps", "round_steps"]

# What the benchmark's client declares (a sampler without tools, forms).
CAPABILITIES: dict[str, Any] = {
    "sampling": {},
    "elicitation": {"form": {}, "url": {}},
}


@attrs.frozen
class Step:
    """One step: ``make()`` gives a fresh input (None: none needed) and
    ``run(input)`` does the step's work on it."""

    name: str
    run: Callable[[Any], object]
    make: Callable[[], object] = lambda: None


@attrs.frozen
class Pieces:
    """The steps of a round or replay, and what running them once gave."""

    steps: list[Step]
    outcome: Any  # the tool's result at the last step
    asked: Any = None  # the round: the request as the host got it
    digest: str = ""  # the replay: the digest that pins the answer


def round_steps() -> Pieces:
    """The steps of one sampling round trip."""
    ctx = ours.sample10.context()
    scope = CallScope(era="2025-11-25", request_id=1, client_capabilities=CAPABILITIES)

    def make_effect(_: object) -> Any:
        return ctx.sample("hi", max_tokens=16)

    effect = make_effect(None)
    method, params = ask(effect, scope)
    sent = jsonrpc.dumps(jsonrpc.Request(7, method, params))
    received = jsonrpc.parse(sent)
    assert isinstance(received, jsonrpc.Request)
    got = received.params
    assert got is not None
    request = mcp_decode.sampling_request(dict(got))

    def model(_: object) -> SampleReply:  # ours.Model.complete, without the await
        return SampleReply(content=(Text("ok"),), model="bench")

    reply = model(request)
    result = mcp_encode.sample_result(reply, era="2025-11-25")
    answered = jsonrpc.dumps(jsonrpc.Response(7, result))
    back = jsonrpc.parse(answered)
    assert isinstance(back, jsonrpc.Response)
    decoded = decode_answer(effect, back.result)
    outcome = effect.resolve(decoded, "0")
    steps = [
        Step("server: the tool makes its Sample effect", make_effect),
        Step(
            "server: capability checks, createMessage params",
            lambda _: ask(effect, scope),
        ),
        Step(
            "server: the request to JSON",
            lambda _: jsonrpc.dumps(jsonrpc.Request(7, method, params)),
        ),
        Step("client: JSON to a message", lambda _: jsonrpc.parse(sent)),
        Step(
            "client: decode and validate the params",
            lambda _: mcp_decode.sampling_request(dict(got)),
        ),
        Step("host: the model's reply", model),
        Step(
            "client: encode and check the result",
            lambda _: mcp_encode.sample_result(reply, era="2025-11-25"),
        ),
        Step(
            "client: the response to JSON",
            lambda _: jsonrpc.dumps(jsonrpc.Response(7, result)),
        ),
        Step("server: JSON to a message", lambda _: jsonrpc.parse(answered)),
        Step(
            "server: decode and validate the result",
            lambda _: decode_answer(effect, back.result),
        ),
        Step("server: the tool's result", lambda _: effect.resolve(decoded, "0")),
    ]
    return Pieces(steps, outcome, asked=request)


def replay_steps() -> Pieces:
    """The steps of one replayed answer (the fourth question's)."""
    ctx = ours.elicit_n.context()
    recorded = _resume.ANSWER

    def make_effect(_: object = None) -> Any:
        return ctx.elicit(ours.STEP, "question 3")

    effect = make_effect()
    digest = effect.digest()
    journal = Journal({"3": JournalEntry(digest, recorded)})
    assert journal.lookup("3", digest) is recorded
    outcome = effect.resolve_recorded(recorded, "3")
    steps = [
        Step("the tool asks ctx.elicit again (a recent form is reused)", make_effect),
        Step(
            "its digest, which pins the recorded answer",
            lambda e: e.digest(),
            make_effect,
        ),
        Step("the journal lookup", lambda _: journal.lookup("3", digest)),
        Step(
            "the recorded answer, decoded and validated again",
            lambda _: effect.resolve_recorded(recorded, "3"),
        ),
    ]
    return Pieces(steps, outcome, digest=digest)


@attrs.frozen
class Settings:
    number: int  # runs of a step per timing
    best_of: int  # timings per step in a repeat (the best counts)
    repeats: int  # repeats of everything (the median counts)
    batch_seconds: float  # per whole-call measurement


QUICK = Settings(number=1_000, best_of=3, repeats=3, batch_seconds=0.1)
FULL = Settings(number=4_000, best_of=3, repeats=9, batch_seconds=0.25)

_NOTHING = Step("nothing", lambda _: None)


def time_step(step: Step, s: Settings) -> float:
    """Seconds per run of ``step``: the best of ``s.best_of`` timings of
    ``s.number`` runs (the loop's own cost included)."""
    best = float("inf")
    for _ in range(s.best_of):
        inputs = [step.make() for _ in range(s.number)]
        run = step.run
        start = time.perf_counter()
        for value in inputs:
            run(value)
        best = min(best, (time.perf_counter() - start) / s.number)
    return best


def _calls(s: Settings) -> dict[str, float]:
    """Seconds per ``plain`` and ``sample10`` call, ours and the SDK's (its
    faster backend), as ``compare_mcp.py`` measures them."""
    names, seconds = ["plain", "sample10"], s.batch_seconds
    out: dict[str, float] = {}
    ours_ = compare_mcp._run_trio(compare_mcp._mem_ours, names, seconds)
    on_asyncio = compare_mcp._run_asyncio(compare_mcp._mem_sdk, names, seconds)
    on_trio = compare_mcp._run_trio(compare_mcp._mem_sdk, names, seconds)
    for name in names:
        out[f"ours.{name}"] = ours_[name]
        out[f"sdk.{name}"] = min(on_asyncio[name], on_trio[name])
    return out


def _once(steps: Sequence[Step], s: Settings) -> dict[str, float]:
    """One repeat of every measurement, back to back (seconds), so that each
    repeat sees the machine at one speed."""
    loop = time_step(_NOTHING, s)
    out: dict[str, float] = {}
    for step in steps:
        out[step.name] = max(0.0, time_step(step, s) - loop)
    out.update(_calls(s))
    for answers in (0, 10):
        out[f"resume{answers}"] = trio.run(
            _resume.handle_request, s.batch_seconds, answers
        )
    return out


def _us(seconds: float) -> float:
    return round(seconds * 1e6, 2)


def measure(s: Settings) -> dict[str, Any]:
    """Every figure of the report (µs): per measurement, the median of
    ``s.repeats`` repeats."""
    rounds, replays = round_steps().steps, replay_steps().steps
    runs = [_once([*rounds, *replays], s) for _ in range(s.repeats)]
    m = {key: _us(median([run[key] for run in runs])) for key in runs[0]}
    round_us = {step.name: m[step.name] for step in rounds}
    replay_us = {step.name: m[step.name] for step in replays}
    calls = {
        k: m[k] for k in ("ours.plain", "ours.sample10", "sdk.plain", "sdk.sample10")
    }
    round_sum = round(sum(round_us.values()), 2)
    replay_sum = round(sum(replay_us.values()), 2)
    return {
        "round": {
            "steps": round_us,
            "sum": round_sum,
            "ours": round((calls["ours.sample10"] - calls["ours.plain"]) / 10, 2),
            "sdk": round((calls["sdk.sample10"] - calls["sdk.plain"]) / 10, 2),
            # mem.sample10 at 8x: ours.plain + 10 rounds <= sdk.sample10 / 8
            "allowed": round((calls["sdk.sample10"] / 8 - calls["ours.plain"]) / 10, 2),
            "calls": calls,
        },
        "replay": {
            "steps": replay_us,
            "sum": replay_sum,
            "resume0": m["resume0"],
            "resume10": m["resume10"],
            "per_answer": round((m["resume10"] - m["resume0"]) / 10, 2),
            "floor": round(m["resume0"] + 10 * replay_sum, 2),
            "target": 100.0,
        },
    }  # fmt: skip


def _table(
    title: str, steps: dict[str, float], rows: list[tuple[str, str]]
) -> list[str]:
    """A markdown table: ``title``, one row per step (µs), then ``rows``."""
    lines = [title, "", "| step | µs |", "|---|---:|"]
    lines += [f"| {name} | {us:.2f} |" for name, us in steps.items()]
    lines += [f"| {label} | {value} |" for label, value in rows]
    return lines


def report(figures: dict[str, Any], started: float) -> str:
    r, p = figures["round"], figures["replay"]
    header = (
        f"{platform.python_implementation()} {platform.python_version()}, "
        f"trio {trio.__version__}; {time.perf_counter() - started:.0f} s; "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    round_table = _table(
        "One sampling round trip (2025-11-25, in memory):",
        r["steps"],
        [
            ("**sum of the steps**", f"**{r['sum']:.1f}**"),
            ("a whole round, ours: (sample10 - plain) / 10", f"{r['ours']:.1f}"),
            ("a whole round, the SDK's", f"{r['sdk']:.1f}"),
            ("the round mem.sample10 at 8x allows us", f"{r['allowed']:.1f}"),
        ],
    )
    replay_table = _table(
        "One recorded answer replayed on resume (2026-07-28, elicit_n):",
        p["steps"],
        [
            ("**sum of the steps**", f"**{p['sum']:.2f}**"),
            ("resume, no recorded answer", f"{p['resume0']:.1f}"),
            ("resume, 10 recorded answers (mrtr.resume)", f"{p['resume10']:.1f}"),
            ("per recorded answer, measured", f"{p['per_answer']:.2f}"),
            ("floor: no answer + 10 x the sum", f"{p['floor']:.1f}"),
            ("target", f"{p['target']:.0f}"),
        ],
    )
    lines = [header, "", *round_table, "", *replay_table]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a few seconds")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    figures = measure(QUICK if args.quick else FULL)
    print(report(figures, started))
    print(json.dumps(figures, separators=(",", ":"), ensure_ascii=False))


if __name__ == "__main__":
    main()

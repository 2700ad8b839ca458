"""An effect made and never yielded is reported when its call ends, naming
where it was made: the way Python reports a coroutine that was never awaited.

``ctx.sample("say hi")`` without ``yield from`` builds the question and drops
it: the model is never asked, and the call succeeds as if nothing were wrong.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable, Iterator

import pytest
from pydantic import BaseModel

from runtime import Context, Op, ToolSpec, tool
from runtime.errors import EffectNeverYielded
from runtime.lowlevel import Journal, Returned, Stepper
from runtime.testing import ScriptedPeer, run_scripted, text, tool_calls


def _line_of(fn: object, needle: str) -> int:
    lines, first = inspect.getsourcelines(fn)  # type: ignore[arg-type]
    for offset, line in enumerate(lines):
        if needle in line:
            return first + offset
    raise AssertionError(f"{needle!r} is not in {fn!r}")


@pytest.fixture
def reported() -> Iterator[list[warnings.WarningMessage]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield caught


def forgets_to_yield(ctx: Context) -> Op[str]:
    ctx.sample("say hi")
    yield ctx.log("info", "went on")
    return "done"


def test_a_sample_never_yielded_is_reported_with_its_file_and_line(
    reported: list[warnings.WarningMessage],
) -> None:
    peer = ScriptedPeer()
    assert run_scripted(tool(forgets_to_yield), {}, peer) == "done"
    assert peer.asked == []  # the model was never asked: hence the warning
    [warning] = reported
    assert warning.category is EffectNeverYielded
    assert warning.filename == __file__
    assert warning.lineno == _line_of(forgets_to_yield, 'ctx.sample("say hi")')
    message = str(warning.message)
    assert "never yielded" in message
    assert "yield from ctx.sample(...)" in message
    assert "\n" not in message


def plain_forgets(ctx: Context) -> str:
    ctx.log("info", "never sent")
    return "done"


def test_an_effect_made_in_a_plain_tool_is_reported(
    reported: list[warnings.WarningMessage],
) -> None:
    assert run_scripted(tool(plain_forgets), {}, ScriptedPeer()) == "done"
    [warning] = reported
    assert warning.lineno == _line_of(plain_forgets, "ctx.log(")
    assert "ctx.log(...)" in str(warning.message)


def yields_later(ctx: Context) -> Op[str]:
    question = ctx.sample("kept for later")
    yield ctx.log("info", "first")
    answer = yield from question
    return answer.text


def yields_everything(ctx: Context) -> Op[str]:
    answer = yield from ctx.sample("hi")
    yield ctx.log("info", "answered")
    yield ctx.progress(1.0)
    when = yield from ctx.now()
    return f"{answer.text} {when}"


def test_an_effect_yielded_later_or_at_once_is_not_reported(
    reported: list[warnings.WarningMessage],
) -> None:
    assert (
        run_scripted(tool(yields_later), {}, ScriptedPeer(samples=[text("a")])) == "a"
    )
    assert (
        run_scripted(
            tool(yields_everything),
            {},
            ScriptedPeer(samples=[text("b")]),
        )
        == "b 0.0"
    )
    assert reported == []


def test_effects_built_outside_a_call_are_not_tracked(
    reported: list[warnings.WarningMessage],
) -> None:
    ctx = Context()
    made = ctx.sample("inspected by a test, never run")
    assert made.messages[0].text == "inspected by a test, never run"
    assert reported == []


def test_as_an_error_the_warning_fails_the_call() -> None:
    # pytest's `filterwarnings = error` (this project's own): the call raises it.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(EffectNeverYielded, match="never yielded"):
            run_scripted(tool(forgets_to_yield), {}, ScriptedPeer())


# --- ops: the context methods that return a generator, not an effect --------------
#
# `ctx.step(save, row)` with no `yield from` makes a generator that never
# starts: the function never runs. Each op is reported like an effect.


class Verdict(BaseModel):
    ok: bool


LOOKUP = ToolSpec(name="lookup", input_schema={"type": "object"})
ran: list[str] = []


def write_file(path: str) -> str:
    ran.append(path)
    return path


def forgets_a_step(ctx: Context) -> Op[str]:
    ctx.step(write_file, "/tmp/kept")
    yield ctx.log("info", "went on")
    return "done"


def forgets_a_named_step(ctx: Context) -> Op[str]:
    ctx.step_as("write", retries=1)(write_file, "/tmp/kept")
    yield ctx.log("info", "went on")
    return "done"


def forgets_sample_schema(ctx: Context) -> Op[str]:
    ctx.sample_schema("judge", schema=Verdict)
    yield ctx.log("info", "went on")
    return "done"


def forgets_sample_tools(ctx: Context) -> Op[str]:
    ctx.sample_tools("look it up", tools=[LOOKUP])
    yield ctx.log("info", "went on")
    return "done"


def forgets_random(ctx: Context) -> Op[str]:
    ctx.random()
    yield ctx.log("info", "went on")
    return "done"


def forgets_choice(ctx: Context) -> Op[str]:
    ctx.choice(["a", "b"])
    yield ctx.log("info", "went on")
    return "done"


@pytest.mark.parametrize(
    ("forgetful", "made"),
    [
        (forgets_a_step, "ctx.step("),
        (forgets_a_named_step, "ctx.step_as("),
        (forgets_sample_schema, "ctx.sample_schema("),
        (forgets_sample_tools, "ctx.sample_tools("),
        (forgets_random, "ctx.random("),
        (forgets_choice, "ctx.choice("),
    ],
)
def test_an_op_never_iterated_is_reported_at_its_line_with_its_fix(
    reported: list[warnings.WarningMessage],
    forgetful: Callable[..., Op[str]],
    made: str,
) -> None:
    ran.clear()
    peer = ScriptedPeer()
    assert run_scripted(tool(forgetful), {}, peer) == "done"
    assert peer.asked == []  # nothing happened: hence the warning
    assert ran == []
    [warning] = reported
    assert warning.category is EffectNeverYielded
    assert warning.filename == __file__
    assert warning.lineno == _line_of(forgetful, made)
    spelled = "ctx.step_as(...)(...)" if made == "ctx.step_as(" else f"{made}...)"
    assert f"write `yield from {spelled}`" in str(warning.message)


def helper(ctx: Context, path: str) -> Op[str]:
    written = yield from ctx.step(write_file, path)
    return written


def yields_every_op(ctx: Context) -> Op[str]:
    first = yield from ctx.step(write_file, "/tmp/a")
    named = yield from ctx.step_as("write")(write_file, "/tmp/b")
    nested = yield from helper(ctx, "/tmp/c")
    verdict = yield from ctx.sample_schema("judge", schema=Verdict)
    called = yield from ctx.sample_tools("look it up", tools=[LOOKUP])
    roll = yield from ctx.random()
    pick = yield from ctx.choice(["x", "y"])
    later = ctx.step(write_file, "/tmp/d")  # made now, run below
    branched = yield from ctx.branch(
        lambda c: c.step(write_file, "/tmp/e"),
        lambda c: helper(c, "/tmp/f"),
        lambda c: c.random(),
    )
    last = yield from later
    return (
        f"{first}{named}{nested}{verdict.parsed.ok}{called.tool_calls[0].name}"
        f"{roll < 1}{pick in 'xy'}{branched[:2]}{last}"
    )


def plain_returns_a_step(ctx: Context) -> Op[str]:
    return ctx.step(write_file, "/tmp/plain")  # a plain function's op is the program


def yield_every_op_peer() -> ScriptedPeer:
    return ScriptedPeer(samples=[text('{"ok": true}'), tool_calls(("lookup", {}))])


def test_ops_iterated_nested_later_in_a_branch_or_as_the_program_are_not_reported(
    reported: list[warnings.WarningMessage],
) -> None:
    ran.clear()
    done = run_scripted(tool(yields_every_op), {}, yield_every_op_peer())
    assert done == ("/tmp/a/tmp/b/tmp/cTruelookupTrueTrue('/tmp/e', '/tmp/f')/tmp/d")
    assert run_scripted(tool(plain_returns_a_step), {}, ScriptedPeer()) == "/tmp/plain"
    assert sorted(ran) == [f"/tmp/{n}" for n in "abcdef"] + ["/tmp/plain"]
    assert reported == []


def test_a_replay_builds_its_ops_again_and_reports_none(
    reported: list[warnings.WarningMessage],
) -> None:
    journal = Journal()
    first = run_scripted(
        tool(yields_every_op), {}, yield_every_op_peer(), journal=journal
    )
    ran.clear()
    restored = Journal.from_json(journal.to_json())
    assert run_scripted(
        tool(yields_every_op), {}, ScriptedPeer(), journal=restored
    ) == (first)
    assert ran == []  # every step came from the journal
    assert reported == []


def test_ops_built_outside_a_call_are_not_tracked(
    reported: list[warnings.WarningMessage],
) -> None:
    ctx = Context()
    ctx.step(write_file, "/tmp/inspected")
    ctx.random()
    assert reported == []


def test_as_an_error_a_forgotten_step_fails_the_call() -> None:
    ran.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(EffectNeverYielded, match=r"yield from ctx\.step\(\.\.\.\)"):
            run_scripted(tool(forgets_a_step), {}, ScriptedPeer())
    assert ran == []


def rolls_often(ctx: Context) -> Op[float]:
    total = 0.0
    for _ in range(50):
        total += yield from ctx.random()
    return total


def test_a_call_of_many_ops_keeps_no_note_of_each_once_it_has_started() -> None:
    # A long task makes thousands of steps; the op of each, started, is
    # dropped from the notes, or the call would carry them all while parked
    # and search them on every yield.
    stepper = Stepper(tool(rolls_often).program(None), Context())
    stepper.start()
    for _ in range(50):
        ((key, _question),) = stepper.pending().items()
        stepper.answer(key, 0)
        assert not stepper._unyielded  # pyright: ignore[reportPrivateUsage]
    assert stepper.outcome == Returned(0.0)

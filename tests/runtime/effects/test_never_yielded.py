"""An effect made and never yielded is reported when its call ends, naming
where it was made: the way Python reports a coroutine that was never awaited.

``ctx.sample("say hi")`` without ``yield from`` builds the question and drops
it: the model is never asked, and the call succeeds as if nothing were wrong.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Iterator

import pytest

from runtime import Context, Op, tool
from runtime.errors import EffectNeverYielded
from runtime.testing import ScriptedPeer, run_scripted, text


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

"""An effect used as if it were its result, or awaited, names the fix.

Two habits a newcomer brings: forgetting ``yield from`` (``answer =
ctx.elicit(...)``, then ``answer.content``), and awaiting effects as in an
``async def`` tool of another framework (``await ctx.sample(...)``). Before,
the first ended in ``AttributeError: 'Elicit' object has no attribute
'content'`` and the second in ``object Sample can't be used in 'await'
expression``: true, and no help.
"""

from __future__ import annotations

import copy
import pickle
from typing import Any

import pytest
import trio
from pydantic import BaseModel

from runtime import Context, ElicitKey, Op, tool
from runtime.errors import ScriptExhausted, StepFailed, YieldMCPError
from runtime.lowlevel import run
from runtime.testing import ScriptedPeer, run_scripted


class Ok(BaseModel):
    ok: bool


OK = ElicitKey("ok", Ok)


def test_reading_a_result_off_an_effect_names_yield_from() -> None:
    ctx = Context({"ok": Ok})
    answer: Any = ctx.elicit(OK, "Go?")
    with pytest.raises(AttributeError) as raised:
        _ = answer.content
    message = str(raised.value)
    assert "'Elicit' object has no attribute 'content'" in message
    assert "answer = yield from ctx.elicit(...)" in message
    assert "\n" not in message
    sample: Any = ctx.sample("hi")
    with pytest.raises(AttributeError, match=r"yield from ctx\.sample\(\.\.\.\)"):
        _ = sample.text


def test_an_effect_still_has_its_own_attributes_and_plain_protocols() -> None:
    sample = Context().sample("hi")
    assert sample.max_tokens == 1024
    assert not hasattr(sample, "text")
    assert getattr(sample, "text", "missing") == "missing"
    assert copy.copy(sample) == sample
    assert pickle.loads(pickle.dumps(Context().now())) == Context().now()
    with pytest.raises(AttributeError) as raised:
        _ = sample.__no_such_dunder__  # type: ignore[attr-defined]
    assert "yield from" not in str(raised.value)


def test_awaiting_an_effect_says_effects_are_yielded() -> None:
    async def awaits(ctx: Context) -> str:
        got: Any = await ctx.sample("hi")  # type: ignore[misc]
        return str(got)

    coroutine = awaits(Context())
    with pytest.raises(TypeError) as raised:
        coroutine.send(None)
    message = str(raised.value)
    assert "effects are yielded, not awaited" in message
    assert "yield from ctx.sample(...)" in message


async def async_tool(ctx: Context) -> str:
    got: Any = await ctx.sample("hi")  # type: ignore[misc]
    return str(got)


def test_an_async_tool_awaiting_an_effect_fails_with_the_hint() -> None:
    with pytest.raises(StepFailed, match="effects are yielded, not awaited"):
        trio.run(run, tool(async_tool), {}, ScriptedPeer())


def test_run_scripted_gives_an_async_tool_the_same_hint_not_stub_it() -> None:
    # Before, run_scripted told the author to stub their own tool:
    # "cannot run async step 'async_tool': stub it (ScriptedPeer(steps=...))".
    with pytest.raises(StepFailed) as raised:
        run_scripted(tool(async_tool), {}, ScriptedPeer())
    message = str(raised.value)
    assert message.startswith("step 'async_tool' failed: InvalidEffect: ")
    assert "effects are yielded, not awaited" in message
    assert "stub" not in message


async def adds(a: int, b: int) -> int:
    return a + b


async def sleeps(ctx: Context) -> str:
    await trio.sleep(0)
    return "slept"


def test_run_scripted_runs_an_async_tool_that_awaits_nothing() -> None:
    assert run_scripted(tool(adds), {"a": 2, "b": 3}, ScriptedPeer()) == 5
    with pytest.raises(ScriptExhausted) as raised:
        run_scripted(tool(sleeps), {}, ScriptedPeer())
    assert str(raised.value).startswith(
        "run_scripted cannot run the async def tool 'sleeps': it awaits I/O, "
        "which needs trio: use runtime.lowlevel.run"
    )
    assert "\n" not in str(raised.value)


def test_a_missing_yield_from_in_a_tool_names_the_fix() -> None:
    @tool(elicits=[OK])
    def forgets(ctx: Context) -> Op[str]:
        answer: Any = ctx.elicit(OK, "Go?")
        yield ctx.log("info", "asked")
        return str(answer.content)

    with pytest.raises(AttributeError, match=r"yield from ctx\.elicit"):
        run_scripted(forgets, {}, ScriptedPeer())


def test_a_patch_point_tested_without_yield_from_names_the_fix() -> None:
    # `if ctx.patched("fee"):` was always true (an effect is an object): an
    # old call replayed took the new path and diverged in production. The
    # same in a step, where a patch point cannot be asked at all.
    @tool
    def forgets(ctx: Context) -> Op[str]:
        fee = "fee" if ctx.patched("fee") else "none"
        yield ctx.log("info", fee)
        return fee

    with pytest.raises(TypeError, match=r"if \(yield from ctx\.patched\("):
        run_scripted(forgets, {}, ScriptedPeer())

    def in_a_step(ctx: Context) -> str:
        return "fee" if ctx.patched("fee") else "none"

    @tool
    def steps(ctx: Context) -> Op[str]:
        return (yield from ctx.step(in_a_step, ctx))

    with pytest.raises(StepFailed, match=r"yield from ctx\.patched"):
        run_scripted(steps, {}, ScriptedPeer())


def test_habits_of_other_apis_are_one_typed_line_naming_the_fix() -> None:
    # Before: a stop string became one stop sequence per character (the
    # model stopped at the first space), 'warn' raised attrs' ValueError
    # with its whole Attribute dump, a dict message an AttributeError, and
    # a number as a log's logger or progress's message went on the wire.
    ctx = Context()
    cases: list[tuple[Any, str]] = [
        (
            lambda: ctx.sample("hi", stop_sequences="THE END"),
            "sample: stop_sequences is a list of strings, got the string 'THE END': "
            "write stop_sequences=['THE END']",
        ),
        (
            lambda: ctx.log("warn", "x"),  # type: ignore[arg-type]
            "log: level must be one of debug, info, notice, warning, error, "
            "critical, alert, emergency (MCP's, in lower case), got 'warn'",
        ),
        (
            lambda: ctx.log("info", "x", logger=5),  # type: ignore[arg-type]
            "log: logger must be a str or None, got int",
        ),
        (
            lambda: ctx.progress(1, message=123),  # type: ignore[arg-type]
            "progress: message must be a str or None, got int",
        ),
        (
            lambda: ctx.sample(messages=[{"role": "user", "content": "hi"}]),  # type: ignore[list-item]
            "message 0 is a dict, not a Message: write Message.user('...') or "
            "Message.assistant('...')",
        ),
    ]
    for make, said in cases:
        with pytest.raises(YieldMCPError) as raised:  # InvalidEffect, InvalidMessages
            make()
        assert str(raised.value) == said
    assert ctx.sample("hi", stop_sequences=["THE END"]).stop_sequences == ("THE END",)

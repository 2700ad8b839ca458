"""A ``ScriptedPeer``'s mistakes are named, not run.

A misspelt step name in ``ScriptedPeer(steps=...)`` used to run the real
step, silently (in a test, perhaps a payment), and a misspelt form key
failed with ``no answers for elicit 'confirm'``, not saying the script had
answers for ``'confrim'``. A plain function given to ``run_scripted`` and a
list given as ``elicits`` were ``AttributeError``s about ``parse_arguments``
and ``items``.
"""

from __future__ import annotations

import warnings

import pytest
from pydantic import BaseModel

from runtime import Context, ElicitKey, Op, tool
from runtime.errors import (
    InvalidScript,
    InvalidTool,
    ScriptExhausted,
    ScriptNotUsed,
    YieldMCPError,
)
from runtime.testing import ScriptedPeer, accept, run_scripted

charged: list[int] = []


def charge_card(cents: int) -> str:
    charged.append(cents)  # a real payment, in the code under test
    return f"real receipt for {cents}"


def ship(order: str) -> str:
    return f"shipped {order}"


@tool
def checkout(ctx: Context) -> Op[str]:
    receipt = yield from ctx.step(charge_card, 1200)
    return receipt


class Confirm(BaseModel):
    ok: bool


CONFIRM = ElicitKey("confirm", Confirm)


@tool(elicits=[CONFIRM])
def confirm(ctx: Context) -> Op[str]:
    answer = yield from ctx.elicit(CONFIRM, "Go?")
    return answer.action


def test_a_misspelt_step_stub_is_reported_naming_the_step_that_ran() -> None:
    peer = ScriptedPeer(steps={"charge_crad": ["stub receipt"]})
    with pytest.raises(ScriptNotUsed) as raised:
        run_scripted(checkout, {}, peer)
    assert str(raised.value) == (
        "ScriptedPeer(steps=...) names 'charge_crad', which no call asked for "
        "(did you mean 'charge_card', which the call asked for?)"
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again = ScriptedPeer(steps={"charge_crad": ["stub receipt"]})
        run_scripted(checkout, {}, again)
    [warning] = caught
    assert warning.filename == __file__  # the test's line that ran the call


def test_a_misspelt_form_key_is_named_by_the_error_and_the_warning() -> None:
    peer = ScriptedPeer(elicits={"confrim": [accept(ok=True)]})
    with pytest.raises(ScriptExhausted) as raised:
        run_scripted(confirm, {}, peer)
    assert str(raised.value) == (
        "the script has no answers for elicit 'confirm' "
        "(the script has answers for 'confrim': a typo?)"
    )
    # The warning, an error under pytest's filterwarnings, is a note on the
    # call's own error.
    assert raised.value.__notes__ == [
        "ScriptedPeer(elicits=...) names 'confrim', which no call asked for "
        "(did you mean 'confirm', which the call asked for?)"
    ]


def test_names_for_later_calls_or_paths_not_taken_are_not_reported() -> None:
    # One peer scripts several calls, or paths a call may not take: a name
    # is reported only when the call ran a step (asked a form) the script
    # lacks, and once in the peer's life.
    peer = ScriptedPeer(
        steps={"charge_card": ["stub"], "ship": ["stubbed ship"]},
        elicits={"confirm": [accept(ok=True)], "other": []},
    )
    assert run_scripted(checkout, {}, peer) == "stub"
    assert run_scripted(confirm, {}, peer) == "accept"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        unstubbed = ScriptedPeer(steps={"charge": ["stub"]})
        assert run_scripted(checkout, {}, unstubbed) == "real receipt for 1200"
        assert run_scripted(checkout, {}, unstubbed) == "real receipt for 1200"
    [warning] = caught
    assert warning.category is ScriptNotUsed
    assert "'charge', which no call asked for" in str(warning.message)


def not_decorated(ctx: Context) -> Op[str]:
    reply = yield from ctx.sample("hi")
    return reply.text


def test_a_plain_function_given_to_run_scripted_is_told_to_use_tool() -> None:
    # Before: AttributeError: 'function' object has no attribute 'parse_arguments'.
    with pytest.raises(InvalidTool) as raised:
        run_scripted(not_decorated, {}, ScriptedPeer())  # type: ignore[arg-type]
    assert str(raised.value) == (
        "run_scripted runs a tool, and 'not_decorated' is a plain function: "
        "decorate it with @tool"
    )
    with pytest.raises(
        InvalidTool, match=r"\(a function decorated with @tool\), got a str"
    ):
        run_scripted("checkout", {}, ScriptedPeer())  # type: ignore[arg-type]


def test_a_script_not_by_name_says_what_it_takes() -> None:
    # Before: AttributeError: 'list' object has no attribute 'items'.
    with pytest.raises(InvalidScript) as raised:
        ScriptedPeer(elicits=[accept(ok=True)])  # type: ignore[arg-type]
    assert str(raised.value) == (
        "ScriptedPeer: elicits maps each form's key to its answers "
        "(elicits={'confirm': [...]}), got a list"
    )
    assert isinstance(raised.value, YieldMCPError)
    with pytest.raises(InvalidScript, match=r"steps maps each step's name"):
        ScriptedPeer(steps=["stub receipt"])  # type: ignore[arg-type]

"""Starting a program: one that ends before it starts needs no stepper.

A tool whose body is a plain function runs the program :class:`AtOnce`; an
error making the generator ends a program too. ``start`` gives their outcome
alone; anything else gets a started :class:`Stepper`. Either way the outcome
is the one a stepper reaches, which ``Stepper.start`` reports for all.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest
from pydantic import BaseModel

from runtime import Context, Op, tool
from runtime.effects import AtOnce
from runtime.errors import LocalProtocolError, ToolError
from runtime.lowlevel import Finished, Raised, Returned, Stepper, start


class Out(BaseModel):
    n: int


@tool
def plain(ctx: Context) -> str:
    return "at once"


@tool
def plain_fails(ctx: Context) -> str:
    raise ToolError("no such city")


@tool
def plain_wrong_output(ctx: Context) -> Out:
    return {"n": "not a number"}  # type: ignore[return-value]


@tool
def plain_checked_output(ctx: Context) -> Out:
    return {"n": "3"}  # type: ignore[return-value]  # validated into Out(n=3)


@tool
def logs_then_returns(ctx: Context) -> Op[str]:
    yield ctx.log("info", "hello")
    return "logged"


@tool
def returns_without_yielding(ctx: Context) -> Op[str]:
    return "a generator all the same"
    yield  # pyright: ignore[reportUnreachable]


def _through_a_stepper(made: Any) -> Any:
    stepper = Stepper(made.program(made.parse_arguments({})), made.context())
    stepper.start()
    finished = [e for e in stepper.events() if isinstance(e, Finished)]
    return finished[0].outcome if finished else None


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, Raised) and isinstance(b, Raised):
        return type(a.error) is type(b.error) and str(a.error) == str(b.error)
    return a == b


@pytest.mark.parametrize(
    ("made", "outcome"),
    [
        (plain, Returned("at once")),
        (plain_checked_output, Returned(Out(n=3))),
        (plain_fails, Raised(ToolError("no such city"))),
    ],
    ids=["returns", "output-checked", "raises"],
)
def test_a_plain_function_s_outcome_comes_without_a_stepper(
    made: Any, outcome: Any
) -> None:
    program = made.program(made.parse_arguments({}))
    started = start(program, made.context())
    assert not isinstance(started, Stepper)
    assert _same(started, outcome)
    # ... and it is the outcome a stepper reaches, as its Finished event.
    assert _same(_through_a_stepper(made), outcome)


def test_an_output_that_fails_its_check_is_the_call_s_error() -> None:
    program = plain_wrong_output.program(plain_wrong_output.parse_arguments({}))
    started = start(program, plain_wrong_output.context())
    assert isinstance(started, Raised)
    assert isinstance(started.error, TypeError)
    assert "not a valid" in str(started.error)


def test_an_error_making_the_generator_ends_the_program() -> None:
    def broken(ctx: Any) -> Generator[Any, Any, Any]:
        raise LookupError("no generator")

    started = start(broken, None)
    assert isinstance(started, Raised)
    assert isinstance(started.error, LookupError)


@pytest.mark.parametrize("made", [logs_then_returns, returns_without_yielding])
def test_a_generator_gets_a_started_stepper(made: Any) -> None:
    started = start(made.program(made.parse_arguments({})), made.context())
    assert isinstance(started, Stepper)
    events = started.events()
    assert isinstance(events[-1], Finished)  # its notices come first, as events
    assert isinstance(events[-1].outcome, Returned)


def test_a_stepper_whose_program_ended_at_once_cannot_start_again() -> None:
    for made in (plain, plain_fails):
        stepper = Stepper(made.program(made.parse_arguments({})), made.context())
        stepper.start()
        with pytest.raises(LocalProtocolError, match="already started"):
            stepper.start()


# --- AtOnce: the program of a plain function -----------------------------------------


def test_at_once_steps_like_the_generator_that_returns_its_value() -> None:
    program = AtOnce("v")
    assert isinstance(program, Generator)
    with pytest.raises(StopIteration) as stopped:
        next(program)
    assert stopped.value.value == "v"
    with pytest.raises(StopIteration) as stopped:
        program.send(None)
    assert stopped.value.value == "v"

    def outer() -> Generator[Any, Any, str]:
        inner = yield from AtOnce("inner")
        return f"got {inner}"

    with pytest.raises(StopIteration) as stopped:
        next(outer())
    assert stopped.value.value == "got inner"


def test_at_once_raises_what_is_thrown_into_it_and_closes_quietly() -> None:
    program = AtOnce(1)
    with pytest.raises(KeyError):
        program.throw(KeyError("k"))
    program.close()

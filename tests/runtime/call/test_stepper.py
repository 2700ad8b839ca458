"""The interpreter's semantics, through run_scripted (no trio, no time)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from pydantic import BaseModel

from runtime import Context, Limits, Op, tool
from runtime.errors import LocalProtocolError, PeerError, ScriptExhausted
from runtime.lowlevel import (
    BranchDepthExceeded,
    InvalidAnswer,
    InvalidEffect,
    Journal,
    ProgressNotIncreasing,
    Stepper,
    TokenBudgetExceeded,
    Usage,
)
from runtime.testing import ScriptedPeer, accept, cancel, decline, run_scripted, text


def echo(ctx: Context, prompt: str) -> Op[str]:
    reply = yield from ctx.sample(prompt)
    return reply.text


def by_prompt(sample: object) -> object:
    prompt = sample.messages[-1].text  # type: ignore[attr-defined]
    return text(prompt.upper())


def test_yield_from_and_plain_yield_both_deliver_results() -> None:
    @tool
    def both(ctx: Context) -> Op[str]:
        a = yield from ctx.sample("a")
        b = yield ctx.sample("b")
        return a.text + b.text

    assert run_scripted(both, {}, ScriptedPeer(samples=by_prompt)) == "AB"


@pytest.mark.parametrize(
    ("value", "hint"),
    [
        (lambda: (yield), "did you mean `yield from`"),
        (lambda: print, "did you forget to call it"),
        (lambda: 42, "not an effect"),
    ],
    ids=["generator", "callable", "int"],
)
def test_yielding_a_non_effect_raises_type_error_naming_the_mistake(
    value: object, hint: str
) -> None:
    @tool
    def bad(ctx: Context) -> Op[None]:
        yield value()  # type: ignore[operator,misc]

    with pytest.raises(InvalidEffect, match=hint) as info:
        run_scripted(bad, {}, ScriptedPeer())
    assert isinstance(info.value, TypeError)


def test_plain_functions_are_tools_too() -> None:
    @tool
    def add(ctx: Context) -> int:
        return 3

    assert run_scripted(add, {}, ScriptedPeer()) == 3


def test_branch_results_come_back_in_child_order() -> None:
    @tool
    def fan(ctx: Context) -> Op[tuple[str, ...]]:
        return (yield from ctx.branch(*(lambda c, p=p: echo(c, p) for p in "xyz")))

    peer = ScriptedPeer(samples=by_prompt)
    assert run_scripted(fan, {}, peer) == ("X", "Y", "Z")
    assert [a.key for a in peer.asked] == ["0.0/0", "0.1/0", "0.2/0"]


def test_an_empty_branch_returns_an_empty_tuple() -> None:
    @tool
    def nothing(ctx: Context) -> Op[tuple[object, ...]]:
        return (yield from ctx.branch())

    assert run_scripted(nothing, {}, ScriptedPeer()) == ()


def test_first_failure_cancels_siblings_in_reverse_order_and_raises_a_group() -> None:
    closed: list[str] = []

    def child(ctx: Context, name: str) -> Op[str]:
        try:
            return (yield from echo(ctx, name))
        finally:
            closed.append(name)

    def failing(ctx: Context) -> Op[str]:
        yield ctx.log("info", "about to fail")
        raise ValueError("boom")

    @tool
    def fan(ctx: Context) -> Op[str]:
        try:
            yield from ctx.branch(
                lambda c: child(c, "a"),
                lambda c: child(c, "b"),
                failing,
                lambda c: child(c, "d"),
            )
        except ExceptionGroup as group:
            return f"{type(group.exceptions[0]).__name__}:{group.exceptions[0]}"
        return "unreachable"

    # The scripted peer never answers: every child waits until the failure.
    assert run_scripted(fan, {}, ScriptedPeer(samples=[])) == "ValueError:boom"
    assert closed == ["d", "b", "a"]


def test_a_branch_failure_is_an_exception_group_even_for_one_error() -> None:
    def failing(ctx: Context) -> Op[None]:
        raise KeyError("k")
        yield  # pragma: no cover

    @tool
    def fan(ctx: Context) -> Op[None]:
        yield from ctx.branch(failing)

    with pytest.raises(ExceptionGroup) as info:
        run_scripted(fan, {}, ScriptedPeer())
    assert info.group_contains(KeyError)


def test_peer_errors_are_raised_at_the_yield() -> None:
    @tool
    def ask(ctx: Context) -> Op[str]:
        try:
            yield from ctx.sample("x")
        except PeerError as error:
            return f"caught {error.code}"
        return "no"

    peer = ScriptedPeer(samples=[PeerError(-1, "User rejected sampling request")])
    assert run_scripted(ask, {}, peer) == "caught -1"


def test_running_out_of_script_raises_script_exhausted() -> None:
    @tool
    def ask(ctx: Context) -> Op[str]:
        return (yield from echo(ctx, "x"))

    with pytest.raises(ScriptExhausted, match="no more answers for sample"):
        run_scripted(ask, {}, ScriptedPeer(samples=[]))


def test_branch_children_must_be_factories() -> None:
    @tool
    def fan(ctx: Context) -> Op[None]:
        yield ctx.branch(echo(ctx, "x"))  # type: ignore[arg-type]

    with pytest.raises(InvalidEffect, match="started generator"):
        run_scripted(fan, {}, ScriptedPeer())


def test_a_child_factory_must_return_a_generator() -> None:
    @tool
    def fan(ctx: Context) -> Op[None]:
        yield ctx.branch(lambda c: 3)  # type: ignore[arg-type,return-value]

    with pytest.raises(ExceptionGroup) as info:
        run_scripted(fan, {}, ScriptedPeer())
    assert info.group_contains(InvalidEffect, match="not a generator")


# --- limits -------------------------------------------------------------------------


def nest(ctx: Context, depth: int) -> Op[int]:
    if depth == 0:
        return 0
    (inner,) = yield from ctx.branch(lambda c: nest(c, depth - 1))
    return inner + 1


@pytest.mark.parametrize(("max_depth", "levels", "ok"), [(3, 3, True), (2, 3, False)])
def test_branch_depth_limit(max_depth: int, levels: int, ok: bool) -> None:
    @tool
    def deep(ctx: Context) -> Op[int]:
        (n,) = yield from ctx.branch(
            lambda c: nest(c, levels - 1), limits=Limits(max_depth=max_depth)
        )
        return n + 1

    if ok:
        assert run_scripted(deep, {}, ScriptedPeer()) == levels
    else:
        with pytest.raises(ExceptionGroup) as info:
            run_scripted(deep, {}, ScriptedPeer())
        assert info.group_contains(BranchDepthExceeded, depth=max_depth)


def test_token_budget_cancels_the_branch_and_raises_bare() -> None:
    @tool
    def spend(ctx: Context) -> Op[str]:
        try:
            yield from ctx.branch(
                lambda c: echo(c, "a"),
                lambda c: echo(c, "b"),
                limits=Limits(max_tokens=10),
            )
        except TokenBudgetExceeded as exceeded:
            return f"over in {exceeded.branch_key}"
        return "within budget"

    peer = ScriptedPeer(
        samples=[text("x", usage=Usage(4, 4)), text("y", usage=Usage(2, 2))]
    )
    assert run_scripted(spend, {}, peer) == "over in 0"
    peer = ScriptedPeer(
        samples=[text("x", usage=Usage(1, 1)), text("y", usage=Usage(1, 1))]
    )
    assert run_scripted(spend, {}, peer) == "within budget"


def test_token_estimates_apply_when_no_usage_is_reported() -> None:
    @tool
    def spend(ctx: Context) -> Op[str]:
        (r,) = yield from ctx.branch(
            lambda c: echo(c, "x" * 80), limits=Limits(max_tokens=10)
        )
        return r

    with pytest.raises(TokenBudgetExceeded):
        run_scripted(spend, {}, ScriptedPeer(samples=[text("y" * 80)]))


# --- elicitation, notices, time -----------------------------------------------------


class Confirm(BaseModel):
    ok: bool
    note: str = ""


@tool(elicits={"confirm": Confirm})
def confirm(ctx: Context) -> Op[str]:
    reply = yield from ctx.elicit("confirm", "Sure?", about="thing")
    return f"{reply.action}:{reply.content}"


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (accept(ok=True), "accept:ok=True note=''"),
        (decline(), "decline:None"),
        (cancel(), "cancel:None"),
    ],
)
def test_elicit_outcomes_are_values(reply: object, expected: str) -> None:
    peer = ScriptedPeer(elicits={"confirm": [reply]})
    assert run_scripted(confirm, {}, peer) == expected
    (asked,) = peer.asked
    assert asked.question.context == {"about": "thing"}  # type: ignore[attr-defined]


def test_accepted_content_that_breaks_the_model_raises_invalid_answer() -> None:
    peer = ScriptedPeer(elicits={"confirm": [accept(ok="perhaps")]})
    with pytest.raises(InvalidAnswer, match=r"confirm.*ok"):
        run_scripted(confirm, {}, peer)


def test_eliciting_an_undeclared_key_fails_clearly() -> None:
    @tool
    def ask(ctx: Context) -> Op[None]:
        yield ctx.elicit("nope", "hm")

    with pytest.raises(InvalidEffect, match="not declared"):
        run_scripted(ask, {}, ScriptedPeer())


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda ctx: ctx.elicit("confirm", ""), "message"),
        (lambda ctx: ctx.elicit_url("", "https://example.com/x"), "message"),
        (lambda ctx: ctx.elicit_url("Sign in", ""), "url"),
    ],
)
def test_an_empty_message_or_url_is_refused_where_the_effect_is_made(
    make: Callable[[Context], object], field: str
) -> None:
    with pytest.raises(ValueError, match=f"'{field}' must be a non-empty string"):
        make(confirm.context())


class Agree(BaseModel):
    yes: bool


@tool(elicits={"confirm": Agree})
def agree(ctx: Context) -> Op[bool]:
    reply = yield from ctx.elicit("confirm", "Sure?")
    return reply.content is not None and reply.content.yes


def test_a_question_asked_again_is_one_value_with_its_own_model_and_context() -> None:
    first = confirm.context().elicit("confirm", "Sure?")
    # Made once, and found again: a replay asks every question anew.
    assert confirm.context().elicit("confirm", "Sure?") is first
    same_key_other_model = agree.context().elicit("confirm", "Sure?")
    assert (first.model, same_key_other_model.model) == (Confirm, Agree)
    peer = ScriptedPeer(elicits={"confirm": [accept(yes=True)]})
    assert run_scripted(agree, {}, peer)
    with_context = confirm.context().elicit("confirm", "Sure?", about="x")
    assert with_context.context == {"about": "x"}
    assert first.context == {}
    other_message = confirm.context().elicit("confirm", "Really?")
    assert (other_message.message, first.message) == ("Really?", "Sure?")


def test_whoever_answers_a_shared_question_cannot_change_it() -> None:
    asked = confirm.context().elicit("confirm", "Sure?")
    request = asked.request()
    request.context["about"] = "changed"  # type: ignore[index]  # a careless host
    again = confirm.context().elicit("confirm", "Sure?")
    assert again.request().context == {}
    assert again.fingerprint()["context"] == {}


def test_notices_are_delivered_in_order_and_progress_must_increase() -> None:
    @tool
    def report(ctx: Context) -> Op[None]:
        yield ctx.log("info", "start")
        yield ctx.progress(1, 3)
        yield ctx.progress(2, 3, "half")
        yield ctx.progress(2, 3)

    peer = ScriptedPeer()
    with pytest.raises(ProgressNotIncreasing):
        run_scripted(report, {}, peer)
    assert [k for k, _ in peer.notices] == ["0", "1", "2"]


# --- journal and replay -------------------------------------------------------------


@tool(elicits={"confirm": Confirm})
def journaled(ctx: Context) -> Op[str]:
    started = yield from ctx.now()
    roll = yield from ctx.random()
    yield ctx.log("info", "asking")
    reply = yield from ctx.elicit("confirm", "Sure?")
    a, b = yield from ctx.branch(lambda c: echo(c, "a"), lambda c: echo(c, "b"))
    return f"{started}|{roll:.6f}|{reply.action}|{a}{b}"


def test_replay_from_a_journal_asks_nothing_and_returns_the_same() -> None:
    journal = Journal()
    peer = ScriptedPeer(samples=by_prompt, elicits={"confirm": [accept(ok=True)]})
    first = run_scripted(journaled, {}, peer, journal=journal, clock=lambda: 12.5)
    assert len(journal) == 5

    silent = ScriptedPeer()
    restored = Journal.from_json(journal.to_json())
    again = run_scripted(journaled, {}, silent, journal=restored, clock=lambda: 99.0)
    assert again == first
    assert silent.asked == []
    assert silent.notices == []
    assert restored.hits == 5


def test_a_changed_question_is_asked_again_not_answered_stale() -> None:
    @tool
    def ask(ctx: Context) -> Op[str]:
        return (yield from echo(ctx, "first"))

    @tool(name="ask")
    def changed(ctx: Context) -> Op[str]:
        return (yield from echo(ctx, "second"))

    journal = Journal()
    run_scripted(ask, {}, ScriptedPeer(samples=by_prompt), journal=journal)
    peer = ScriptedPeer(samples=by_prompt)
    assert run_scripted(changed, {}, peer, journal=journal) == "SECOND"
    assert [a.key for a in peer.asked] == ["0"]


def test_a_tool_that_fails_after_its_answers_fails_the_same_on_replay() -> None:
    @tool(elicits={"confirm": Confirm})
    def refuses(ctx: Context) -> Op[str]:
        first = yield from ctx.elicit("confirm", "Sure?")
        second = yield from ctx.elicit("confirm", "Really sure?")
        raise LookupError(f"refused after {first.action} and {second.action}")

    journal = Journal()
    peer = ScriptedPeer(elicits={"confirm": [accept(ok=True), decline()]})
    with pytest.raises(LookupError, match="after accept and decline"):
        run_scripted(refuses, {}, peer, journal=journal)

    silent = ScriptedPeer()
    restored = Journal.from_json(journal.to_json())
    with pytest.raises(LookupError, match="after accept and decline"):
        run_scripted(refuses, {}, silent, journal=restored)
    assert silent.asked == []
    assert restored.hits == 2


class Params(BaseModel):
    n: int


class Side(BaseModel):
    mark: str


def test_handoff_before_runs_once_and_its_result_is_journaled() -> None:
    from runtime import handoff

    calls: list[int] = []

    def before(params: Params) -> Side:
        calls.append(params.n)
        return Side(mark=f"m{params.n}{len(calls)}")

    def client(side: Side, ctx: Context) -> Op[str]:
        reply = yield from ctx.sample(f"you are {side.mark}")
        return reply.text

    def after(side: Side, result: str) -> str:
        return f"{side.mark}:{result}"

    game = handoff(before=before, client=client, after=after, name="game")
    journal = Journal()
    assert run_scripted(
        game, {"n": 1}, ScriptedPeer(samples=by_prompt), journal=journal
    ) == ("m11:YOU ARE M11")
    again = run_scripted(game, {"n": 1}, ScriptedPeer(), journal=journal)
    assert again == "m11:YOU ARE M11"
    assert calls == [1]


@pytest.mark.parametrize("journal", [None, Journal()], ids=["live", "journaled"])
def test_a_pending_question_has_the_digest_of_the_question(
    journal: Journal | None,
) -> None:
    stepper = Stepper(confirm.program(confirm.parse_arguments({})), confirm.context(),
                      journal=journal)  # fmt: skip
    stepper.start()
    ((key, question),) = stepper.pending().items()
    assert stepper.digest(key) == question.digest()
    stepper.answer(key, accept(ok=True))
    with pytest.raises(LocalProtocolError, match="no question is pending"):
        stepper.digest(key)


@pytest.mark.parametrize(
    "data",
    [
        {},
        {"answers": {}},
        {"answers": {}, "notices": None},
        {"answers": [], "notices": []},
        {"answers": {"0": ["digest"]}, "notices": []},
        {"answers": {"0": [1, {}]}, "notices": []},
    ],
)
def test_a_malformed_journal_is_refused(data: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="malformed journal"):
        Journal.from_json(data)


def _tip(ctx: Context) -> Op[str]:
    reply = yield from ctx.sample("a tip")
    return reply.text


@tool
def returns_a_helper(ctx: Context) -> Op[object]:
    yield ctx.log("info", "planning")
    return _tip(ctx)  # `yield from` forgotten


@tool
def returns_an_effect(ctx: Context) -> str:
    return ctx.sample("hi")  # type: ignore[return-value]


@pytest.mark.filterwarnings("ignore::runtime.errors.EffectNeverYielded")
@pytest.mark.parametrize(
    ("returns", "said"),
    [
        (
            returns_a_helper,
            "the tool returned _tip(...), a generator, not its result: write "
            "`return (yield from _tip(...))`",
        ),
        (
            returns_an_effect,
            "the tool returned ctx.sample(...), an effect, not its result: write "
            "`return (yield from ctx.sample(...))`",
        ),
    ],
)
def test_a_returned_generator_or_effect_fails_the_call_naming_yield_from(
    returns: object, said: str
) -> None:
    # Before, run_scripted returned the generator object, and a server
    # drained it into a list for the wire.
    import trio

    from runtime.lowlevel import run

    with pytest.raises(InvalidEffect) as raised:
        run_scripted(returns, {}, ScriptedPeer(samples=[text("go early")]))  # type: ignore[arg-type]
    assert str(raised.value) == said
    with pytest.raises(InvalidEffect, match=r"return \(yield from "):
        trio.run(run, returns, {}, ScriptedPeer(samples=[text("go early")]))


def _fails(ctx: Context) -> Op[str]:
    yield ctx.log("info", "a")
    raise ValueError("a failed")


def _ignores_close(ctx: Context) -> Op[str]:
    try:
        yield from ctx.sample("b")
    except GeneratorExit:
        yield ctx.log("info", "b ignores close")  # the line named
    return "b"


@tool
def swallows_generator_exit(ctx: Context) -> Op[object]:
    return (yield from ctx.branch(_fails, _ignores_close))


def test_a_child_that_yields_on_close_is_told_to_let_generator_exit_through(
    recwarn: pytest.WarningsRecorder,
) -> None:
    # Before: RuntimeError('generator ignored GeneratorExit') in the group, and
    # an EffectNeverYielded warning saying to write `yield from ctx.log(...)`
    # of a line that has its yield.
    with pytest.raises(ExceptionGroup) as raised:
        run_scripted(swallows_generator_exit, {}, ScriptedPeer(samples=[text("x")]))
    failed, ignored = raised.value.exceptions
    assert isinstance(failed, ValueError)
    assert isinstance(ignored, InvalidEffect)
    assert str(ignored) == (
        f"_ignores_close() at {__file__}:{_ignores_close.__code__.co_firstlineno + 4} "
        "caught GeneratorExit and yielded again as its branch was cancelled: let "
        "GeneratorExit through (catch Exception, not BaseException or "
        "GeneratorExit, or re-raise it); a cancelled child cannot ask anything"
    )
    assert isinstance(ignored.__cause__, RuntimeError)
    assert list(recwarn) == []

"""three_views: three concurrent samples, one failing cancels the others."""

from __future__ import annotations

import pytest
import trio

from runtime import Context, Op
from runtime.lowlevel import PeerError, run
from runtime.testing import HeldPeer, ScriptedPeer, run_scripted, text
from tests.helpers import load_example

research = load_example("research")


def test_three_views_are_combined_in_child_order() -> None:
    def answer(sample: object) -> object:
        prompt = sample.messages[0].text  # type: ignore[attr-defined]
        for who in research.VIEWS:
            if who in prompt:
                return text(who.split()[-1])
        return text(prompt)

    peer = ScriptedPeer(samples=answer)
    combined = run_scripted(research.three_views, {"question": "Will it rain?"}, peer)
    assert "optimist: optimist\n- pessimist: pessimist\n- realist: realist" in combined


async def test_one_failing_view_cancels_the_other_two(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    closed: list[str] = []
    original = research.view

    def watched(ctx: Context, who: str, question: str) -> Op[str]:
        try:
            return (yield from original(ctx, who, question))
        finally:
            closed.append(who)

    monkeypatch.setattr(research, "view", watched)
    peer = HeldPeer()
    failures: list[BaseException] = []
    error = PeerError(-32603, "model overloaded")

    async def call() -> None:
        try:
            await run(research.three_views, {"question": "q"}, peer)
        except ExceptionGroup as group:
            failures.append(group)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(call)
        with trio.fail_after(5):
            await peer.wait_pending(3)
        # All three views are waiting; the pessimist's fails while the other
        # two are still pending.
        assert sorted(peer.held) == ["0.0/0", "0.1/0", "0.2/0"]
        assert closed == []
        peer.release("0.1/0", error)
    (group,) = failures
    # As documented: the failure surfaces as an ExceptionGroup holding it alone.
    assert isinstance(group, ExceptionGroup)
    assert group.exceptions == (error,)
    # Both siblings were cancelled: their samples withdrawn, their generators
    # closed in reverse start order, after the failing child had unwound.
    assert sorted(peer.withdrawn) == ["0.0/0", "0.2/0"]
    assert peer.held == {}
    optimist, pessimist, realist = research.VIEWS
    assert closed == [pessimist, realist, optimist]
    assert len(peer.asked) == 3  # the combining sample was never asked


@pytest.mark.parametrize("question", ["", None])
def test_the_question_is_validated(question: object) -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        run_scripted(research.three_views, {"question": question}, ScriptedPeer())

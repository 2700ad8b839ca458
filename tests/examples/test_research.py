"""three_views: three concurrent samples, one failing cancels the others."""

from __future__ import annotations

import pytest
import trio

from runtime import PeerError, run
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


async def test_one_failing_view_cancels_the_other_two() -> None:
    peer = HeldPeer()
    failures: list[BaseException] = []

    async def call() -> None:
        try:
            await run(research.three_views, {"question": "q"}, peer)
        except ExceptionGroup as group:
            failures.append(group)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(call)
        with trio.fail_after(5):
            await peer.wait_pending(3)
        peer.release("0.0/0", text("fine"))
        with trio.fail_after(5):
            await trio.testing.wait_all_tasks_blocked()
        peer.release("0.2/0", PeerError(-32603, "model overloaded"))
    (group,) = failures
    assert isinstance(group, ExceptionGroup)
    assert group.subgroup(PeerError) is not None
    assert peer.withdrawn == ["0.1/0"]
    assert len(peer.asked) == 3  # the combining sample was never asked


@pytest.mark.parametrize("question", ["", None])
def test_the_question_is_validated(question: object) -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        run_scripted(research.three_views, {"question": question}, ScriptedPeer())

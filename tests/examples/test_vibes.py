"""sample_llm and extract_vibes against the scripted peer."""

from __future__ import annotations

from runtime.lowlevel import CapabilityError, Log
from runtime.testing import ScriptedPeer, run_scripted, structured, text
from tests.helpers import load_example

vibes = load_example("vibes")


def test_sample_llm_forwards_the_question_and_returns_the_answer() -> None:
    peer = ScriptedPeer(samples=[text("melancholic, sparse", model="m1")])
    result = run_scripted(
        vibes.sample_llm,
        {"prompt": "Mood?", "max_tokens": 40, "system_prompt": "Be terse."},
        peer,
    )
    assert result == vibes.SampleLlmResponse(
        text="melancholic, sparse", model="m1", stop_reason="endTurn"
    )
    (sample,) = peer.samples
    assert (sample.max_tokens, sample.system_prompt) == (40, "Be terse.")
    assert sample.model_preferences.hints == ("claude-sonnet",)


def test_vibes_are_structured_and_retried_until_valid() -> None:
    peer = ScriptedPeer(
        samples=[
            structured({"keywords": ["calm"]}),
            structured({"keywords": ["calm", "warm", "slow"]}),
        ]
    )
    result = run_scripted(vibes.extract_vibes, {"description": "soft piano"}, peer)
    assert result.keywords == ["calm", "warm", "slow"]
    assert len(peer.samples) == 2


def test_a_client_that_cannot_sample_gets_a_guess_and_a_warning() -> None:
    peer = ScriptedPeer(
        samples=[CapabilityError("no sampling", required={"sampling": {}})]
    )
    result = run_scripted(vibes.extract_vibes, {"description": "noise"}, peer)
    assert result.keywords == ["unknown", "unrated", "unheard"]
    assert any(isinstance(n, Log) and n.level == "warning" for _k, n in peer.notices)

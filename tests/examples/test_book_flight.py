"""book_flight: two keyed elicitations then a sample for a tip."""

from __future__ import annotations

import datetime as dt

import pytest

from runtime.lowlevel import InvalidAnswer
from runtime.testing import ScriptedPeer, accept, cancel, decline, run_scripted, text
from tests.helpers import load_example

flight = load_example("book_flight")


def test_accepting_both_forms_books_the_flight_with_a_tip() -> None:
    peer = ScriptedPeer(
        elicits={
            "dates": [accept(depart="2026-12-24", nights=5)],
            "seat": [accept(seat="window")],
        },
        samples=[text("Pack an umbrella.")],
    )
    booking = run_scripted(flight.book_flight, {"destination": "Lisbon"}, peer)
    assert booking == flight.Booking(
        status="booked", destination="Lisbon", depart=dt.date(2026, 12, 24), nights=5,
        seat="window", tip="Pack an umbrella.",
    )  # fmt: skip
    dates_q, seat_q, tip_q = (a.question for a in peer.asked)
    assert dates_q.requested_schema["properties"]["depart"]["format"] == "date"
    assert seat_q.context == {"nights": 5}
    assert "Lisbon" in tip_q.messages[0].text


@pytest.mark.parametrize("refusal", [decline(), cancel()])
def test_refusing_the_dates_cancels_without_asking_more(refusal: object) -> None:
    peer = ScriptedPeer(elicits={"dates": [refusal]})
    booking = run_scripted(flight.book_flight, {"destination": "Oslo"}, peer)
    assert booking.status == "cancelled"
    assert len(peer.asked) == 1


def test_refusing_the_seat_cancels() -> None:
    peer = ScriptedPeer(
        elicits={"dates": [accept(depart="2027-01-02")], "seat": [decline()]}
    )
    assert (
        run_scripted(flight.book_flight, {"destination": "Oslo"}, peer).status
        == "cancelled"
    )


def test_content_outside_the_form_schema_is_rejected() -> None:
    peer = ScriptedPeer(elicits={"dates": [accept(depart="soon")]})
    with pytest.raises(InvalidAnswer, match="depart"):
        run_scripted(flight.book_flight, {"destination": "Oslo"}, peer)

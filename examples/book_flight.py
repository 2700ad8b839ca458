"""Book a flight: two keyed elicitations, then a sample for a travel tip.

The sweatpants example: the tool asks the user for travel dates (form
``dates``), then for seating preferences (form ``seat``), then asks the model for
one travel tip about the destination. Declining either form cancels the booking;
that is a normal result, not an error.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from runtime import Context, ElicitKey, Op, tool


class Dates(BaseModel):
    depart: dt.date = Field(title="Departure date")
    nights: int = Field(ge=1, le=60, title="Nights", default=3)


class Seat(BaseModel):
    seat: Literal["window", "aisle", "middle"] = Field(title="Seat")
    meal: bool = Field(default=True, title="Meal on board")


class Booking(BaseModel):
    status: Literal["booked", "cancelled"]
    destination: str
    depart: dt.date | None = None
    nights: int | None = None
    seat: str | None = None
    tip: str | None = None


DATES = ElicitKey("dates", Dates)
SEAT = ElicitKey("seat", Seat)


@tool(elicits=[DATES, SEAT])
def book_flight(
    destination: Annotated[str, Field(min_length=1, description="City to fly to")],
    ctx: Context,
) -> Op[Booking]:
    """Book a flight to a destination, asking the user for dates and a seat."""
    dates = yield from ctx.elicit(DATES, f"When do you fly to {destination}?")
    if dates.content is None:
        return Booking(status="cancelled", destination=destination)
    seat = yield from ctx.elicit(
        SEAT, "Seating preferences", nights=dates.content.nights
    )
    if seat.content is None:
        return Booking(status="cancelled", destination=destination)
    tip = yield from ctx.sample(
        f"Give one short travel tip for {destination}, departing "
        f"{dates.content.depart.isoformat()}.",
        max_tokens=200,
    )
    yield ctx.log("info", f"booked {destination} on {dates.content.depart}")
    return Booking(
        status="booked",
        destination=destination,
        depart=dates.content.depart,
        nights=dates.content.nights,
        seat=seat.content.seat,
        tip=tip.text,
    )

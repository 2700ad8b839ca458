"""Weather: elicit a city, fetch its weather in an async step, sample a summary.

The step is the point: ``fetch_weather`` calls an HTTP API with httpx, so it is
an ``async def`` run as a step (``ctx.step``). Its result is recorded in the
call's journal, so the API is called once per call, even though a 2026-07-28
call runs the tool again on every round (once for the city, once for the
summary). The API is wttr.in's JSON format; ``WEATHER_API`` points it
elsewhere (the example's test serves a fake one on loopback).

    yieldmcp serve examples/weather.py
"""

from __future__ import annotations

import os

import httpx
from pydantic import BaseModel, Field

from runtime import Context, ElicitKey, Op, idempotency_key, tool


class Where(BaseModel):
    city: str = Field(min_length=1, max_length=80, title="City")


class Weather(BaseModel):
    city: str
    celsius: float
    sky: str


WHERE = ElicitKey("where", Where)


async def fetch_weather(city: str) -> Weather:
    """The current weather in ``city``, from the weather API (one GET)."""
    base = os.environ.get("WEATHER_API", "https://wttr.in")
    async with httpx.AsyncClient(timeout=10) as http:
        response = await http.get(
            f"{base}/{city}",
            params={"format": "j1"},
            headers={"x-request-id": idempotency_key()},
        )
        response.raise_for_status()
        now = response.json()["current_condition"][0]
    return Weather(
        city=city, celsius=float(now["temp_C"]), sky=now["weatherDesc"][0]["value"]
    )


@tool(elicits=[WHERE])
def weather(ctx: Context) -> Op[str]:
    """Ask which city, look up its weather, and describe it in one sentence."""
    where = yield from ctx.elicit(WHERE, "Which city's weather?")
    if where.content is None:
        return "no city, no weather"
    now = yield from ctx.step(fetch_weather, where.content.city)
    summary = yield from ctx.sample(
        f"In one sentence, describe {now.celsius} C and {now.sky} in {now.city}.",
        max_tokens=60,
    )
    return f"{now.city}: {now.celsius:g} C, {now.sky}. {summary.text}"

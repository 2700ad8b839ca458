"""weather: an async step against an HTTP API, served here on loopback.

The fake API counts its requests: a 2026-07-28 call of the tool takes three
rounds (city, then summary, then done) and replays the generator on each, yet
the API is called once per call, because the fetch is a step.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial

import pytest
import trio

from bridge.client import connect
from bridge.server import Server
from runtime.lowlevel import run
from runtime.testing import ScriptedPeer, accept, decline, run_scripted, text
from tests.bridge.client.test_client import Accepting, ScriptedModel
from tests.bridge.http_kit import served
from tests.helpers import load_example

example = load_example("weather")

OSLO = {"current_condition": [{"temp_C": "4", "weatherDesc": [{"value": "Clear"}]}]}


@asynccontextmanager
async def fake_api(requests: list[str]) -> AsyncIterator[str]:
    """wttr.in's JSON shape on 127.0.0.1; each request line is kept."""
    payload = json.dumps(OSLO).encode()

    async def answer(stream: trio.SocketStream) -> None:
        received = b""
        while b"\r\n\r\n" not in received:
            chunk = await stream.receive_some()
            if not chunk:
                return
            received += chunk
        requests.append(received.split(b"\r\n", 1)[0].decode())
        head = (
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
            f"content-length: {len(payload)}\r\nconnection: close\r\n\r\n"
        )
        await stream.send_all(head.encode() + payload)
        await stream.aclose()

    async with trio.open_nursery() as nursery:
        serve = partial(trio.serve_tcp, answer, 0, host="127.0.0.1")
        listeners = await nursery.start(serve)
        yield f"http://127.0.0.1:{listeners[0].socket.getsockname()[1]}"
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
async def test_the_weather_is_fetched_once_per_call_over_http(
    era: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    requests: list[str] = []
    async with fake_api(requests) as api:
        monkeypatch.setenv("WEATHER_API", api)
        server = Server([example.weather])
        async with (
            served(server) as url,
            connect(
                url,
                era=era,
                sampler=ScriptedModel(),
                elicitation=Accepting({"city": "Oslo"}),
            ) as client,  # type: ignore[arg-type]
        ):
            result = await client.call_tool("weather")
    assert result.text.startswith("Oslo: 4 C, Clear. answer to In one sentence")
    assert requests == ["GET /Oslo?format=j1 HTTP/1.1"]


async def test_runtime_run_calls_the_api(monkeypatch: pytest.MonkeyPatch) -> None:
    requests: list[str] = []
    async with fake_api(requests) as api:
        monkeypatch.setenv("WEATHER_API", api)
        peer = ScriptedPeer(
            elicits={"where": [accept(city="Oslo")]}, samples=[text("Crisp.")]
        )
        assert await run(example.weather, {}, peer) == "Oslo: 4 C, Clear. Crisp."
    assert len(requests) == 1


def test_the_fetch_is_stubbed_by_name_with_no_network() -> None:
    peer = ScriptedPeer(
        elicits={"where": [accept(city="Lima")]},
        samples=[text("Mild.")],
        steps={"fetch_weather": [example.Weather(city="Lima", celsius=19, sky="Haze")]},
    )
    assert run_scripted(example.weather, {}, peer) == "Lima: 19 C, Haze. Mild."


def test_declining_the_city_asks_nothing_more() -> None:
    peer = ScriptedPeer(elicits={"where": [decline()]})
    assert run_scripted(example.weather, {}, peer) == "no city, no weather"
    assert len(peer.asked) == 1

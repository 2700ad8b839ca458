"""URL-mode elicitation in the 2026-07-28 era, where ``-32042`` is retired."""

from __future__ import annotations

from typing import Any

import pytest

from bridge.server import Server
from runtime.errors import PeerError
from tests.bridge.server.test_modern import call
from tests.bridge.wire import modern_meta, wire_peer
from tests.fixtures import protocol_tools as fx

URL_CLIENT = {"elicitation": {"form": {}, "url": {}}}


def server() -> Server:
    return Server([fx.connects, fx.needs_connection])


async def test_a_yielded_url_elicitation_is_an_input_request() -> None:
    async with wire_peer(server()) as peer:
        first = await call(peer, "connects", {}, meta=modern_meta(URL_CLIENT))
        assert first["resultType"] == "input_required"
        (request,) = first["inputRequests"].values()
        assert request["method"] == "elicitation/create"
        assert request["params"]["mode"] == "url"
        assert request["params"]["url"] == fx.CONNECT_URL
        assert "elicitationId" not in request["params"]  # removed in 2026-07-28


async def test_url_elicitation_required_becomes_input_requests_not_32042() -> None:
    async with wire_peer(server()) as peer:
        meta = modern_meta(URL_CLIENT)
        first = await call(peer, "needs_connection", {}, meta=meta)
        assert first["resultType"] == "input_required"
        assert "requestState" not in first  # the retry runs the call afresh
        (key, request), *_ = first["inputRequests"].items()
        assert key == "url"
        assert request["params"]["mode"] == "url"
        assert request["params"]["url"] == fx.CONNECT_URL
        assert request["params"]["message"] == "Connect your account"
        retry: dict[str, Any] = {"inputResponses": {"url": {"action": "accept"}}}
        again = await call(peer, "needs_connection", {}, meta=meta, **retry)
        assert again["resultType"] == "input_required"  # the tool still says so


async def test_url_elicitation_required_without_url_mode_is_32021() -> None:
    async with wire_peer(server()) as peer:
        forms_only = modern_meta({"elicitation": {"form": {}}})
        with pytest.raises(PeerError) as info:
            await call(peer, "needs_connection", {}, meta=forms_only)
    assert info.value.code == -32021
    assert info.value.data == {"requiredCapabilities": {"elicitation": {"url": {}}}}

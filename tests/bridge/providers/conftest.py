"""Fixtures for provider tests: a fake provider server on 127.0.0.1."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import trio

from tests.bridge.providers.fake_server import FakeProvider, open_fake_provider


@pytest.fixture
async def fake(nursery: trio.Nursery) -> AsyncIterator[FakeProvider]:
    async with open_fake_provider(nursery) as server:
        yield server

"""Every store backend behind one fixture, so one contract runs over them all.

``store_url`` is parametrized over the backends; the durable ones come from
the fixtures in ``tests/conftest.py`` (a fresh file, or a real server wiped
clean for each test). ``store`` is an open store on that URL.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bridge.stores import JournalStore, open_store

BACKENDS = ["memory", "sqlite", "redis", "postgres"]
DURABLE = [b for b in BACKENDS if b != "memory"]


@pytest.fixture(params=BACKENDS)
def store_url(request: pytest.FixtureRequest) -> str:
    if request.param == "memory":
        return "memory:"
    return request.getfixturevalue(f"{request.param}_url")


@pytest.fixture(params=DURABLE)
def durable_url(request: pytest.FixtureRequest) -> str:
    return request.getfixturevalue(f"{request.param}_url")


@pytest.fixture
def store(store_url: str) -> Iterator[JournalStore]:
    opened = open_store(store_url)
    yield opened
    opened.close()

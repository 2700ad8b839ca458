"""What the system tests share: a store of each kind the processes share."""

from __future__ import annotations

import pytest


@pytest.fixture(params=["sqlite", "redis", "postgres"])
def store_url(request: pytest.FixtureRequest) -> str:
    """A fresh store of each kind the processes share (tests/conftest.py)."""
    return str(request.getfixturevalue(f"{request.param}_url"))

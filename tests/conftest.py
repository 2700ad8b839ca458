"""Shared test configuration: Hypothesis profiles, example loading, and the
store fixtures.

Profiles: ``ci`` (the default; bounded so the suite stays fast), ``dev`` (fewer
examples), ``soak`` (many more, for long runs) and ``soak-wide`` (1000, for
suites with many parametrized cases). Choose with
``HYPOTHESIS_PROFILE=soak``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=25, deadline=None)
settings.register_profile(
    "soak",
    max_examples=5000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(  # for suites with many parametrized cases
    "soak-wide",
    max_examples=1000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


# -- stores: a URL on a clean store for each test ------------------------------


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """``sqlite:PATH`` of a new file in the test's tmp dir."""
    return f"sqlite:{tmp_path / 'store.sqlite3'}"

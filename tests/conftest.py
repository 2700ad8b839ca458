"""Shared test configuration: Hypothesis profiles, example loading, and the
store fixtures.

Profiles: ``ci`` (the default; bounded so the suite stays fast), ``dev`` (fewer
examples), ``soak`` (many more, for long runs) and ``soak-wide`` (1000, for
suites with many parametrized cases). Choose with
``HYPOTHESIS_PROFILE=soak``.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from tests.store_servers import running_postgres, running_redis

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


# -- test workers (pytest -n 4 --dist loadgroup) ------------------------------

# Suites that load the machine on purpose (hundreds of clients, a thousand
# cancelled calls, processes killed at random) and bound their run in time:
# one worker runs them one after another, never two at once.
LOADS_THE_MACHINE = frozenset(
    {
        "tests/reliability/test_cancellation_storm.py",
        "tests/reliability/test_load.py",
        "tests/reliability/test_soak.py",
        "tests/system/test_random_kills.py",
    }
)


# First: xdist reads the groups in its own hook of this name, on the worker.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.nodeid.split("::")[0] in LOADS_THE_MACHINE:
            item.add_marker(pytest.mark.xdist_group("loads-the-machine"))


@pytest.hookimpl(trylast=True)
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    """Fail the run if ``--dist loadgroup`` did not group what it must.

    xdist groups by a ``@GROUP`` suffix it adds to each grouped test's id on the
    worker, in its ``pytest_collection_modifyitems``. A group marked after that
    hook ran is lost (hence ``tryfirst`` above), and with pytest 9.2 the edit
    itself is silently lost (pytest-xdist issue #1386; pyproject.toml keeps
    pytest below 9.2): either way every group is spread over all workers, the
    storms above included, and nothing says so but this check.
    """
    if node.config.getoption("dist") != "loadgroup":
        return
    loaded = [i for i in ids if i.split("::")[0] in LOADS_THE_MACHINE]
    if loaded and not all(i.endswith("@loads-the-machine") for i in loaded):
        raise pytest.UsageError(
            "--dist loadgroup is not grouping tests (xdist_group ignored, see "
            "pytest-xdist issue #1386): use the pytest version pyproject.toml allows"
        )


# -- stores: a URL on a clean store for each test ------------------------------


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """``sqlite:PATH`` of a new file in the test's tmp dir."""
    return f"sqlite:{tmp_path / 'store.sqlite3'}"


@pytest.fixture(scope="session")
def redis_server() -> Iterator[str]:
    """A real redis-server for the session (tests/store_servers.py)."""
    with running_redis() as url:
        yield url


@pytest.fixture
def redis_url(redis_server: str) -> str:
    """The session's redis-server, emptied (FLUSHALL) for this test."""
    import redis

    with redis.Redis.from_url(redis_server) as client:
        client.flushall()
    return redis_server


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """A real PostgreSQL for the session (tests/store_servers.py)."""
    with running_postgres() as url:
        yield url


_databases = itertools.count()


@pytest.fixture
def postgres_url(postgres_server: str) -> str:
    """A new, empty database on the session's PostgreSQL, for this test."""
    import psycopg

    name = f"test_{os.getpid()}_{next(_databases)}"
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return postgres_server.rsplit("/", 1)[0] + f"/{name}"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """The system's headless Chromium, driven by Playwright (its own
    browser download is unreachable here), for a module's tests."""
    import shutil

    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=chromium, headless=True, args=["--no-sandbox"]
        )
        yield launched
        launched.close()

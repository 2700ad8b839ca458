"""Opening a store from a ``--store`` URL: each backend's URL forms, and a
one-line error (never a traceback) for a store that cannot be opened."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bridge.stores import MemoryStore, StoreUnavailable, open_store
from bridge.stores.sqlite import SQLiteStore
from bridge.stores.url import sqlite_path
from tests.helpers import ROOT


def test_memory_url() -> None:
    assert isinstance(open_store("memory:"), MemoryStore)


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("sqlite:store.db", "store.db"),
        ("sqlite:./state/store.db", "state/store.db"),
        ("sqlite:/var/lib/y.db", "/var/lib/y.db"),
        ("sqlite:///var/lib/y.db", "/var/lib/y.db"),
    ],
)
def test_sqlite_url_forms(url: str, path: str) -> None:
    assert sqlite_path(url) == Path(path)


def test_sqlite_url_expands_home() -> None:
    assert sqlite_path("sqlite:~/y.db") == Path.home() / "y.db"


@pytest.mark.parametrize("url", ["sqlite:", "sqlite://", "sqlite://host/y.db"])
def test_bad_sqlite_urls_say_what_to_write(url: str) -> None:
    with pytest.raises(StoreUnavailable, match="sqlite:PATH"):
        sqlite_path(url)


def test_relative_sqlite_url_opens_in_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    store = open_store("sqlite:here.sqlite3")
    assert isinstance(store, SQLiteStore)
    store.put("call", "a", {"n": 1})
    store.close()
    assert (tmp_path / "here.sqlite3").is_file()


def test_unopenable_sqlite_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(StoreUnavailable) as caught:
        open_store(f"sqlite:{tmp_path}/no/such/dir/store.db")
    assert "\n" not in str(caught.value)
    assert "cannot open" in str(caught.value)


def test_unknown_scheme_names_the_known_ones() -> None:
    with pytest.raises(StoreUnavailable, match="sqlite:PATH"):
        open_store("mongodb://localhost")


@pytest.mark.parametrize("kind", ["sqlite", "redis", "postgres"])
def test_serve_with_an_unopenable_store_exits_1_with_one_line(
    tmp_path: Path, kind: str
) -> None:
    from tests.store_servers import free_port

    url = {
        "sqlite": f"sqlite:{tmp_path}/missing/store.db",
        "redis": f"redis://127.0.0.1:{free_port()}/0",
        "postgres": f"postgresql://127.0.0.1:{free_port()}/db",
    }[kind]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "bridge.cli",
            "serve",
            "examples/weather.py",
            "--store",
            url,
        ],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert url in done.stderr


@pytest.mark.parametrize(
    ("url", "blocked", "hint"),
    [
        ("redis://127.0.0.1:1/0", "redis", "pip install 'yieldmcp[redis]'"),
        ("postgresql://127.0.0.1:1/db", "psycopg", "pip install 'yieldmcp[postgres]'"),
    ],
)
def test_a_missing_client_package_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, url: str, blocked: str, hint: str
) -> None:
    monkeypatch.setitem(sys.modules, blocked, None)  # import now fails
    monkeypatch.delitem(sys.modules, "bridge.stores.redis", raising=False)
    monkeypatch.delitem(sys.modules, "bridge.stores.postgres", raising=False)
    with pytest.raises(StoreUnavailable) as caught:
        open_store(url)
    assert str(caught.value).endswith(hint)


@pytest.mark.parametrize(
    "url",
    [
        "redis://127.0.0.1:{port}/0",
        "postgresql://postgres@127.0.0.1:{port}/postgres",
        "postgres://user:secret@127.0.0.1:{port}/db",
    ],
)
def test_an_unreachable_server_is_one_line(url: str) -> None:
    from tests.store_servers import free_port

    url = url.format(port=free_port())
    with pytest.raises(StoreUnavailable) as caught:
        open_store(url)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("cannot reach ")
    assert "secret" not in message  # the password is never printed


def test_sqlite_url_options_reach_the_store(tmp_path: Path) -> None:
    url = f"sqlite:{tmp_path}/s.db?busy_timeout=12.5&synchronous=full&poll_interval=0.2"
    store = open_store(url)
    try:
        assert isinstance(store, SQLiteStore)
        assert store.path == tmp_path / "s.db"
        assert (store.busy_timeout, store.synchronous, store.poll_interval) == (
            12.5,
            "FULL",
            0.2,
        )
    finally:
        store.close()


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("busy=1", "unknown option 'busy'"),
        ("busy_timeout=soon", "is not a number"),
        ("busy_timeout=0", "must be positive"),
        ("synchronous=OFF", "synchronous must be"),
    ],
)
def test_bad_sqlite_url_options_are_one_line(
    tmp_path: Path, query: str, says: str
) -> None:
    with pytest.raises(StoreUnavailable, match=says):
        open_store(f"sqlite:{tmp_path}/s.db?{query}")

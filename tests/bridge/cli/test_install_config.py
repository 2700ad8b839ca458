"""``yieldmcp install``'s hold on the configuration file: installs at once
keep every entry, only a regular file is read, its owner stays, and only
JSON that can be written back as it was is changed."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.bridge.cli.inprocess import yieldmcp
from tests.helpers import ROOT

SERVED = ROOT / "examples" / "book_flight.py"
CLI = [sys.executable, "-m", "bridge.cli", "install"]


def install(*args: str) -> tuple[int, str, str]:
    done = yieldmcp("install", *args)
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize("existing", [True, False], ids=["existing", "new"])
def test_concurrent_installs_keep_every_entry(existing: bool, tmp_path: Path) -> None:
    config = tmp_path / "race.json"
    if existing:
        config.write_text(json.dumps({"mcpServers": {"mine": {"command": "x"}}}))
    count = 8
    served = [tmp_path / f"s{i}.py" for i in range(count)]
    for path in served:
        path.write_text("")
    runs = [
        subprocess.Popen(
            [*CLI, "cursor", str(path), "--config", str(config)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for path in served
    ]
    for run in runs:
        _, err = run.communicate(timeout=120)
        assert run.returncode == 0, err
    servers = json.loads(config.read_text())["mcpServers"]
    expected = {f"s{i}" for i in range(count)} | ({"mine"} if existing else set())
    assert set(servers) == expected
    # no lock or temporary file is left beside the user's configuration
    left = {p.name for p in tmp_path.iterdir()} - {p.name for p in served}
    assert left == {"race.json"}


def test_a_fifo_config_is_refused_without_reading_it(tmp_path: Path) -> None:
    config = tmp_path / "f.json"
    os.mkfifo(config)
    done = subprocess.run(
        [*CLI, "cursor", str(SERVED), "--config", str(config)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,  # the FIFO used to be read, blocking for ever
    )
    assert done.returncode == 1
    (line,) = done.stderr.splitlines()
    assert line == f"yieldmcp: error: {config} is not a regular file; not changing it"
    assert stat.S_ISFIFO(config.lstat().st_mode)


def test_a_folder_config_is_refused_in_one_line(tmp_path: Path) -> None:
    config = tmp_path / "d.json"
    config.mkdir()
    code, _, err = install("cursor", str(SERVED), "--config", str(config))
    assert code == 1
    (line,) = err.splitlines()
    assert line == f"yieldmcp: error: {config} is a folder; not changing it"
    assert config.is_dir()
    assert list(config.iterdir()) == []


def test_the_owner_and_mode_are_kept_when_root_rewrites(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        reason = "needs root: only root can give a file to another user"
        print(f"skipped: {reason}")
        pytest.skip(reason)
    config = tmp_path / "mcp.json"
    config.write_text('{"mcpServers": {}}')
    os.chown(config, 65534, 65534)
    config.chmod(0o600)
    code, _, err = install("cursor", str(SERVED), "--config", str(config))
    assert code == 0, err
    after = config.stat()
    assert (after.st_uid, after.st_gid) == (65534, 65534)
    assert stat.S_IMODE(after.st_mode) == 0o600
    assert "book_flight" in json.loads(config.read_text())["mcpServers"]


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('{"mcpServers": {}, "limit": NaN}', "NaN"),
        ('{"mcpServers": {}, "limit": Infinity}', "Infinity"),
        ('{"mcpServers": {}, "limit": -Infinity}', "-Infinity"),
        ('{"mcpServers": {}, "limit": 1e400}', "1e400"),
        ('{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}', "'a'"),
        ('{"mcpServers": {}, "theme": 1, "theme": 2}', "'theme'"),
        ('{"mcpServers": {}, "n": ' + "1" * 5000 + "}", "digits"),
    ],
    ids=["nan", "infinity", "minus-infinity", "overflow", "dup-server", "dup-key",
         "long-int"],
)  # fmt: skip
def test_json_that_cannot_be_written_back_as_it_was_is_refused(
    text: str, why: str, tmp_path: Path
) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(text)
    code, _, err = install("cursor", str(SERVED), "--config", str(config))
    assert code == 1
    (line,) = err.splitlines()
    assert line.startswith(f"yieldmcp: error: {config} is not plain JSON (")
    assert why in line
    assert "not changing it" in line
    assert config.read_text() == text


def test_json_nested_too_deep_is_refused_in_one_line(tmp_path: Path) -> None:
    config = tmp_path / "deep.json"
    text = '{"mcpServers": {}, "x": ' + "[" * 5000 + "]" * 5000 + "}"
    config.write_text(text)
    code, _, err = install("cursor", str(SERVED), "--config", str(config))
    assert code == 1
    (line,) = err.splitlines()
    assert line.startswith(f"yieldmcp: error: {config} is not plain JSON (")
    assert "nested too deep" in line
    assert config.read_text() == text


def test_json_a_little_deep_is_kept(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    deep: object = 1
    for _ in range(100):
        deep = [deep]
    config.write_text(json.dumps({"mcpServers": {}, "x": deep, "f": 1.5}))
    code, _, err = install("cursor", str(SERVED), "--config", str(config))
    assert code == 0, err
    after = json.loads(config.read_text())
    assert after["x"] == deep
    assert after["f"] == 1.5


def test_a_new_config_that_cannot_be_written_is_not_left_empty(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A config that does not exist is created empty (to be locked) before it
    # is written; when the write fails, the empty file goes too.
    def full(path: Path, text: str, **_: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("bridge.cli.install_host.write_whole", full)
    config = tmp_path / "mcp.json"
    code, _, err = install("cursor", str(SERVED), "--config", str(config))
    assert code == 1
    assert err == (
        f"yieldmcp: error: cannot write {config}: [Errno 28] No space left on device\n"
    )
    assert list(tmp_path.iterdir()) == []

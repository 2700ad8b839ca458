"""``yieldmcp install``'s hold on the configuration file: installs at once
keep every entry, only a regular file is read, its owner stays, and only
JSON that can be written back as it was is changed."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.bridge.cli.inprocess import yieldmcp
from tests.helpers import ROOT, needs_root

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
    needs_root("giving a file to another user")
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


@pytest.fixture
def users_home() -> Iterator[Path]:
    """A HOME of user nobody's, where nobody can reach it (/tmp/X/home: a
    pytest folder of root's is 0700), as a home is."""
    outer = Path(tempfile.mkdtemp(prefix="yieldmcp-install-", dir="/tmp"))
    try:
        outer.chmod(0o755)
        home = outer / "home"
        home.mkdir()
        os.chown(home, 65534, 65534)
        yield home
    finally:
        shutil.rmtree(outer)


def _installed_as_root(*args: str) -> subprocess.CompletedProcess[str]:
    # In a process of its own: root installs in a fork that becomes the user.
    return subprocess.run(
        [*CLI, "cursor", str(SERVED), *args],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
    )  # fmt: skip


def test_a_new_config_made_by_root_belongs_to_the_folders_owner(
    users_home: Path, tmp_path: Path
) -> None:
    # sudo yieldmcp install into a user's home made a root-owned 0600 file
    # (and folders) the user's host could not read.
    needs_root("giving a file to another user")
    config = users_home / ".cursor" / "deeper" / "mcp.json"
    done = _installed_as_root("--config", str(config))
    assert done.returncode == 0, done.stderr
    for made in (config, config.parent, config.parent.parent):
        found = made.stat()
        assert (found.st_uid, found.st_gid) == (65534, 65534), made
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    assert "book_flight" in json.loads(config.read_text())["mcpServers"]
    # root's own folder keeps root's files
    mine = tmp_path / "root-owned" / "mcp.json"
    done = _installed_as_root("--config", str(mine))
    assert (done.returncode, mine.stat().st_uid) == (0, 0), done.stderr


def test_root_does_not_follow_a_users_link_to_a_root_only_folder(
    users_home: Path, tmp_path: Path
) -> None:
    # The user made ~/.cursor a link to a folder only root may write, and
    # sudo yieldmcp install edited root's file there; swapped in while the
    # install waited for the lock, the user's own file (the user's, 0666)
    # replaced root's. As the user, the install cannot write there.
    needs_root("acting as another user")
    secret = tmp_path / "root-only"
    secret.mkdir(mode=0o700)
    roots = secret / "mcp.json"
    roots.write_text('{"mcpServers": {}}')
    os.symlink(secret, users_home / ".cursor")
    os.chown(users_home / ".cursor", 65534, 65534, follow_symlinks=False)
    done = _installed_as_root("--config", str(users_home / ".cursor" / "mcp.json"))
    assert done.returncode == 1
    (line,) = done.stderr.splitlines()
    assert line.startswith("yieldmcp: error: cannot read "), line
    assert "Permission denied" in line
    assert roots.read_text() == '{"mcpServers": {}}'


def test_root_refuses_a_root_folder_other_users_may_change(tmp_path: Path) -> None:
    # root:nogroup 0775: the group may rename .cursor, and swapped a link to
    # a root-only folder in while the install waited for the lock.
    needs_root("a folder of root's others may change")
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chown(shared, 0, 65534)
    shared.chmod(0o775)
    done = _installed_as_root("--config", str(shared / ".cursor" / "mcp.json"))
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"yieldmcp: error: as root, not writing below {shared}, which other "
        f"users may change: run install as the user whose host reads "
        f"{shared / '.cursor' / 'mcp.json'}, or give a --config in folders only "
        f"root may change"
    ]
    assert not (shared / ".cursor").exists()


def test_root_acts_as_the_owner_of_where_its_own_link_leads(
    users_home: Path,
) -> None:
    # A link of root's into a user's folder: the user's folder was not
    # looked at (a link counted as its owner's), and the user swapped it.
    needs_root("acting as another user")
    (users_home / ".cursor").mkdir()
    os.chown(users_home / ".cursor", 65534, 65534)
    link = users_home.parent / "link"  # root's, where the user can reach it
    link.symlink_to(users_home / ".cursor")
    done = _installed_as_root("--config", str(link / "mcp.json"))
    assert done.returncode == 0, done.stderr
    made = (users_home / ".cursor" / "mcp.json").stat()
    assert (made.st_uid, made.st_gid) == (65534, 65534)


def test_a_user_with_no_name_acts_in_no_group_of_roots(users_home: Path) -> None:
    # What root's `chown UID folder` leaves: UID:0. The install took the
    # folder's group, root's, and could write where root's group may.
    needs_root("acting as another user")
    nameless = users_home.parent / "nameless"
    nameless.mkdir()
    os.chown(nameless, 54321, 0)
    done = _installed_as_root("--config", str(nameless / "mcp.json"))
    assert done.returncode == 0, done.stderr
    made = (nameless / "mcp.json").stat()
    assert (made.st_uid, made.st_gid) == (54321, 65534)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('{"mcpServers": {}, "limit": NaN}', "NaN"),
        ('{"mcpServers": {}, "limit": Infinity}', "Infinity"),
        ('{"mcpServers": {}, "limit": -Infinity}', "-Infinity"),
        ('{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}', "'a'"),
        ('{"mcpServers": {}, "theme": 1, "theme": 2}', "'theme'"),
    ],
    ids=["nan", "infinity", "minus-infinity", "dup-server", "dup-key"],
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


NUMBERS = [
    "0.123456789012345678901234567890",  # past a float's digits
    "12345678901234567890.5",
    "1e-400",  # a float reads 0.0
    "1e400",  # a float reads infinity
    "1E5",
    "1.50",
    "-0",
    "1" * 5000,  # past Python's int digits limit
    "7",
]


def _spelled(text: str) -> Any:
    """The file read with every number as its text."""
    return json.loads(text, parse_float=lambda raw: raw, parse_int=lambda raw: raw)


def test_every_number_is_written_back_as_the_file_spelled_it(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    numbers = ", ".join(f'"n{i}": {number}' for i, number in enumerate(NUMBERS))
    config.write_text(
        '{"other": {' + numbers + ', "list": [1.50, -0, [1E5]]}, '
        '"text": "1.50", "mcpServers": {"mine": {"command": "x", "port": 8.0}}}'
    )
    code, _, err = install("cursor", str(SERVED), "--config", str(config))
    assert code == 0, err
    after = _spelled(config.read_text())
    assert after["other"] == {
        **{f"n{i}": number for i, number in enumerate(NUMBERS)},
        "list": ["1.50", "-0", ["1E5"]],
    }
    assert after["text"] == "1.50"  # a string of the same text stays a string
    assert after["mcpServers"]["mine"] == {"command": "x", "port": "8.0"}
    assert after["mcpServers"]["book_flight"]["args"][-2:] == ["serve", str(SERVED)]


def test_a_lone_surrogate_is_written_back_as_its_escape(tmp_path: Path) -> None:
    # Valid JSON that UTF-8 cannot hold as a character: it was a traceback
    # (UnicodeEncodeError) when the file was written.
    config = tmp_path / "mcp.json"
    config.write_text('{"note": "a\\ud800b", "\\udfff": 1, "mcpServers": {}}')
    code, out, err = install("cursor", str(SERVED), "--config", str(config))
    assert (code, err) == (0, "")
    assert out.startswith("added 'book_flight' to ")
    text = config.read_text()
    assert '"a\\ud800b"' in text
    after = json.loads(text)
    assert after["note"] == "a\ud800b"
    assert after["\udfff"] == 1
    assert "book_flight" in after["mcpServers"]


def test_a_byte_order_mark_is_kept_and_the_entry_added(tmp_path: Path) -> None:
    # Notepad starts a UTF-8 file with one: it was refused as "not plain
    # JSON (...; comments and trailing commas cannot be kept)".
    config = tmp_path / "mcp.json"
    config.write_bytes(b'\xef\xbb\xbf{"mcpServers": {"mine": {"command": "x"}}}')
    code, out, err = install("cursor", str(SERVED), "--config", str(config))
    assert (code, err) == (0, "")
    assert out.startswith("added 'book_flight' to ")
    raw = config.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf{")
    assert set(json.loads(raw.decode("utf-8-sig"))["mcpServers"]) == {
        "mine",
        "book_flight",
    }


def test_a_lock_held_by_another_process_is_one_line_not_a_hang(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Anyone who can read the file can lock it: install waited for ever.
    monkeypatch.setattr("bridge.cli.install_host.LOCK_WAIT", 0.3)
    config = tmp_path / "mcp.json"
    text = '{"mcpServers": {}}'
    config.write_text(text)
    holder = os.open(config, os.O_RDONLY)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)
        code, _, err = install("cursor", str(SERVED), "--config", str(config))
    finally:
        os.close(holder)
    assert code == 1
    assert err.splitlines() == [
        f"yieldmcp: error: another process holds a lock on {config} (waited "
        "0.3 s); not changing it: try again when it is done"
    ]
    assert config.read_text() == text
    code, _, err = install("cursor", str(SERVED), "--config", str(config))
    assert code == 0, err


def test_a_config_larger_than_a_hosts_is_refused_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A gigabyte was read whole: 34 s and 2.9 GB of memory.
    monkeypatch.setattr("bridge.cli.install_host.MAX_CONFIG_BYTES", 1 << 20)
    config = tmp_path / "mcp.json"
    text = '{"mcpServers": {}, "pad": "' + "x" * (1 << 20) + '"}'
    config.write_text(text)
    code, _, err = install("cursor", str(SERVED), "--config", str(config))
    assert code == 1
    assert err.splitlines() == [
        f"yieldmcp: error: {config} is larger than 1 MiB: not a host's "
        "configuration; not changing it"
    ]
    assert config.read_text() == text

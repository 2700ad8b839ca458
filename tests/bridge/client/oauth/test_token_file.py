"""``FileTokenStore`` against what another user of the machine can plant.

Tokens and the client's registration go in a file no one else may read, in a
directory no one else may write; a planted symbolic link is never followed.
These run as root here and in CI, so "another user" is ``nobody``, made the
owner with ``os.chown``.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from bridge.client.oauth import ClientInfo, FileTokenStore, Tokens
from bridge.client.oauth.store import default_token_path
from runtime.errors import AuthorizationError
from tests.bridge.cli.test_cli import YIELDMCP
from tests.helpers import ROOT, needs_root

SECRET = ClientInfo(client_id="client-7", client_secret="s3cret", issuer="https://as")
TOKENS = Tokens(access_token="at-1", issuer="https://as", refresh_token="rt-1")


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A file of the user's that a planted link points at."""
    path = tmp_path / "victim" / "authorized_keys"
    path.parent.mkdir(mode=0o700)
    path.write_text("ssh-ed25519 AAAA precious\n")
    return path


def shared(tmp_path: Path, mode: int = 0o1777) -> Path:
    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(mode)
    return folder


async def test_tokens_and_clients_round_trip_in_a_private_file(tmp_path: Path) -> None:
    path = tmp_path / "new" / "deeper" / "tokens.json"
    store = FileTokenStore(path)
    await store.save_client("https://as", SECRET)
    await store.save_tokens("https://mcp/mcp", TOKENS)
    again = FileTokenStore(path)
    assert await again.load_client("https://as") == SECRET
    assert await again.load_tokens("https://mcp/mcp") == TOKENS
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    # every folder made for it, not only the last (whatever the umask)
    assert stat.S_IMODE(path.parent.parent.stat().st_mode) == 0o700
    assert sorted(p.name for p in path.parent.iterdir()) == [
        ".tokens.json.lock",
        "tokens.json",
    ]
    assert stat.S_IMODE((path.parent / ".tokens.json.lock").stat().st_mode) == 0o600
    await again.save_tokens("https://mcp/mcp", None)
    assert await FileTokenStore(path).load_tokens("https://mcp/mcp") is None


async def test_a_planted_temporary_link_is_not_followed(
    tmp_path: Path, victim: Path
) -> None:
    folder = tmp_path / "mine"
    folder.mkdir(mode=0o700)
    # The name the store used to write through, predictable from the pid.
    (folder / f".tokens.json.{os.getpid()}.tmp").symlink_to(victim)
    store = FileTokenStore(folder / "tokens.json")
    await store.save_client("https://as", SECRET)
    assert victim.read_text() == "ssh-ed25519 AAAA precious\n"
    assert await FileTokenStore(folder / "tokens.json").load_client("https://as")


async def test_a_token_file_that_is_a_link_is_refused(
    tmp_path: Path, victim: Path
) -> None:
    folder = tmp_path / "mine"
    folder.mkdir(mode=0o700)
    (folder / "tokens.json").symlink_to(victim)
    store = FileTokenStore(folder / "tokens.json")
    with pytest.raises(AuthorizationError, match="is a symbolic link"):
        await store.save_client("https://as", SECRET)
    with pytest.raises(AuthorizationError, match="is a symbolic link"):
        await store.load_tokens("https://mcp/mcp")
    assert victim.read_text() == "ssh-ed25519 AAAA precious\n"


async def test_a_shared_directory_is_refused_and_its_links_untouched(
    tmp_path: Path, victim: Path
) -> None:
    folder = shared(tmp_path)  # like /tmp: anyone may create names here
    (folder / "tokens.json").symlink_to(victim)
    (folder / f".tokens.json.{os.getpid()}.tmp").symlink_to(victim)
    store = FileTokenStore(folder / "tokens.json")
    with pytest.raises(AuthorizationError, match="writable by others") as refused:
        await store.save_client("https://as", SECRET)
    assert "\n" not in str(refused.value)
    assert victim.read_text() == "ssh-ed25519 AAAA precious\n"


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o702])
async def test_a_directory_others_may_write_is_refused(
    tmp_path: Path, mode: int
) -> None:
    folder = shared(tmp_path, mode)
    store = FileTokenStore(folder / "tokens.json")
    with pytest.raises(AuthorizationError, match=f"mode {mode:o}"):
        await store.save_tokens("https://mcp/mcp", TOKENS)
    with pytest.raises(AuthorizationError, match="writable by others"):
        await store.load_tokens("https://mcp/mcp")
    assert list(folder.iterdir()) == []


async def test_a_directory_of_another_user_is_refused(tmp_path: Path) -> None:
    needs_root("giving a folder to another user")
    folder = tmp_path / "theirs"
    folder.mkdir(mode=0o700)
    nobody = pwd.getpwnam("nobody")
    os.chown(folder, nobody.pw_uid, nobody.pw_gid)
    store = FileTokenStore(folder / "tokens.json")
    with pytest.raises(AuthorizationError, match="belongs to another user"):
        await store.save_tokens("https://mcp/mcp", TOKENS)
    assert list(folder.iterdir()) == []


async def test_a_directory_that_is_a_link_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(real)
    store = FileTokenStore(tmp_path / "link" / "tokens.json")
    with pytest.raises(AuthorizationError, match="is a symbolic link"):
        await store.save_tokens("https://mcp/mcp", TOKENS)
    assert list(real.iterdir()) == []


def test_the_default_file_is_in_the_users_state_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert default_token_path() == tmp_path / "state" / "yieldmcp" / "tokens.json"
    assert FileTokenStore().path == default_token_path()
    monkeypatch.setenv("XDG_STATE_HOME", "relative/state")  # ignored, as XDG says
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    expected = tmp_path / "home" / ".local" / "state" / "yieldmcp" / "tokens.json"
    assert default_token_path() == expected
    monkeypatch.delenv("XDG_STATE_HOME")
    assert default_token_path() == expected


def test_call_refuses_a_shared_token_directory_before_connecting(
    tmp_path: Path,
) -> None:
    folder = shared(tmp_path)
    done = subprocess.run(
        [YIELDMCP, "call", "http://127.0.0.1:9/mcp", "whoami",
         "--oauth-tokens", str(folder / "tokens.json")],
        capture_output=True, text=True, cwd=ROOT, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1
    (line,) = done.stderr.splitlines()
    assert line == (
        f"yieldmcp: error: {folder} is writable by others (mode 1777); refusing "
        "to keep tokens there: use a directory only you can write to (the "
        "default is in ~/.local/state)"
    )


_SAVER = """
import sys, trio
from bridge.client.oauth import FileTokenStore, Tokens

async def main(path: str, me: str, rounds: int) -> None:
    store = FileTokenStore(path)
    for n in range(rounds):
        tokens = Tokens(access_token=f"{me}-{n}", issuer="https://as")
        await store.save_tokens(f"https://mcp/{me}/{n}", tokens)

trio.run(main, sys.argv[1], sys.argv[2], int(sys.argv[3]))
"""


def test_saves_of_processes_at_once_each_keep_their_tokens(tmp_path: Path) -> None:
    # Each save reads the file, changes its entry and writes it back: two
    # `yieldmcp call`s saving at once each wrote back what it had read,
    # without the other's new tokens.
    path = tmp_path / "tokens.json"
    savers, rounds = 4, 40
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", _SAVER, str(path), f"p{i}", str(rounds)],
            cwd=ROOT,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(savers)
    ]
    for run in runs:
        _, err = run.communicate(timeout=120)
        assert run.returncode == 0, err
    kept = json.loads(path.read_text())["tokens"]
    assert len(kept) == savers * rounds
    assert {kept[f"https://mcp/p1/{n}"]["access_token"] for n in range(rounds)} == {
        f"p1-{n}" for n in range(rounds)
    }
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".tokens.json.lock",
        "tokens.json",
    ]


async def test_a_save_waits_for_a_lock_held_elsewhere_then_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fcntl

    from bridge.client.oauth import store as token_store

    monkeypatch.setattr(token_store, "LOCK_WAIT", 0.3)
    path = tmp_path / "tokens.json"
    store = FileTokenStore(path)
    await store.save_tokens("https://mcp/a", TOKENS)
    held = os.open(store.lock_path, os.O_RDONLY)
    try:
        fcntl.flock(held, fcntl.LOCK_EX)  # as another process saving would
        with pytest.raises(AuthorizationError) as refused:
            await store.save_tokens("https://mcp/b", TOKENS)
        assert str(refused.value) == (
            f"another process kept {tmp_path}/.tokens.json.lock locked for 0.3 s; "
            "tokens not saved"
        )
        assert await store.load_tokens("https://mcp/a") == TOKENS  # reads go on
    finally:
        os.close(held)
    await store.save_tokens("https://mcp/b", TOKENS)
    assert await store.load_tokens("https://mcp/b") == TOKENS


def _as_nobody_locking(path: Path) -> int:
    """A child process, as ``nobody``, holding ``path`` locked (``flock``):
    its pid, once it holds it; or, if it cannot open it, once it has exited
    with status 13 (``EACCES``)."""
    import fcntl

    nobody = pwd.getpwnam("nobody")
    ready, told = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: only system calls, then _exit
        status = 1
        try:
            os.setgid(nobody.pw_gid)
            os.setuid(nobody.pw_uid)
            try:
                fd = os.open(path, os.O_RDONLY)
            except PermissionError:
                status = 13
            else:
                fcntl.flock(fd, fcntl.LOCK_EX)
                os.write(told, b"held")
                time.sleep(60)
        finally:
            os._exit(status)
    os.close(told)
    os.read(ready, 4)  # "held", or nothing once the child is gone
    os.close(ready)
    return pid


async def test_another_user_cannot_hold_up_saves_by_locking_the_folder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The save locked the token file's folder, which anyone who can read it
    # (mode 755: accepted, since only a folder others may write is refused)
    # can lock too: every login's save then failed ("another process kept
    # DIR locked for 10 s; tokens not saved"), the login thrown away.
    needs_root("another user, nobody, locking a folder of ours")
    import fcntl

    from bridge.client.oauth import store as token_store

    monkeypatch.setattr(token_store, "LOCK_WAIT", 1.0)
    # In /tmp: nobody can reach it (not under pytest-of-root, mode 700).
    folder = Path(tempfile.mkdtemp(prefix="yieldmcp-tokens-"))
    try:
        folder.chmod(0o755)
        store = FileTokenStore(folder / "tokens.json")
        await store.save_tokens("https://mcp/a", TOKENS)
        locker = _as_nobody_locking(folder)
        try:
            assert os.waitpid(locker, os.WNOHANG) == (0, 0)  # holding it
            await store.save_tokens("https://mcp/b", TOKENS)
        finally:
            os.kill(locker, signal.SIGKILL)
            os.waitpid(locker, 0)
        assert await store.load_tokens("https://mcp/b") == TOKENS
        # ... and the file it locks instead, nobody can open to lock.
        refused = _as_nobody_locking(store.lock_path)
        assert os.waitstatus_to_exitcode(os.waitpid(refused, 0)[1]) == 13
        # Processes of ours still wait for each other there.
        held = os.open(store.lock_path, os.O_RDONLY)
        try:
            fcntl.flock(held, fcntl.LOCK_EX)
            with pytest.raises(AuthorizationError, match="locked for 1 s"):
                await store.save_tokens("https://mcp/c", TOKENS)
        finally:
            os.close(held)
    finally:
        shutil.rmtree(folder)


async def test_a_lock_file_others_may_open_is_refused(tmp_path: Path) -> None:
    store = FileTokenStore(tmp_path / "tokens.json")
    store.lock_path.touch(mode=0o600)
    store.lock_path.chmod(0o644)
    with pytest.raises(AuthorizationError) as refused:
        await store.save_tokens("https://mcp/a", TOKENS)
    assert str(refused.value) == (
        f"{store.lock_path} may be opened by others (mode 644); refusing to use "
        f"it for tokens: chmod 600 {store.lock_path}"
    )
    assert not store.path.exists()


async def test_a_lock_file_that_is_a_link_is_refused(
    tmp_path: Path, victim: Path
) -> None:
    folder = tmp_path / "mine"
    folder.mkdir(mode=0o700)
    store = FileTokenStore(folder / "tokens.json")
    store.lock_path.symlink_to(victim)
    with pytest.raises(AuthorizationError, match="is a symbolic link"):
        await store.save_tokens("https://mcp/a", TOKENS)
    (folder / ".tokens.json.lock").unlink()
    store.lock_path.symlink_to(folder / "missing")  # not created through either
    with pytest.raises(AuthorizationError, match="is a symbolic link"):
        await store.save_tokens("https://mcp/a", TOKENS)
    assert not (folder / "missing").exists()
    assert victim.read_text() == "ssh-ed25519 AAAA precious\n"

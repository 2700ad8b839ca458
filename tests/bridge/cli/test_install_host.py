"""``yieldmcp install HOST FILE``: each host's file, merged, never clobbered,
and the entry it writes really serves FILE."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bridge.cli.install_host import InstallError, default_config
from bridge.client import connect
from tests.bridge.cli.inprocess import yieldmcp
from tests.helpers import ROOT, STARTUP

YIELDMCP = str(Path(sys.executable).parent / "yieldmcp")
SERVED = ROOT / "examples" / "book_flight.py"
KEYS = {"claude-desktop": "mcpServers", "cursor": "mcpServers", "vscode": "servers"}
HOSTS = sorted(KEYS)
SUPPORT = "Library/Application Support"  # macOS


def install(*args: str) -> tuple[int, str, str]:
    done = yieldmcp("install", *args)
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize("host", HOSTS)
def test_a_new_config_gets_the_entry_in_the_hosts_format(
    host: str, tmp_path: Path
) -> None:
    config = tmp_path / "sub" / "mcp.json"
    code, out, err = install(host, str(SERVED), "--config", str(config))
    assert code == 0, err
    assert out.startswith(f"added 'book_flight' to {config}: restart ")
    entry = json.loads(config.read_text())[KEYS[host]]["book_flight"]
    expected = {"command": YIELDMCP, "args": ["serve", str(SERVED)]}
    if host == "vscode":
        expected = {"type": "stdio", **expected}
    assert entry == expected


@pytest.mark.parametrize("host", HOSTS)
def test_other_keys_and_servers_are_kept(host: str, tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    mine = {
        "theme": "dark",
        KEYS[host]: {"other": {"command": "node", "args": ["x.js"]}},
        "inputs": [{"id": "key"}],
    }
    config.write_text(json.dumps(mine))
    config.chmod(0o640)
    code, _, err = install(host, str(SERVED), "--config", str(config), "--name", "f")
    assert code == 0, err
    after = json.loads(config.read_text())
    assert after["theme"] == "dark"
    assert after["inputs"] == [{"id": "key"}]
    assert after[KEYS[host]]["other"] == {"command": "node", "args": ["x.js"]}
    assert after[KEYS[host]]["f"]["args"][-1] == str(SERVED)
    assert config.stat().st_mode & 0o777 == 0o640  # its mode is its owner's
    assert [p.name for p in tmp_path.iterdir()] == ["mcp.json"]  # no temp left


@pytest.mark.parametrize("host", HOSTS)
def test_a_server_of_the_same_name_is_refused_unless_forced(
    host: str, tmp_path: Path
) -> None:
    config = tmp_path / "mcp.json"
    before = json.dumps({KEYS[host]: {"book_flight": {"command": "old"}}})
    config.write_text(before)
    code, _, err = install(host, str(SERVED), "--config", str(config))
    assert code == 1
    assert err == (
        f"yieldmcp: error: {config} already has a server named 'book_flight' "
        "(--force replaces it, --name NAME adds another)\n"
    )
    assert config.read_text() == before
    code, _, err = install(host, str(SERVED), "--config", str(config), "--force")
    assert code == 0, err
    entry = json.loads(config.read_text())[KEYS[host]]["book_flight"]
    assert entry["command"] == YIELDMCP


@pytest.mark.parametrize(
    "text",
    [
        '{"mcpServers": {,}}',
        "// a comment\n{}",
        "[1, 2]",
        '{"servers": [], "mcpServers": []}',
        '{"servers": null, "mcpServers": null}',
    ],
    ids=["broken", "comments", "not-an-object", "servers-not-an-object",
         "servers-null"],
)  # fmt: skip
@pytest.mark.parametrize("host", HOSTS)
def test_a_config_that_is_not_what_the_host_reads_is_refused_untouched(
    host: str, text: str, tmp_path: Path
) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(text)
    code, _, err = install(host, str(SERVED), "--config", str(config))
    assert code == 1
    (line,) = err.splitlines()
    assert line.startswith(f"yieldmcp: error: {config}")
    assert "not changing it" in line
    assert config.read_text() == text


def test_a_config_with_comments_says_how_to_add_the_entry_by_hand(
    tmp_path: Path,
) -> None:
    # VS Code's mcp.json may hold comments (JSONC): they cannot be written
    # back, so the user is pointed at --dry-run's entry instead.
    config = tmp_path / "mcp.json"
    text = '{\n  // mine\n  "servers": {"other": {"command": "x"},},\n}\n'
    config.write_text(text)
    code, _, err = install("vscode", str(SERVED), "--config", str(config))
    assert code == 1
    assert "comments and trailing commas cannot be kept" in err
    assert err.rstrip().endswith("add the entry --dry-run prints by hand")
    assert config.read_text() == text


def test_a_symbolic_link_is_refused_not_followed(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("{}")
    link = tmp_path / "mcp.json"
    link.symlink_to(real)
    code, _, err = install("cursor", str(SERVED), "--config", str(link))
    assert code == 1
    assert "is a symbolic link" in err
    assert link.is_symlink()
    assert real.read_text() == "{}"


def test_dry_run_prints_the_entry_and_writes_nothing(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    code, out, err = install(
        "vscode", str(SERVED), "--config", str(config), "--dry-run"
    )
    assert code == 0, err
    assert json.loads(out) == {
        "servers": {
            "book_flight": {
                "type": "stdio",
                "command": YIELDMCP,
                "args": ["serve", str(SERVED)],
            }
        }
    }
    assert not config.exists()


def test_a_missing_file_is_one_line(tmp_path: Path) -> None:
    code, _, err = install("cursor", "nope.py", "--config", str(tmp_path / "c.json"))
    assert code == 1
    assert err == "yieldmcp: error: no such file: nope.py\n"


def test_a_generic_file_name_is_named_after_its_folder(tmp_path: Path) -> None:
    project = tmp_path / "notes"
    project.mkdir()
    (project / "tools.py").write_text("")
    config = tmp_path / "c.json"
    code, _, err = install("cursor", str(project / "tools.py"), "--config", str(config))
    assert code == 0, err
    assert list(json.loads(config.read_text())["mcpServers"]) == ["notes"]


async def test_the_written_entry_serves_the_file(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    done = subprocess.run(
        [YIELDMCP, "install", "vscode", str(SERVED), "--config", str(config)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    entry = json.loads(config.read_text())["servers"]["book_flight"]
    command = [entry["command"], *entry["args"]]
    async with connect(command, connect_timeout=STARTUP) as client:
        tools = await client.list_tools()
    assert [tool["name"] for tool in tools] == ["book_flight"]


@pytest.mark.parametrize(
    ("host", "platform", "expected"),
    [
        ("claude-desktop", "darwin", f"{SUPPORT}/Claude/claude_desktop_config.json"),
        ("claude-desktop", "win32", "Roaming/Claude/claude_desktop_config.json"),
        ("claude-desktop", "linux", ".config/Claude/claude_desktop_config.json"),
        ("cursor", "darwin", ".cursor/mcp.json"),
        ("cursor", "win32", ".cursor/mcp.json"),
        ("vscode", "darwin", f"{SUPPORT}/Code/User/mcp.json"),
        ("vscode", "win32", "Roaming/Code/User/mcp.json"),
        ("vscode", "linux", ".config/Code/User/mcp.json"),
    ],
)  # fmt: skip
def test_each_hosts_documented_place_per_os(
    host: str, platform: str, expected: str, tmp_path: Path
) -> None:
    environ = {"APPDATA": str(tmp_path / "Roaming")} if platform == "win32" else {}
    found = default_config(host, platform=platform, home=tmp_path, environ=environ)
    assert found == tmp_path / expected
    assert os.path.isabs(found)


def test_null_servers_are_named_in_the_refusal(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text('{"mcpServers": null}')
    code, _, err = install("cursor", str(SERVED), "--config", str(config))
    assert code == 1
    assert err.splitlines() == [
        f"yieldmcp: error: {config}: 'mcpServers' is null, not an object of "
        "servers; not changing it"
    ]
    assert config.read_text() == '{"mcpServers": null}'


@pytest.mark.parametrize("kind", ["module", "file"])
def test_a_name_too_long_for_the_file_system_is_one_line(
    kind: str, tmp_path: Path
) -> None:
    long = "a" * 300
    target = long if kind == "module" else str(tmp_path / f"{long}.py")
    config = tmp_path / "c.json"
    code, _, err = install("cursor", target, "--config", str(config))
    assert code == 1
    (line,) = err.splitlines()
    assert line.startswith("yieldmcp: error: cannot use ")
    assert line.endswith(": File name too long")
    assert not config.exists()


def test_a_loop_of_links_on_the_files_way_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    config = tmp_path / "c.json"
    args = ["install", "cursor", "loop/tools.py", "--config", str(config)]
    done = yieldmcp(*args, cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "yieldmcp: error: cannot use loop/tools.py: a loop of symbolic links on its way"
    ]
    assert not config.exists()


def test_a_name_utf8_cannot_hold_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "c.json"
    code, _, err = install(
        "cursor", str(SERVED), "--name", "a\udcffb", "--config", str(config)
    )
    assert code == 1
    assert err.splitlines() == [
        "yieldmcp: error: 'a\\udcffb' is not UTF-8 text: a host's "
        "configuration cannot name it"
    ]
    assert not config.exists()


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("red\x1b[31m", "'red\\x1b[31m'"),
        ("two\nlines", "'two\\nlines'"),
        ("invoice\u202egnp", "'invoice\\u202egnp'"),
        ("evil\tname", "'evil\\tname'"),
        ("zero\u200bwidth", "'zero\\u200bwidth'"),
        ("soft\u00adhyphen", "'soft\\xadhyphen'"),
        ("weather\u3164", "'weather\\u3164'"),
        ("wea\u034fther", "'wea\\u034fther'"),
    ],
    ids=[
        "escape",
        "newline",
        "bidi",
        "tab",
        "zero-width",
        "soft-hyphen",
        "hangul-filler",
        "grapheme-joiner",
    ],
)
def test_a_name_with_control_characters_is_refused(
    name: str, said: str, tmp_path: Path
) -> None:
    # A host lists its servers by name, as the name is: it went into the
    # configuration (JSON-escaped), and the host drew or obeyed it.
    config = tmp_path / "c.json"
    code, _, err = install(
        "cursor", str(SERVED), "--name", name, "--config", str(config)
    )
    assert code == 1
    assert err.splitlines() == [
        f"yieldmcp: error: the server name {said} has control characters, "
        "line breaks or invisible characters: give --name NAME"
    ]
    assert not config.exists()
    done = install("cursor", str(SERVED), "--name", name, "--dry-run")
    assert (done[0], done[1], "has control characters" in done[2]) == (1, "", True)
    # FILE's own name is checked the same way, and --name is the way out.
    served = tmp_path / f"{name}.py"
    served.write_text(SERVED.read_text())
    code, _, err = install("cursor", str(served), "--config", str(config))
    assert (code, "has control characters" in err) == (1, True)
    code, _, err = install(
        "cursor", str(served), "--name", "plain", "--config", str(config)
    )
    assert (code, err) == (0, "")
    assert list(json.loads(config.read_text())["mcpServers"]) == ["plain"]


@pytest.mark.parametrize("host", ["vscode", "claude-desktop"])
def test_a_relative_xdg_config_home_is_ignored(host: str, tmp_path: Path) -> None:
    # The XDG specification: a relative XDG_CONFIG_HOME is invalid, ignored.
    home = tmp_path / "home"
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": "rel"}
    done = yieldmcp("install", host, str(SERVED), env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    expected = default_config(host, platform="linux", home=home, environ={})
    assert str(expected).startswith(f"{home}/.config/")
    assert KEYS[host] in json.loads(expected.read_text())
    assert not (tmp_path / "rel").exists()


def test_a_relative_home_needs_config(tmp_path: Path) -> None:
    # HOME=relhome put the file under the current folder.
    env = {**os.environ, "HOME": "relhome"}
    done = yieldmcp("install", "cursor", str(SERVED), env=env, cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "yieldmcp: error: HOME is not an absolute path ('relhome'); give --config FILE"
    ]
    assert list(tmp_path.iterdir()) == []
    config = tmp_path / "mcp.json"
    args = ["install", "cursor", str(SERVED), "--config", str(config)]
    given = yieldmcp(*args, env=env, cwd=tmp_path)
    assert given.returncode == 0, given.stderr
    assert "book_flight" in json.loads(config.read_text())["mcpServers"]


@pytest.mark.parametrize("host", HOSTS)
def test_an_empty_home_is_refused_not_taken_for_the_root(host: str) -> None:
    # HOME= was read as "/": the file went to /.cursor/mcp.json. Asked of
    # the lookup, not the command, so that a regression writes nothing there.
    with pytest.raises(InstallError, match=r"^HOME is not an absolute path \(''\)"):
        default_config(host, platform="linux", environ={"HOME": ""})


def test_the_success_line_shows_the_config_without_controls(tmp_path: Path) -> None:
    # A path holding an escape sequence or a line break reached the terminal.
    config = tmp_path / "a\x1b[31mb\nc\x07.json"
    code, out, err = install("cursor", str(SERVED), "--config", str(config))
    assert code == 0, err
    (line,) = out.splitlines()
    assert line.startswith("added 'book_flight' to ")
    assert line.isprintable()
    assert "book_flight" in json.loads(config.read_text())["mcpServers"]

"""``serve``'s options from ``[tool.yieldmcp]`` or ``yieldmcp.toml``: found,
overridden by flags, shown by ``--print-config``, and refused in one line."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from bridge.client import connect
from tests.bridge.cli.inprocess import Done, yieldmcp
from tests.helpers import ROOT, needs_root
from tests.processes import free_port, kill, ready, url_of

YIELDMCP = str(Path(sys.executable).parent / "yieldmcp")
SERVED = ROOT / "examples" / "book_flight.py"


def project(folder: Path, table: str, *, own_file: bool = False) -> Path:
    """A project in ``folder`` whose configuration is ``table``'s lines."""
    folder.mkdir(parents=True, exist_ok=True)
    if own_file:
        (folder / "yieldmcp.toml").write_text(table)
    else:
        text = f'[project]\nname = "p"\n\n[tool.yieldmcp]\n{table}'
        (folder / "pyproject.toml").write_text(text)
    served = folder / "tools.py"
    served.write_text(SERVED.read_text())
    return served


def printed(done: Done) -> dict[str, tuple[str, str]]:
    """``--print-config``'s lines: each key's shown value and its source."""
    assert done.returncode == 0, done.stderr
    rows: dict[str, tuple[str, str]] = {}
    for line in done.stdout.splitlines():
        found = re.match(r"^(# )?([\w-]+)( = (.*?)| \(not set\))\s+# (.+)$", line)
        if found:
            value = found[4] if found[4] is not None else "(not set)"
            rows[found[2]] = (value, found[5])
    return rows


def test_the_file_sets_options_and_flags_override_it(tmp_path: Path) -> None:
    served = project(
        tmp_path,
        'max-calls = 64\nmax_body = 1000\nallow-origin = ["https://a.example"]\n',
    )
    config = tmp_path / "pyproject.toml"
    done = yieldmcp(
        "serve", "tools.py", "--print-config", "--max-body", "2000", cwd=tmp_path
    )
    rows = printed(done)
    assert rows["max-calls"] == ("64", f"{config}:5")
    assert rows["max-body"] == ("2000", "flag")  # the flag wins over line 6
    assert rows["allow-origin"] == ('["https://a.example"]', f"{config}:7")
    assert rows["workers"] == ("1", "default")
    assert rows["max-sessions"] == ("(not set)", "default")
    assert f"# configuration file: {config}" in done.stdout
    assert served.exists()


def test_yieldmcp_toml_holds_them_at_its_top_level(tmp_path: Path) -> None:
    project(tmp_path, "http = 8123\ndebug = true\n", own_file=True)
    rows = printed(yieldmcp("serve", "tools.py", "--print-config", cwd=tmp_path))
    own = tmp_path / "yieldmcp.toml"
    assert rows["http"] == ('"127.0.0.1:8123"', f"{own}:1")
    assert rows["debug"] == ("true", f"{own}:2")


def test_the_file_is_found_from_a_folder_below(tmp_path: Path) -> None:
    project(tmp_path, "max-calls = 7\n")
    below = tmp_path / "src" / "deep"
    below.mkdir(parents=True)
    rows = printed(
        yieldmcp("serve", str(tmp_path / "tools.py"), "--print-config", cwd=below)
    )
    assert rows["max-calls"][0] == "7"


def test_the_file_beside_the_served_file_is_used_from_elsewhere(
    tmp_path: Path,
) -> None:
    served = project(tmp_path / "proj", "max-calls = 9\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    rows = printed(yieldmcp("serve", str(served), "--print-config", cwd=elsewhere))
    assert rows["max-calls"][0] == "9"


def test_a_flag_of_an_exclusive_group_overrides_the_files_other_choice(
    tmp_path: Path,
) -> None:
    project(tmp_path, "durable = true\n")
    rows = printed(
        yieldmcp(
            "serve", "tools.py", "--print-config", "--store", "memory:", cwd=tmp_path
        )
    )
    assert rows["store"] == ('"memory:"', "flag")
    assert rows["durable"] == ("false", "default")


BAD = {  # the file's table -> its error line, after the file's name
    "unknown": (
        "max-callz = 3\n",
        ":5: unknown key 'max-callz' (serve has no --max-callz; "
        "did you mean max-calls?)",
    ),
    "string-for-int": (
        'max-calls = "many"\n',
        ":5: 'max-calls' must be an integer, not \"many\"",
    ),
    "float-for-int": ("max-calls = 2.5\n", ":5: 'max-calls' must be an integer"),
    "not-positive": (
        "task-lease = 0\n",
        ":5: 'task-lease' must be a number above 0 and at most 315360000, not 0",
    ),
    "int-for-switch": ("debug = 1\n", ":5: 'debug' must be true or false, not 1"),
    "choice": (
        'stream-responses = "sometimes"\n',
        ":5: 'stream-responses' must be one of always, when-needed",
    ),
    "http": (
        'http = "nope"\n',
        ":5: 'http' must be a string or a number (expected PORT or HOST:PORT",
    ),
    "table-in-list": ("allow-host = [{a = 1}]\n", ":5: 'allow-host' must be"),
    "exclusive": (
        'store = "memory:"\ndurable = true\n',
        ": 'store' and 'durable' cannot both be set",
    ),
    "twice": ("max-calls = 1\nmax_calls = 2\n", ":6: 'max_calls' is set twice"),
    "toml": ("[broken\n", " is not valid TOML"),
}


@pytest.mark.parametrize("kind", sorted(BAD))
def test_a_bad_setting_is_one_line_naming_the_file_and_exit_2(
    kind: str, tmp_path: Path
) -> None:
    table, message = BAD[kind]
    project(tmp_path, table)
    done = yieldmcp("serve", "tools.py", cwd=tmp_path)
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"yieldmcp: error: {tmp_path / 'pyproject.toml'}{message}")


def test_both_files_in_one_folder_is_refused(tmp_path: Path) -> None:
    project(tmp_path, "max-calls = 1\n")
    (tmp_path / "yieldmcp.toml").write_text("max-calls = 2\n")
    done = yieldmcp("serve", "tools.py", "--print-config", cwd=tmp_path)
    assert done.returncode == 2
    assert "configure yieldmcp: keep one" in done.stderr


def test_a_pyproject_without_the_table_is_passed_over(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\n')
    (tmp_path / "tools.py").write_text(SERVED.read_text())
    done = yieldmcp("serve", "tools.py", "--print-config", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "# configuration file: none found" in done.stdout


async def test_serve_takes_http_and_verbose_from_the_file(tmp_path: Path) -> None:
    port = free_port()
    project(tmp_path, f'http = "127.0.0.1:{port}"\nverbose = 1\n')
    errors = tmp_path / "stderr.txt"
    with errors.open("wb") as err:
        process = subprocess.Popen(
            [YIELDMCP, "serve", "tools.py"], cwd=tmp_path, stderr=err
        )
    try:
        await ready(port, process)
        async with connect(url_of(port)) as client:
            tools = await client.list_tools()
        assert [tool["name"] for tool in tools] == ["book_flight"]
    finally:
        kill(process)
    # verbose = 1 took effect before logging was set up: a line per request.
    assert "yieldmcp.requests: tools/list" in errors.read_text()


@pytest.mark.parametrize("shared", ["owner", "mode"])
def test_a_file_another_user_could_have_written_is_refused(
    shared: str, tmp_path: Path
) -> None:
    # The search climbs into shared folders: a yieldmcp.toml planted in /tmp
    # by another user chose how every server below it listened and stored.

    if shared == "owner":
        needs_root("giving a file to another user")
    planted = tmp_path / "yieldmcp.toml"
    served = project(tmp_path / "below" / "project", "", own_file=False)
    (served.parent / "pyproject.toml").write_text('[project]\nname = "p"\n')
    planted.write_text('debug = true\nhttp = "127.0.0.1:0"\n')
    _share(planted, shared)
    done = yieldmcp("serve", "tools.py", "--print-config", cwd=served.parent)
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"yieldmcp: error: {planted} ")
    assert "not read" in line
    # A pyproject.toml of another user that does not configure yieldmcp is
    # passed over, as before.
    planted.unlink()
    other = tmp_path / "pyproject.toml"
    other.write_text('[project]\nname = "theirs"\n')
    _share(other, shared)
    done = yieldmcp("serve", "tools.py", "--print-config", cwd=served.parent)
    assert done.returncode == 0, done.stderr


def _share(path: Path, how: str) -> None:
    """Give ``path`` to another user, or let every user write it."""
    import os

    if how == "owner":
        os.chown(path, 65534, 65534)
    else:
        path.chmod(0o666)


def test_toml_nested_past_the_parsers_depth_is_one_line(tmp_path: Path) -> None:
    served = project(tmp_path, "")
    (tmp_path / "pyproject.toml").unlink()
    (tmp_path / "yieldmcp.toml").write_text("a = " + "[" * 5000 + "]" * 5000 + "\n")
    done = yieldmcp("serve", served.name, "--print-config", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"yieldmcp: error: {tmp_path / 'yieldmcp.toml'} is not valid TOML: "
        "nested too deep"
    ]

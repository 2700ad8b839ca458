"""``yieldmcp init [DIR]``: the project it makes passes its own tests and
serves as made."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from bridge.cli.init_project import dependency, make_project
from bridge.client import connect
from bridge.elicit import ScriptedAnswers
from tests.bridge.cli.inprocess import yieldmcp
from tests.helpers import ROOT, STARTUP, needs_root

YIELDMCP = str(Path(sys.executable).parent / "yieldmcp")
FILES = ["pyproject.toml", "tools.py", "tests/test_tools.py", "README.md"]


def test_init_writes_a_project_depending_on_this_checkout(tmp_path: Path) -> None:
    project = tmp_path / "notes"
    done = yieldmcp("init", str(project))
    assert done.returncode == 0, done.stderr
    for name in FILES:
        assert f"wrote {project / name}" in done.stdout.splitlines()
    config = tomllib.loads((project / "pyproject.toml").read_text())
    # This venv has yieldmcp installed editable from the repository.
    assert config["project"]["name"] == "notes"
    assert config["project"]["dependencies"] == [f"yieldmcp @ {ROOT.as_uri()}"]
    test_extra = config["project"]["optional-dependencies"]["test"]
    assert f"yieldmcp[test] @ {ROOT.as_uri()}" in test_extra
    assert "tool" in config
    assert "yieldmcp" in config["tool"]


def test_an_install_from_an_index_is_depended_on_by_name(tmp_path: Path) -> None:
    make_project(tmp_path, depends_on="yieldmcp")
    config = tomllib.loads((tmp_path / "pyproject.toml").read_text())
    assert config["project"]["dependencies"] == ["yieldmcp"]
    assert "yieldmcp[test]" in config["project"]["optional-dependencies"]["test"]


def test_this_editable_install_is_found() -> None:
    assert dependency() == f"yieldmcp @ {ROOT.as_uri()}"


def test_the_made_projects_tests_pass_with_this_venvs_pytest(tmp_path: Path) -> None:
    make_project(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed" in done.stdout


async def test_the_made_project_serves_as_made(tmp_path: Path) -> None:
    make_project(tmp_path)
    command = [sys.executable, "-m", "bridge.cli", "serve", str(tmp_path / "tools.py")]
    answers = ScriptedAnswers({"confirm": {"ok": True}})
    async with connect(command, elicitation=answers, connect_timeout=STARTUP) as client:
        tools = await client.list_tools()
        assert [tool["name"] for tool in tools] == ["take_note"]
        result = await client.call_tool("take_note", {"text": "milk"})
    assert not result.is_error
    assert result.structured_content == {"result": "saved as note 1"}


def test_the_first_hours_walk_holds_on_the_made_project(tmp_path: Path) -> None:
    """docs/first-hour.md adds its tool to the file ``init`` made and calls
    it with the command it shows: both work as written."""
    doc = (ROOT / "docs" / "first-hour.md").read_text()
    tool = re.search(r"## 2\. Read the tool.*?```python\n(.*?)```", doc, re.DOTALL)
    [command] = [
        line
        for line in doc.splitlines()
        if line.startswith("../.venv/bin/yieldmcp call ")
    ]
    assert tool is not None
    make_project(tmp_path)
    made = tmp_path / "tools.py"
    made.write_text(made.read_text() + "\n\n" + tool.group(1))
    argv = shlex.split(command.replace("../.venv/bin/yieldmcp ", f"{YIELDMCP} "))[1:]
    done = yieldmcp(
        *argv,
        "--answer",
        'size={"cups": 2}',
        "--connect-timeout",
        f"{STARTUP}",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "2 cups, 24 g of beans." in done.stdout


@pytest.mark.parametrize("kind", ["not-empty", "a-file"])
def test_a_folder_with_something_in_it_is_refused_untouched(
    kind: str, tmp_path: Path
) -> None:
    target = tmp_path / "target"
    if kind == "a-file":
        target.write_text("mine")
    else:
        target.mkdir()
        (target / "mine.txt").write_text("mine")
    done = yieldmcp("init", str(target))
    assert done.returncode == 1
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"yieldmcp: error: {target} is ")
    if kind == "a-file":
        assert target.read_text() == "mine"
    else:
        assert [p.name for p in target.iterdir()] == ["mine.txt"]


def test_a_link_to_nothing_is_named_so(tmp_path: Path) -> None:
    # It was "cannot write target: File exists", of a target that is not there.
    target = tmp_path / "target"
    target.symlink_to(tmp_path / "nowhere")
    done = yieldmcp("init", str(target))
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"yieldmcp: error: {target} is a symbolic link to nothing "
        f"({tmp_path / 'nowhere'})"
    ]
    assert not (tmp_path / "nowhere").exists()


def test_init_without_dir_fills_the_current_empty_folder(tmp_path: Path) -> None:
    done = subprocess.run(
        [YIELDMCP, "init"], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*.*")) == (
        sorted(FILES)
    )


@pytest.mark.parametrize("existed", [False, True])
def test_a_write_that_fails_midway_leaves_nothing_and_init_runs_again(
    existed: bool, tmp_path: Path
) -> None:
    # A full disk left pyproject.toml, tools.py, tests/ and an empty
    # README.md, and a second init refused the folder as not empty. The
    # kernel's file size limit fails the third file's write for real.
    target = tmp_path / "project"
    if existed:
        target.mkdir()
    script = (
        "import resource, signal, sys\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (1200, 1200))\n"
        "from bridge.cli import main\n"
        "sys.exit(main(['init', sys.argv[1]]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(target)],
        capture_output=True, text=True, cwd=ROOT, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"yieldmcp: error: cannot write {target}: ")
    assert "File too large" in line
    if existed:
        assert list(target.iterdir()) == []
    else:
        assert not target.exists()
    again = yieldmcp("init", str(target))
    assert again.returncode == 0, again.stderr
    assert sorted(str(p.relative_to(target)) for p in target.rglob("*.*")) == sorted(
        FILES
    )


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o1777], ids=oct)
def test_a_folder_everyone_may_write_is_refused_unless_sticky(
    mode: int, tmp_path: Path
) -> None:
    # Another user could swap a link in for tests/ while init writes.
    target = tmp_path / "target"
    target.mkdir()
    target.chmod(mode)
    done = yieldmcp("init", str(target))
    # The sticky bit: others cannot rename what init makes. A group that may
    # write is the user's own with a umask of 002.
    if mode & 0o1000 or not mode & 0o002:
        assert done.returncode == 0, done.stderr
        assert sorted(str(p.relative_to(target)) for p in target.rglob("*.*")) == (
            sorted(FILES)
        )
        return
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"yieldmcp: error: {target} is writable by everyone (mode {mode:o}): "
        "chmod o-w it, or init a folder of its own"
    ]
    assert list(target.iterdir()) == []


def test_another_users_folder_is_refused(tmp_path: Path) -> None:
    needs_root("giving a folder to another user")
    target = tmp_path / "target"
    target.mkdir()
    os.chown(target, 65534, 65534)
    done = yieldmcp("init", str(target))
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"yieldmcp: error: {target} belongs to another user (uid 65534): init "
        "writes only into a folder of yours"
    ]
    assert list(target.iterdir()) == []


def test_a_loop_of_links_on_the_way_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    done = yieldmcp("init", "loop/proj", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "yieldmcp: error: cannot write loop/proj: Too many levels of symbolic links"
    ]
    assert [p.name for p in tmp_path.iterdir()] == ["loop"]

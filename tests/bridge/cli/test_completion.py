"""``yieldmcp completion bash|zsh|fish``: each script loaded into its shell
and asked what completes a command line, as the shell asks it on Tab."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.bridge.cli.inprocess import yieldmcp
from tests.helpers import ROOT

YIELDMCP = str(Path(sys.executable).parent / "yieldmcp")

# (the words typed so far, the word being completed) -> what must complete it
EXPECTED = [
    ([], "se", {"serve"}),
    (
        [],
        "",
        {
            "serve",
            "call",
            "demo",
            "dev",
            "init",
            "install",
            "completion",
            "journal",
            "tasks",
        },
    ),
    (["serve"], "--max-ca", {"--max-calls", "--max-calls-per-session"}),
    (["serve", "--stream-responses"], "", {"always", "when-needed"}),
    (["call", "x"], "--era", {"--era"}),
    (["completion"], "", {"bash", "zsh", "fish"}),
    (["install"], "c", {"claude-desktop", "cursor"}),
    (["install", "cursor", "x.py"], "--d", {"--dry-run"}),
    (["tasks"], "", {"get", "wait", "cancel"}),
    (["tasks", "wait", "URL", "ID"], "--answer", {"--answer", "--answers"}),
]
IDS = [
    "verb", "verbs", "flag", "choice", "call-flag", "shell", "host", "install-flag",
    "tasks-action", "tasks-flag",
]  # fmt: skip


def script(shell: str, tmp_path: Path) -> Path:
    done = yieldmcp("completion", shell)
    assert done.returncode == 0, done.stderr
    path = tmp_path / f"yieldmcp.{shell}"
    path.write_text(done.stdout)
    return path


def _bash_function_call(words: list[str], current: str) -> str:
    line = ["yieldmcp", *words, current]
    quoted = " ".join(f"'{word}'" for word in line)
    return (
        f"COMP_WORDS=({quoted}); COMP_CWORD={len(line) - 1}; _yieldmcp; "
        'printf "%s\\n" "${COMPREPLY[@]}"'
    )


def _run(argv: list[str]) -> set[str]:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return {line.split("\t")[0] for line in done.stdout.splitlines() if line}


@pytest.mark.parametrize(("words", "current", "expected"), EXPECTED, ids=IDS)
def test_bash_completes_verbs_flags_and_choices(
    words: list[str], current: str, expected: set[str], tmp_path: Path
) -> None:
    path = script("bash", tmp_path)
    call = _bash_function_call(words, current)
    assert _run(["bash", "-c", f"source {path}; {call}"]) == expected


@pytest.mark.parametrize(("words", "current", "expected"), EXPECTED, ids=IDS)
def test_zsh_completes_through_bashcompinit(
    words: list[str], current: str, expected: set[str], tmp_path: Path
) -> None:
    if shutil.which("zsh") is None:
        pytest.skip("zsh is not installed (apt-get install -y zsh)")
    path = script("zsh", tmp_path)
    call = _bash_function_call(words, current)
    setup = "autoload -U compinit && compinit -u -D"
    # bashcompinit runs the function under `emulate -L sh` (arrays from 0).
    sh = f"() {{ emulate -L sh; {call} }}"
    found = _run(["zsh", "-f", "-c", f"{setup}; source {path}; {sh}"])
    # Its compgen offers every candidate; zsh's matcher keeps those that
    # start with the word typed.
    assert {word for word in found if word.startswith(current)} == expected


@pytest.mark.parametrize(("words", "current", "expected"), EXPECTED, ids=IDS)
def test_fish_completes_with_descriptions(
    words: list[str], current: str, expected: set[str], tmp_path: Path
) -> None:
    if shutil.which("fish") is None:
        pytest.skip("fish is not installed (apt-get install -y fish)")
    path = script("fish", tmp_path)
    line = " ".join(["yieldmcp", *words, current])
    found = _run(["fish", "--no-config", "-c", f"source {path}; complete -C '{line}'"])
    assert found == expected


def test_after_the_host_install_completes_file_names(tmp_path: Path) -> None:
    path = script("bash", tmp_path)
    call = _bash_function_call(["install", "cursor"], "")
    # Nothing offered: bash's -o default completes file names.
    assert _run(["bash", "-c", f"source {path}; {call}"]) == set()
    if shutil.which("fish") is None:
        pytest.skip("fish is not installed (apt-get install -y fish)")
    fish = script("fish", tmp_path)
    (tmp_path / "tools.py").write_text("")
    line = "yieldmcp install cursor t"
    done = subprocess.run(
        ["fish", "--no-config", "-c", f"source {fish}; complete -C '{line}'"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert done.stdout.split() == ["tools.py"]


def test_fish_describes_a_verb_by_its_help(tmp_path: Path) -> None:
    if shutil.which("fish") is None:
        pytest.skip("fish is not installed (apt-get install -y fish)")
    path = script("fish", tmp_path)
    done = subprocess.run(
        ["fish", "--no-config", "-c", f"source {path}; complete -C 'yieldmcp ser'"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout == "serve\tserve the tools a Python file or module defines\n"


def test_an_unknown_shell_is_a_usage_error() -> None:
    done = yieldmcp("completion", "tcsh")
    assert done.returncode == 2
    assert "invalid choice: 'tcsh'" in done.stderr


def test_the_console_script_prints_a_script_bash_loads() -> None:
    done = subprocess.run(
        [YIELDMCP, "completion", "bash"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    loaded = subprocess.run(
        ["bash", "-c", "source /dev/stdin; complete -p yieldmcp"],
        input=done.stdout,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert loaded.stdout.strip().endswith("-F _yieldmcp yieldmcp")

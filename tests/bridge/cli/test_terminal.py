"""Ctrl-C, Ctrl-D, forms and start-up lines of the real ``yieldmcp`` on a pty."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from collections.abc import Iterator

import pytest

from tests.bridge.cli.terminal import YIELDMCP, Terminal, no_spawned_left
from tests.helpers import ROOT

GAME = "yieldmcp serve examples/ttt.py"
MODEL_IS_O = 0  # play_ttt's seed: the user plays X and moves first


@pytest.fixture
def terminals() -> Iterator[list[Terminal]]:
    opened: list[Terminal] = []
    yield opened
    for terminal in opened:
        terminal.close()


def start(terminals: list[Terminal], *args: str, **options: bool) -> Terminal:
    terminal = Terminal([YIELDMCP, *args], **options)
    terminals.append(terminal)
    return terminal


def assert_quiet(screen: str) -> None:
    for noise in ("Traceback", "Exception Group", "KeyboardInterrupt", "Fatal"):
        assert noise not in screen, screen


@pytest.mark.parametrize(
    "argv",
    [
        ["demo", "--seed", str(MODEL_IS_O)],
        ["call", GAME, "play_ttt", "--arg", f"seed={MODEL_IS_O}"],
    ],
    ids=["demo", "call"],
)
def test_ctrl_c_at_a_form_exits_130_quietly_and_stops_the_server(
    terminals: list[Terminal], argv: list[str]
) -> None:
    terminal = start(terminals, *argv)
    terminal.expect("Cell: ")
    assert terminal.spawned_alive()  # the server it spawned
    terminal.type("\x03")
    assert terminal.wait() == 130
    assert_quiet(terminal.screen)
    assert no_spawned_left(terminal)


def test_ctrl_c_stops_a_stdio_server_quietly(terminals: list[Terminal]) -> None:
    terminal = start(terminals, "serve", "examples/ttt.py")
    terminal.type('{"jsonrpc": "2.0", "id": 7, "method": "ping"}\n')
    terminal.expect('"id":7')  # it is serving
    terminal.type("\x03")
    assert terminal.wait() == 130
    assert_quiet(terminal.screen)


def test_serve_http_says_where_it_serves_and_stops_on_ctrl_c(
    terminals: list[Terminal],
) -> None:
    terminal = start(terminals, "serve", "examples/ttt.py", "--http", "0", "-v")
    terminal.expect("/mcp\n")
    found = re.search(r"serving MCP at http://127\.0\.0\.1:(\d+)/mcp", terminal.screen)
    assert found is not None, terminal.screen
    assert int(found.group(1)) != 0  # the port chosen, not the one asked for
    assert " INFO " in terminal.screen  # -v after the verb counts
    terminal.type("\x03")
    assert terminal.wait() == 130
    assert_quiet(terminal.screen)


def test_ctrl_d_ends_the_prompt_line_before_the_outcome(
    terminals: list[Terminal],
) -> None:
    terminal = start(terminals, "demo", "--seed", str(MODEL_IS_O))
    terminal.expect("Cell: ")
    terminal.type("\x04")
    terminal.expect("outcome:")
    assert terminal.wait() == 0
    assert "outcome: cancelled" in terminal.screen
    assert not any(
        line.startswith("Cell:") and "outcome" in line
        for line in terminal.screen.splitlines()
    ), terminal.screen


@pytest.mark.parametrize("era", ["auto", "legacy"])
def test_a_server_dying_at_a_form_is_one_line_and_no_abort(
    terminals: list[Terminal], era: str
) -> None:
    terminal = start(terminals, "demo", "--seed", str(MODEL_IS_O), "--era", era)
    terminal.expect("Cell: ")
    for pid in terminal.spawned_alive():
        os.kill(pid, signal.SIGKILL)
    status = terminal.wait()
    assert status == 1, terminal.screen
    assert_quiet(terminal.screen)
    errors = [line for line in terminal.screen.splitlines() if "error:" in line]
    assert len(errors) == 1, terminal.screen
    assert errors[0].startswith("yieldmcp: error:")


def test_json_output_keeps_typed_forms_off_stdout(terminals: list[Terminal]) -> None:
    terminal = start(
        terminals, "demo", "--seed", str(MODEL_IS_O), "--json", stdout_to_pipe=True
    )
    terminal.expect("Cell: ")  # the form is on the terminal
    terminal.type(":decline\n")
    assert terminal.wait() == 0, terminal.screen
    result = json.loads(terminal.stdout)  # stdout is the JSON, only
    assert result["structuredContent"]["outcome"] == "declined"
    assert "Cell: " not in terminal.stdout


MODEL_IS_X = 1  # play_ttt's seed: the model moves first


def test_a_terminal_shows_who_is_thinking_and_progress_as_a_bar(
    terminals: list[Terminal],
) -> None:
    terminal = start(terminals, "demo", "--seed", str(MODEL_IS_X))
    terminal.expect("Cell: ")
    assert "waiting for offline…" in terminal.screen
    assert re.search(r"\[progress [█░]{12} 1/9\] move 1", terminal.screen)
    shown = [line.rsplit("\r", 1)[-1] for line in terminal.screen.split("\n")]
    assert not [line for line in shown if "waiting" in line and "[" in line]
    terminal.type(":cancel\n")
    assert terminal.wait() == 0


def test_piped_output_has_no_spinner_and_no_bar() -> None:
    done = subprocess.run(
        [YIELDMCP, "demo", "--seed", str(MODEL_IS_X), "--answer", "pick_move=cancel"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "[progress 1/9] move 1" in done.stdout
    assert "waiting" not in done.stdout + done.stderr
    assert "\x1b" not in done.stdout + done.stderr


def test_a_url_step_at_the_terminal_shows_the_url_and_retries_when_done(
    terminals: list[Terminal],
) -> None:
    server = "yieldmcp serve tests/fixtures/url_required.py"
    terminal = start(terminals, "call", server, "pay", "--era", "legacy")
    terminal.expect("Consent? ")
    assert "URL:  https://pay.example.com/ok?id=7" in terminal.screen
    assert "Approve the payment" in terminal.screen
    terminal.type("yes\n")
    if "DISPLAY" in os.environ or "WAYLAND_DISPLAY" in os.environ:
        terminal.expect("Open it in your browser now?")
        terminal.type("n\n")
    terminal.expect("Press Enter when you have finished there")
    terminal.type("\n")
    assert terminal.wait() == 0, terminal.screen
    assert terminal.screen.rstrip().endswith("paid")

"""``yieldmcp call`` against servers that never answer: bounded, one line."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.bridge.cli.inprocess import Done, yieldmcp
from tests.bridge.cli.terminal import YIELDMCP
from tests.helpers import ROOT, STARTUP
from tests.threaded_http import QuietHandler, serving, wordy_openai

INTEROP = "tests/fixtures/interop_server.py"
SILENT = f"{sys.executable} -c 'import sys; sys.stdin.read()'"
DEAF = f"{sys.executable} -m tests.fixtures.deaf_to_discover examples/ttt.py"
# The official SDK's server, answering server/discover 2 s late.
SLOW_SDK = (
    f"{sys.executable} -m tests.fixtures.slow_to_discover 2 "
    f"{sys.executable} tests/fixtures/sdk_server.py"
)


def call(*args: str, env: dict[str, str] | None = None) -> Done:
    return yieldmcp("call", *args, env=env)


def one_error_line(done: Done) -> str:
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("yieldmcp: error: ")
    return lines[0]


@pytest.fixture
def silent_http() -> Iterator[str]:
    """A port that takes connections (the kernel's backlog) and never answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"


@pytest.mark.parametrize("era", ["legacy", "auto", "2026-07-28"])
def test_a_silent_stdio_server_is_a_timeout_not_a_hang(era: str) -> None:
    done = call(SILENT, "--era", era, "--connect-timeout", "1")
    assert "did not answer" in one_error_line(done)


@pytest.mark.parametrize("era", ["legacy", "auto"])
def test_a_silent_http_server_is_a_timeout_not_a_hang(
    silent_http: str, era: str
) -> None:
    done = call(silent_http, "--era", era, "--connect-timeout", "1")
    assert "did not answer" in one_error_line(done)


def test_auto_waits_for_a_slow_discover(tmp_path: Path) -> None:
    methods = tmp_path / "methods"
    env = {**os.environ, "SLOW_TO_DISCOVER_LOG": str(methods)}
    # Answered 2 s late, well inside --connect-timeout (the server's start
    # counts too, and on a loaded machine it alone can take the default 10 s).
    done = call(SLOW_SDK, "--connect-timeout", f"{STARTUP}", env=env)
    assert done.returncode == 0, done.stderr
    assert "mrtr_elicit" in done.stdout
    assert "initialize" not in methods.read_text().split()


def test_auto_never_sends_initialize_after_an_unanswered_discover(
    tmp_path: Path,
) -> None:
    # The SDK's server would answer the probe after 2 s and then refuse an
    # initialize on the same connection: the call fails naming the timeout.
    methods = tmp_path / "methods"
    env = {**os.environ, "SLOW_TO_DISCOVER_LOG": str(methods)}
    done = call(SLOW_SDK, "--connect-timeout", "1", env=env)
    line = one_error_line(done)
    assert "server/discover" in line
    assert "1 s (--connect-timeout)" in line
    # The probe, and the client withdrawing it when it gave up; no initialize.
    sent = methods.read_text().split()
    assert sent == ["server/discover", "notifications/cancelled"]


def test_a_server_deaf_to_discover_is_told_to_use_the_legacy_era() -> None:
    line = one_error_line(call(DEAF, "--connect-timeout", "2"))
    assert "--era legacy" in line
    done = call(DEAF, "--era", "legacy", "--connect-timeout", f"{STARTUP}")
    assert done.returncode == 0, done.stderr
    assert "play_ttt" in done.stdout


def test_timeout_bounds_the_whole_call() -> None:
    # The game waits for a move from a terminal that never types (stdin open).
    game = "yieldmcp serve examples/ttt.py"
    with subprocess.Popen(
        [YIELDMCP, "call", game, "play_ttt", "--timeout", "3"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    ) as process:
        status = process.wait(timeout=120)
        assert process.stderr is not None
        stderr = process.stderr.read()
    done = subprocess.CompletedProcess(process.args, status, "", stderr)
    assert "no result within 3 s (--timeout)" in one_error_line(done)


@pytest.fixture
def closed_port() -> str:
    """A loopback URL where nothing listens."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/mcp"


@pytest.mark.parametrize("era", ["legacy", "auto", "2026-07-28"])
def test_a_server_never_reached_is_said_so_not_gone(closed_port: str, era: str) -> None:
    line = one_error_line(call(closed_port, "--era", era))
    assert line.startswith(
        f"yieldmcp: error: cannot reach the MCP server at {closed_port}: "
    )
    assert "went away" not in line


@pytest.fixture
def wrong_path() -> Iterator[str]:
    """An HTTP server that answers every POST 404 with no reason phrase."""

    class NotHere(QuietHandler):
        def do_POST(self) -> None:
            body = b"the MCP endpoint is /mcp"
            self.send_response(404, "")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    with serving(NotHere) as base:
        yield f"{base}/nope"


def test_an_http_error_without_a_reason_phrase_reads_cleanly(wrong_path: str) -> None:
    line = one_error_line(call(wrong_path, "--era", "2026-07-28"))
    assert line.endswith(" failed: HTTP 404: the MCP endpoint is /mcp"), line


@pytest.fixture
def trickling_provider() -> Iterator[str]:
    """An OpenAI-like base URL whose answer comes a byte every 50 ms: never
    quiet long enough for a network step's timeout."""

    class Trickle(QuietHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "100000")
            self.end_headers()
            with contextlib.suppress(OSError):
                for _ in range(100_000):
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(0.05)

    with serving(Trickle) as base:
        yield f"{base}/v1"


@pytest.mark.parametrize("era", ["2026-07-28", "legacy"])
def test_a_model_that_trickles_is_cut_at_model_timeout_in_one_line(
    trickling_provider: str, era: str
) -> None:
    env = {
        **os.environ,
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_BASE_URL": trickling_provider,
    }
    started = time.monotonic()
    done = call(
        f"yieldmcp serve {INTEROP}", "ask", "--arg", "prompt=hi", "--era", era,
        "--model", "openai:gpt-test", "--model-timeout", "1",
        "--connect-timeout", f"{STARTUP}", env=env,
    )  # fmt: skip
    assert time.monotonic() - started < 60
    why = (
        "openai: no whole answer within 1s (its deadline, every try included) "
        f"from {trickling_provider}"
    )
    if era == "legacy":
        # The server asked live: our client answered its request with the
        # model's failure, -32603 (it was -32602, as if the server's fault).
        assert done.returncode == 1
        assert done.stderr.splitlines() == [f"tool error: Peer error -32603: {why}"]
    else:
        line = one_error_line(done)
        assert (
            line
            == f"yieldmcp: error: the model did not answer: {why} (--model-timeout)"
        )


def test_model_timeout_must_be_positive() -> None:
    done = call(f"yieldmcp serve {INTEROP}", "ask", "--model-timeout", "0")
    assert done.returncode == 2
    assert "--model-timeout: expected seconds > 0, got '0'" in done.stderr


def test_model_timeouts_default_is_the_providers_deadline() -> None:
    # Written twice on purpose (the parser imports no provider code): kept equal.
    from bridge.cli.host_options import MODEL_TIMEOUT
    from bridge.providers import DEFAULT_DEADLINE

    assert MODEL_TIMEOUT == DEFAULT_DEADLINE


BLOCKS = "yieldmcp serve tests/fixtures/every_block.py"  # a 4.2 KB image in its result
HOSTILE = f"{sys.executable} tests/fixtures/hostile_server.py"


def test_a_stdio_message_over_max_message_fails_the_call_at_once() -> None:
    # The client cannot tell whose reply the dropped line was: waiting on
    # would wait for ever (it did, with no --timeout). The call fails saying
    # why, as it does over HTTP.
    done = call(BLOCKS, "every_block", "--max-message", "2000", "--timeout", "60")
    assert one_error_line(done) == (
        "yieldmcp: error: the server broke the protocol: the server sent a "
        "message over 2,000 bytes (the client's max_message)"
    )
    assert call(BLOCKS, "every_block", "--max-message", "9000").returncode == 0


def test_max_questions_is_the_callers_to_set() -> None:
    done = call(HOSTILE, "flood", "--era", "2026-07-28", "--max-questions", "2")
    assert one_error_line(done) == (
        "yieldmcp: error: the server broke the protocol: the server asked 1000 "
        "questions in one round; the client answers at most 2 (--max-questions, "
        "or connect(max_questions=))"
    )


@pytest.mark.parametrize("flag", ["--max-message", "--max-questions", "--max-listing"])
def test_the_bounds_must_be_whole_numbers_above_zero(flag: str) -> None:
    done = call(BLOCKS, "every_block", flag, "0")
    assert done.returncode == 2
    assert f"{flag}: expected a whole number > 0, got '0'" in done.stderr


def test_the_bounds_defaults_are_the_clients() -> None:
    # --max-questions is written twice on purpose (the parser imports no client
    # code); every reader takes bridge.transports.framing.MAX_MESSAGE.
    # Kept equal.
    import inspect

    from bridge.cli.host_options import MAX_LISTING, MAX_MESSAGE, MAX_QUESTIONS
    from bridge.client import Client, connect, pages
    from bridge.client.http import http_transport
    from bridge.client.process import spawn

    for opener in (connect, http_transport, spawn):
        assert (
            inspect.signature(opener).parameters["max_message"].default == MAX_MESSAGE
        )
    assert inspect.signature(Client).parameters["max_questions"].default == (
        MAX_QUESTIONS
    )
    assert inspect.signature(Client).parameters["max_listing"].default == (MAX_LISTING)
    assert pages.MAX_LISTING == MAX_LISTING


def test_model_max_answer_bounds_what_is_read_from_the_model() -> None:
    with wordy_openai(5_000) as base:
        env = {**os.environ, "OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": base}
        ask = (f"yieldmcp serve {INTEROP}", "ask", "--arg", "prompt=hi")
        model = ("--era", "2026-07-28", "--model", "openai:gpt-test")
        assert call(*ask, *model, env=env).returncode == 0  # under the default
        done = call(*ask, *model, "--model-max-answer", "1000", env=env)
    assert one_error_line(done) == (
        "yieldmcp: error: openai: an answer over 1,000 bytes (its max_answer) "
        f"from {base}/chat/completions"
    )


def test_model_max_answers_default_is_the_providers() -> None:
    # Written twice on purpose (the parser imports no provider code): kept equal.
    from bridge.cli.host_options import MAX_ANSWER as FLAGS_DEFAULT
    from bridge.providers import MAX_ANSWER

    assert FLAGS_DEFAULT == MAX_ANSWER

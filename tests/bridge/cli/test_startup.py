"""What ``yieldmcp`` says when it starts, and when it cannot."""

from __future__ import annotations

import os
import re
import socket

from tests.bridge.cli.inprocess import yieldmcp

run = yieldmcp


def test_a_port_in_use_is_one_line() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run("serve", "examples/ttt.py", "--http", str(port))
    assert done.returncode == 1
    assert done.stderr == (
        f"yieldmcp: error: cannot listen on 127.0.0.1:{port}: address already in use\n"
    )


def test_version() -> None:
    done = run("--version")
    assert done.returncode == 0
    assert re.fullmatch(r"yieldmcp \d+\.\d+\.\d+\S*\n", done.stdout)


def test_an_unreachable_provider_is_one_line_naming_it_once() -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))  # bound, never listening: refused
        port = closed.getsockname()[1]
        done = run(
            "demo", "--seed", "1", "--model", "ollama:llama3.1",
            env={**os.environ, "OLLAMA_HOST": f"127.0.0.1:{port}"},
        )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert "ollama: ollama:" not in done.stderr  # nor in the retries' log lines
    assert done.stderr.splitlines()[-1] == (
        f"yieldmcp: error: cannot reach ollama at http://127.0.0.1:{port} "
        "(is it running?)"
    )

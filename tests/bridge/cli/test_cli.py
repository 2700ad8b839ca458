"""The ``yieldmcp`` command line, as a user runs it.

Its behaviour in this process (:mod:`tests.bridge.cli.inprocess`: exit codes,
output, the one-line errors); and each verb once as the console script, a
real process: ``call`` (of a ``serve`` on stdio), ``demo``, ``serve --http``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from bridge.cli.commands import _host_port
from bridge.client import connect
from tests.bridge.cli.inprocess import yieldmcp as run
from tests.bridge.providers.fake_server import Reply, open_fake_provider
from tests.helpers import ROOT, STARTUP

BIN = Path(sys.executable).parent
YIELDMCP = str(BIN / "yieldmcp")
# For a call that starts a server: its start, not the connect bound, is waited
# for (tests/bridge/cli/test_client_bounds.py tests the bound).
WAIT = ("--connect-timeout", f"{STARTUP}")


def run_process(*args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """The console script, as a user's shell starts it."""
    return subprocess.run(
        [YIELDMCP, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        **kwargs,
    )


@pytest.mark.parametrize(
    "verb",
    [[], ["serve"], ["call"], ["demo"], ["dev"], ["init"], ["install"], ["completion"]],
    ids=lambda v: v[0] if v else "main",
)
def test_help_is_complete(verb: list[str]) -> None:
    done = run(*verb, "--help")
    assert done.returncode == 0
    assert "usage: yieldmcp" in done.stdout
    for word in {
        "serve": ["--http", "FILE_OR_MODULE", "--reload", "--print-config"],
        "call": ["--model", "--arg", "--answers", "--json", "SERVER"],
        "demo": ["--model", "--answers", "--seed"],
        "dev": ["FILE_OR_MODULE", "--port", "--model", "--keep-calls"],
        "init": ["DIR", "empty"],
        "install": ["claude-desktop", "--config", "--dry-run", "--force", "FILE"],
        "completion": ["bash", "zsh", "fish"],
    }.get(verb[0] if verb else "", ["serve", "call", "demo", "dev", "init", "install"]):
        assert word in done.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["serve", "no/such/file.py"], "no such file"),
        (
            [
                "call",
                "yieldmcp serve examples/ttt.py",
                "play_ttt",
                "--model",
                "nope:x",
                *WAIT,
            ],
            "nope",
        ),
        (["call", "/no/such/command", "tool"], "cannot start the server"),
        (
            [
                "call",
                "yieldmcp serve examples/ttt.py",
                "play_ttt",
                "--args",
                "[1]",
                *WAIT,
            ],
            "JSON object",
        ),
        (
            ["call", "yieldmcp serve examples/ttt.py", "no_such_tool", *WAIT],
            "Unknown tool",
        ),
    ],
    ids=["missing-file", "bad-model", "bad-command", "bad-args", "unknown-tool"],
)
def test_errors_are_one_line_and_a_non_zero_exit(args: list[str], message: str) -> None:
    done = run(*args)
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("yieldmcp: error:")
    assert message in lines[0]


BROKEN = {
    "definition": (
        "from pydantic import BaseModel\n"
        "from runtime import Context, tool\n\n\n"
        "class Nested(BaseModel):\n"
        "    inner: dict[str, int]\n\n\n"
        "@tool(elicits={'form': Nested})\n"
        "def t(ctx: Context) -> str:\n"
        "    return 'x'\n",
        "(served.py, line 9): InvalidTool: tool 't', elicits['form']",
    ),
    "elicits-names": (
        "from runtime import Context, tool\n\n\n"
        "@tool(elicits=['name'])\n"
        "def t(ctx: Context) -> str:\n"
        "    return 'x'\n",
        "(served.py, line 4): InvalidTool: tool 't': elicits takes ElicitKey values",
    ),
    "two-tools-one-name": (
        "from runtime import Context, tool\n\n\n"
        "@tool\n"
        "def t(ctx: Context) -> str:\n"
        "    return 'x'\n\n\n"
        "@tool(name='t')\n"
        "def u(ctx: Context) -> str:\n"
        "    return 'y'\n",
        ": two tools are named 't': a server offers one tool per name",
    ),
    "import": (
        "import a_module_that_is_not_installed\n",
        "(served.py, line 1): ModuleNotFoundError: No module named",
    ),
    "syntax": ("x = (\n", "SyntaxError: '(' was never closed"),
    "raise": ("raise RuntimeError('boom\\nsecond line')\n", "RuntimeError: boom"),
}


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_a_file_that_fails_to_load_is_one_line_naming_where(
    kind: str, tmp_path: Path
) -> None:
    source, message = BROKEN[kind]
    served = tmp_path / "served.py"
    served.write_text(source)
    done = run("serve", str(served))
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"yieldmcp: error: cannot load {served}")
    assert message in lines[0]


@pytest.mark.parametrize(
    "args",
    [
        ["call"],
        ["serve"],
        ["serve", "x.py", "--nope"],
        ["nope"],
        ["demo", "--seed=x"],
        # A SERVER that is neither a URL nor a command: each was a traceback.
        ["call", "http://[::1", "t"],
        ["call", "http://", "t"],
        ["call", "http://x:99999/mcp", "t"],
        ["call", "https://exa mple.com/", "t"],
        ["call", "", "t"],
        ["call", "   ", "t"],
        ["call", "'unclosed", "t"],
        ["tasks", "get", "", "id"],
        # A port past 65535 was taken modulo 65536 by the socket layer.
        ["dev", "examples/weather.py", "--port", "99999"],
        ["call", "http://127.0.0.1:1/mcp", "t", "--oauth-port", "70000"],
        # An origin or host that could never match: the browser would get 403.
        ["serve", "examples/weather.py", "--allow-origin", "not a url"],
        ["serve", "examples/weather.py", "--allow-origin", "https://a.example/app"],
        ["serve", "examples/weather.py", "--allow-host", ""],
        ["serve", "examples/weather.py", "--allow-host", "https://a.example"],
    ],
)
def test_usage_mistakes_are_one_line_and_exit_code_2(args: list[str]) -> None:
    done = run(*args)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert re.match(r"yieldmcp( \w+)?: error: .* \(see --help\)$", lines[0])


def _readme_command(pattern: str) -> list[str]:
    """A command exactly as the README prints it, run with this venv's binaries."""
    readme = (ROOT / "README.md").read_text()
    command = next(line for line in readme.splitlines() if re.search(pattern, line))
    argv = shlex.split(command)
    argv[0] = str(BIN / Path(argv[0]).name)
    return argv


def test_the_readme_non_interactive_demo_plays_a_whole_game() -> None:
    argv = _readme_command(r"yieldmcp demo .*--answers")
    done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith("model: offline (the built-in offline model")
    assert "[progress 1/9] move 1" in out
    # The offline model picks taken cells now and then; the tool asks again.
    assert re.search(r"^\[info\] [XO] chose cell \d, which is taken$", out, re.M)
    outcome = re.search(r"^outcome: (.*)$", out, re.M)
    assert outcome is not None
    assert outcome.group(1) in ("you won", "model won", "draw")
    assert "board:" in out


def test_the_readme_call_command_asks_each_form_at_the_terminal() -> None:
    argv = _readme_command(r"yieldmcp call .*book_flight")
    answers = "2027-01-05\n3\n2\n\n"  # depart, nights, seat 2) aisle, meal [yes]
    done = subprocess.run(
        argv, input=answers, capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "── Form: dates " in out
    assert "── Form: seat " in out
    assert "status: booked" in out
    assert "depart: 2027-01-05" in out
    assert "seat: aisle" in out


def test_call_prints_json_and_lists_tools() -> None:
    listed = run("call", "yieldmcp serve examples/book_flight.py", *WAIT)
    assert listed.returncode == 0
    assert listed.stdout.startswith("book_flight(destination: str): Book a flight")
    done = run_process(
        "call", "yieldmcp serve examples/book_flight.py", "book_flight", *WAIT,
        "--arg", "destination=Oslo", "--json",
        "--answer", 'dates={"depart": "2027-01-05", "nights": 2}',
        "--answer", 'seat={"seat": "aisle"}',
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["isError"] is False
    assert result["structuredContent"]["status"] == "booked"
    assert result["structuredContent"]["seat"] == "aisle"
    assert "Oslo" in result["structuredContent"]["tip"]


def test_a_verbs_flags_may_come_between_its_words() -> None:
    # `call SERVER --json TOOL`: argparse alone took TOOL as absent once a flag
    # followed SERVER, and refused the tool's name as an unrecognized argument.
    done = run(
        "call", "yieldmcp serve examples/book_flight.py", "--json", *WAIT,
        "book_flight", "--arg", "destination=Oslo", "--answer", 'dates="decline"',
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["structuredContent"]["status"] == "cancelled"


def test_a_declined_form_is_a_normal_result() -> None:
    done = run(
        "call", "yieldmcp serve examples/book_flight.py", "book_flight", *WAIT,
        "--arg", "destination=Oslo", "--answer", 'dates="decline"',
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "status: cancelled" in done.stdout
    # It never sampled: no model to name (it was printed on every call).
    assert "model:" not in done.stdout


def test_serve_reports_an_effect_never_yielded_at_its_line() -> None:
    fixture = ROOT / "tests/fixtures/forgetful_tools.py"
    line = next(
        number
        for number, text in enumerate(fixture.read_text().splitlines(), start=1)
        if "ctx.sample(" in text
    )
    served = f"{YIELDMCP} serve {fixture}"
    done = run_process("call", served, "forgets", *WAIT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "done"
    assert "model:" not in done.stdout  # nothing was asked
    # The server's stderr comes through call's: Python's warning line.
    assert f"{fixture}:{line}: EffectNeverYielded: ctx.sample(...) made an " in (
        done.stderr
    )
    assert "write `yield from ctx.sample(...)`" in done.stderr
    assert (
        f"{fixture}:{line + 1}: EffectNeverYielded: ctx.step(...) made " in done.stderr
    )


def test_the_model_is_named_when_the_call_samples() -> None:
    done = run(
        "call", "yieldmcp serve examples/book_flight.py", "book_flight", *WAIT,
        "--arg", "destination=Oslo",
        "--answer", 'dates={"depart": "2027-01-05", "nights": 2}',
        "--answer", 'seat={"seat": "aisle"}',
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert (
        lines.count(
            "model: offline (the built-in offline model: no API key, no network)"
        )
        == 1
    )


def test_the_servers_own_model_is_named_when_it_answered() -> None:
    # --model-always: the server's model answers, the client is never asked.
    served = f"{YIELDMCP} serve tests/fixtures/interop_server.py"
    served += " --model offline:7 --model-always"
    done = run("call", served, "ask", "--arg", "prompt=hi", *WAIT)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "model: offline:7 (the server's own model)"
    assert [line for line in lines if line.startswith("model:")] == lines[:1]
    assert lines[-1].startswith("offline:7:")  # what the tool was answered


async def test_a_real_provider_is_used_through_its_wire_api() -> None:
    completion = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-test",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "calm, warm"},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
    }
    async with trio.open_nursery() as nursery, open_fake_provider(nursery) as fake:
        fake.script.append(Reply.json(completion))
        env = {
            **os.environ,
            "OPENAI_API_KEY": "sk-test-123",
            "OPENAI_BASE_URL": f"{fake.url}/v1",
        }
        done = await trio.run_process(
            [YIELDMCP, "call", "yieldmcp serve examples/vibes.py", "sample_llm", *WAIT,
             "--arg", "prompt=Mood?", "--model", "openai:gpt-test", "--json"],
            capture_stdout=True, capture_stderr=True, cwd=ROOT, env=env, check=False,
        )  # fmt: skip
        nursery.cancel_scope.cancel()
    assert done.returncode == 0, done.stderr.decode()
    result = json.loads(done.stdout)
    assert result["structuredContent"]["text"] == "calm, warm"
    (request,) = fake.seen
    assert request.headers["authorization"] == "Bearer sk-test-123"
    assert request.body["model"] == "gpt-test"
    assert b"sk-test-123" not in done.stdout + done.stderr


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("8000", ("127.0.0.1", 8000)),
        ("0", ("127.0.0.1", 0)),
        ("localhost:8000", ("localhost", 8000)),
        ("0.0.0.0:65535", ("0.0.0.0", 65535)),
        ("[::1]:8000", ("::1", 8000)),
    ],
)
def test_http_takes_a_port_on_loopback_or_a_host_and_port(
    value: str, expected: tuple[str, int]
) -> None:
    assert _host_port(value) == expected


@pytest.mark.parametrize(
    "value",
    ["", "junk", "host:", ":8000", "[]:8000", "65536", "-1", "8o", "1.5", "²", "80 "],
)
def test_http_rejects_junk(value: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="expected PORT or HOST:PORT"):
        _host_port(value)


def test_a_bad_http_value_is_one_error_line_and_exit_code_2() -> None:
    done = run("serve", "examples/ttt.py", "--http", "junk")
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        "yieldmcp serve: error: argument --http: expected PORT or HOST:PORT "
        "(PORT 0-65535), got 'junk' (see --help)"
    ], done.stderr


def _listening(port: int) -> set[str]:
    """The local addresses (hex, as /proc shows them) listening on TCP ``port``."""
    found: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not os.path.exists(table):
            continue
        for row in Path(table).read_text().splitlines()[1:]:
            local, state = row.split()[1], row.split()[3]
            address, _, hex_port = local.partition(":")
            if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                found.add(address)
    return found


async def test_serve_http_with_a_port_alone_listens_on_loopback_only() -> None:
    process = await trio.lowlevel.open_process(
        [YIELDMCP, "-v", "serve", "examples/ttt.py", "--http", "0"],  # a free port
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    assert process.stderr is not None
    stderr = process.stderr
    logged = bytearray()
    try:
        with trio.fail_after(60):
            while not (
                found := re.search(rb"serving MCP at (http://(\S+):(\d+)/mcp)", logged)
            ):
                chunk = await stderr.receive_some()
                assert chunk, logged.decode()
                logged.extend(chunk)
            url, host, port = found[1].decode(), found[2].decode(), int(found[3])
            assert host == "127.0.0.1"
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            await stream.aclose()
            if os.path.exists("/proc/net/tcp"):
                assert _listening(port) == {"0100007F"}  # 127.0.0.1, nothing else
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_drain, stderr)  # -v logs every request
                async with connect(url) as client:
                    tools = await client.list_tools()
                nursery.cancel_scope.cancel()
        assert "play_ttt" in [tool["name"] for tool in tools]
    finally:
        with trio.CancelScope(shield=True):
            process.terminate()
            await process.wait()


async def _drain(stream: trio.abc.ReceiveStream) -> None:
    while await stream.receive_some():
        pass


def _output_to(where: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``yieldmcp ARGS`` with its standard output on a full disk, closed, or
    a pipe whose reader has gone (as ``| head -c0`` leaves it)."""
    line = ["/bin/sh", "-c", 'exec "$0" "$@" >&-', YIELDMCP, *args]
    if where != "closed":
        line = [YIELDMCP, *args]
    read, write = os.pipe()
    os.close(read)  # the reader has gone before anything is written
    try:
        with open("/dev/full", "w") as full:
            out = {"full": full, "closed": None, "gone": write}[where]
            return subprocess.run(
                line, stdout=out, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                timeout=120,
            )  # fmt: skip
    finally:
        os.close(write)


@pytest.mark.parametrize(
    ("where", "said"),
    [
        ("full", "yieldmcp: error: cannot write to standard output: "
                 "No space left on device"),
        ("closed", "yieldmcp: error: cannot write to standard output: it is closed"),
        ("gone", ""),  # `| head`: nothing to tell anyone
    ],
)  # fmt: skip
def test_output_that_cannot_be_written_is_one_line_and_exit_1(
    where: str, said: str
) -> None:
    # Each was a traceback (OSError, AttributeError, BrokenPipeError), and
    # `call` said "cannot start the server" of its own full disk.
    done = _output_to(where, "completion", "bash")
    assert (done.returncode, done.stderr.strip()) == (1, said)
    if where == "full":
        called = _output_to(where, "call", "yieldmcp serve examples/book_flight.py")
        assert (called.returncode, called.stderr.strip()) == (1, said)

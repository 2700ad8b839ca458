"""``yieldmcp serve FILE --reload`` (issue 40, item 2).

A real ``serve --reload`` process, over stdio (our client, 2025-11-25) and
over HTTP (the official SDK's client listening the 2026-07-28 way, and ours):
editing FILE or a module beside it offers the new tools and tells connected
clients; a broken edit keeps the old tools and prints one line; the fixed
edit after it loads; a call in flight finishes on the code it started with.
"""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
import textwrap
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import pytest
import trio
from mcp import Client as SdkClient
from mcp.shared.subscriptions import ToolsListChanged

from bridge.cli.reload import Reloader, offered_by
from bridge.client import Client, connect
from bridge.server import Server
from bridge.transports.stdio import StreamTransport
from tests.helpers import ROOT, STARTUP

pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

HELLO = """\
    from runtime import Context, tool
    from words import GREETING


    @tool
    def hello(ctx: Context) -> str:
        \"\"\"Say hello.\"\"\"
        return GREETING
"""

HELLO_AND_BYE = (
    HELLO
    + """

    @tool
    def bye(ctx: Context) -> str:
        \"\"\"Say goodbye.\"\"\"
        return "bye"
"""
)

BROKEN = """\
    from runtime import Context, tool


    @tool
    def hello(ctx: Context) -> str
        return "no colon above"
"""

SLOW = """\
    import time
    from pathlib import Path

    from runtime import Context, Op, tool


    def wait_for(go: str) -> None:
        Path(go + ".waiting").touch()  # the test edits the file only now
        while not Path(go).exists():
            time.sleep(0.02)


    @tool
    def slow(go: str, ctx: Context) -> Op[str]:
        \"\"\"Wait until the file ``go`` exists.\"\"\"
        yield from ctx.step(wait_for, go)
        return "{version}"
"""


def _write(path: Path, source: str) -> None:
    path.write_text(textwrap.dedent(source))


def _project(tmp_path: Path) -> Path:
    served = tmp_path / "tools.py"
    _write(served, HELLO)
    _write(tmp_path / "words.py", 'GREETING = "hello"\n')
    return served


class _Stderr:
    """The server's stderr, read as it comes."""

    def __init__(self, stream: trio.abc.ReceiveStream) -> None:
        self.stream = stream
        self.text = ""

    async def until(self, pattern: str) -> re.Match[str]:
        while not (found := re.search(pattern, self.text)):
            chunk = await self.stream.receive_some()
            assert chunk, f"the server exited; stderr: {self.text}"
            self.text += chunk.decode()
        return found


@contextlib.asynccontextmanager
async def _serving(served: Path, *flags: str) -> AsyncGenerator[tuple[Any, _Stderr]]:
    """``yieldmcp serve FILE --reload [flags]``: its stdio and its stderr."""
    process = await trio.lowlevel.open_process(
        [sys.executable, "-m", "bridge.cli", "serve", str(served), "--reload", *flags],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    assert process.stderr is not None
    try:
        yield process, _Stderr(process.stderr)
    finally:
        with trio.CancelScope(shield=True):
            if process.stdin is not None:
                await process.stdin.aclose()
            with trio.move_on_after(10):
                await process.wait()
            if process.returncode is None:
                process.kill()
                await process.wait()


@contextlib.asynccontextmanager
async def _over_stdio(served: Path) -> AsyncGenerator[tuple[Client, _Stderr]]:
    """Our client (2025-11-25) on ``serve FILE --reload``'s stdio, and its stderr."""
    async with _serving(served) as (process, stderr):
        transport = StreamTransport(process.stdout, process.stdin)
        async with Client.connect(
            transport, era="legacy", connect_timeout=STARTUP
        ) as client:
            yield client, stderr


class _Changes:
    """Counts the ``tools/list_changed`` our client hears."""

    def __init__(self, client: Client) -> None:
        self.count = 0
        self._new = trio.Event()
        forget = client.answers.on_tools_changed

        def heard() -> None:
            if forget is not None:
                forget()
            self.count += 1
            self._new.set()
            self._new = trio.Event()

        client.answers.on_tools_changed = heard

    async def beyond(self, count: int) -> None:
        while self.count <= count:
            await self._new.wait()


async def _names(client: Client) -> list[str]:
    return sorted(t["name"] for t in await client.list_tools())


async def _text(client: Client, tool: str, arguments: dict[str, Any]) -> str:
    result = await client.call_tool(tool, arguments)
    return result.text


async def test_stdio_clients_hear_edits_and_a_broken_edit_keeps_the_tools(
    tmp_path: Path,
) -> None:
    served = _project(tmp_path)
    with trio.fail_after(40):
        async with _over_stdio(served) as (client, stderr):
            changes = _Changes(client)
            assert await _names(client) == ["hello"]

            _write(served, HELLO_AND_BYE)
            await changes.beyond(0)
            assert await _names(client) == ["bye", "hello"]

            _write(tmp_path / "words.py", 'GREETING = "hi again"\n')  # beside it
            await changes.beyond(changes.count)
            assert await _text(client, "hello", {}) == "hi again"

            heard = changes.count
            _write(served, BROKEN)
            failed = await stderr.until(r"yieldmcp: reload failed: [^\n]*\n")
            assert changes.count == heard  # nothing changed for the client
            assert await _names(client) == ["bye", "hello"]
            assert await _text(client, "bye", {}) == "bye"

            _write(served, HELLO)
            await changes.beyond(heard)
            assert await _names(client) == ["hello"]
    line = failed[0].strip()
    assert re.fullmatch(
        rf"yieldmcp: reload failed: {re.escape(str(served))}:5: "
        r"SyntaxError: expected ':'",
        line,
    ), line
    assert "Traceback" not in stderr.text


async def test_http_clients_hear_edits_in_both_eras(tmp_path: Path) -> None:
    served = _project(tmp_path)
    with trio.fail_after(40):
        async with _serving(served, "--http", "0") as (_process, stderr):
            found = await stderr.until(r"serving MCP at (http://127\.0\.0\.1:\d+/mcp)")
            url = found[1]
            async with (
                SdkClient(url, mode="2026-07-28") as modern,
                modern.listen(tools_list_changed=True) as subscription,
                connect(url, era="legacy") as legacy,
            ):
                legacy_changes = _Changes(legacy)
                events = aiter(subscription)
                _write(served, HELLO_AND_BYE)
                assert await anext(events) == ToolsListChanged()
                await legacy_changes.beyond(0)
                listed = await modern.list_tools()
                assert sorted(t.name for t in listed.tools) == ["bye", "hello"]
                assert await _names(legacy) == ["bye", "hello"]

                _write(served, "raise RuntimeError('not today')\n")
                line = await stderr.until(r"yieldmcp: reload failed: [^\n]*\n")
                assert await _text(legacy, "bye", {}) == "bye"
    assert line[0].strip() == (
        f"yieldmcp: reload failed: {served}:1: RuntimeError: not today"
    )
    assert "Traceback" not in stderr.text


HANGING = """\
    import time
    from pathlib import Path

    Path(__file__ + ".importing").touch()
    time.sleep(3600)  # a connection made at import that never answers, say
"""


async def test_an_import_that_hangs_leaves_the_served_tools_answering(
    tmp_path: Path,
) -> None:
    served = _project(tmp_path)
    with trio.fail_after(40):
        async with _over_stdio(served) as (client, stderr):
            assert await _names(client) == ["hello"]
            _write(served, HANGING)
            importing = tmp_path / "tools.py.importing"
            while not importing.exists():
                await trio.sleep(0.02)
            with trio.fail_after(10):  # the import runs off the event loop
                assert await _text(client, "hello", {}) == "hello"
            line = await stderr.until(r"yieldmcp: [^\n]*still importing[^\n]*\n")
            _write(served, HELLO_AND_BYE)
            again = await stderr.until(r"yieldmcp: [^\n]*changed again[^\n]*\n")
            assert await _names(client) == ["hello"]
    assert line[0].strip() == (
        f"yieldmcp: {served} is still importing after 2 s; the tools it served "
        f"keep answering"
    )
    assert again[0].strip() == (
        f"yieldmcp: {served} changed again while its import still runs; "
        f"restart to load it if that import never ends"
    )


async def test_a_call_in_flight_finishes_on_the_code_it_started_with(
    tmp_path: Path,
) -> None:
    served = tmp_path / "slow.py"
    go = tmp_path / "go"
    _write(served, SLOW.replace("{version}", "first"))
    with trio.fail_after(40):
        async with _over_stdio(served) as (client, _stderr):
            changes = _Changes(client)
            results: list[str] = []

            async def call() -> None:
                results.append(await _text(client, "slow", {"go": str(go)}))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(call)
                waiting = tmp_path / "go.waiting"
                while not waiting.exists():  # the call waits in its step
                    await trio.sleep(0.02)
                _write(served, SLOW.replace("{version}", "second"))
                await changes.beyond(0)
                go.touch()
            assert results == ["first"]
            assert await _text(client, "slow", {"go": str(go)}) == "second"


def _reloading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, Server, Reloader, list[str]]:
    """A served project, its server, its Reloader and the lines it reports."""
    # A Reloader stops Python writing compiled files: not for the other tests.
    monkeypatch.setattr(sys, "dont_write_bytecode", sys.dont_write_bytecode)
    served = _project(tmp_path)
    from bridge.cli.loader import load_server

    server = load_server(str(served))
    lines: list[str] = []
    return served, server, Reloader(server, str(served), report=lines.append), lines


def test_a_reload_that_fails_leaves_the_offer_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    served, server, reloader, lines = _reloading(tmp_path, monkeypatch)
    hello = server.tools["hello"]
    twice = "\n\n@tool(name='hello')\ndef again(ctx: Context) -> str:\n    return ''\n"
    served.write_text(textwrap.dedent(HELLO) + twice)
    assert not reloader.reload()
    assert server.tools == {"hello": hello}
    assert lines == [
        f"reload failed: {served}: two tools are named 'hello': a server offers "
        "one tool per name (give one another with @tool(name=...))"
    ]
    _write(served, HELLO_AND_BYE)
    assert reloader.reload()
    assert sorted(server.tools) == ["bye", "hello"]
    assert server.tools["hello"] is not hello


def test_replace_announces_each_changed_list_once() -> None:
    from bridge.cli.loader import load_server

    server: Server = load_server(str(ROOT / "tests/fixtures/announce_server.py"))
    kept = offered_by(server)

    async def main() -> list[Any]:
        with server.listen() as changes:
            server.replace(*kept)
            heard: list[Any] = []
            while True:
                try:
                    heard.append(changes.receive_nowait())
                except trio.WouldBlock:
                    return heard

    # once per list, not once per item; no prompts, before or after
    assert trio.run(main) == ["tools", "resources"]


GROWING = """\
    from bridge.server import Server
    from runtime import Context, tool


    @tool
    def grown(ctx: Context) -> str:
        return "grown"


    @tool
    def grow(ctx: Context) -> str:
        \"\"\"Offer one more tool, through the module's `server`.\"\"\"
        server.add(grown)
        return "grew"


    server = Server([grow], name="{name}")
"""


def test_a_reloaded_server_variable_is_the_served_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", sys.dont_write_bytecode)
    served = tmp_path / "growing.py"
    _write(served, GROWING.replace("{name}", "first"))
    from bridge.cli.loader import load_server

    server = load_server(str(served))
    reloader = Reloader(server, str(served), report=lambda line: None)
    _write(served, GROWING.replace("{name}", "second"))
    assert reloader.reload()
    assert server.name == "first"  # the running server's settings stay
    module = sys.modules["yieldmcp_served_growing"]
    assert module.server is server  # so `grow` adds to what clients see


def _failed_reload(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: str
) -> tuple[Path, list[str]]:
    """The served file made ``code``, reloaded: the reload failed and the
    old tools stayed. The file, and the lines the reloader reported."""
    served, server, reloader, lines = _reloading(tmp_path, monkeypatch)
    hello = server.tools["hello"]
    _write(served, code)
    assert not reloader.reload()
    assert server.tools == {"hello": hello}
    return served, lines


@pytest.mark.parametrize(
    ("code", "said"),
    [
        ("import sys\nsys.exit(3)\n", "it calls sys.exit(3) when imported"),
        (  # a script's own main code, run at import
            "import argparse\nparser = argparse.ArgumentParser()\n"
            "parser.add_argument('--db', required=True)\nparser.parse_args([])\n",
            "it calls sys.exit(2) when imported",
        ),
    ],
)
def test_a_file_that_exits_at_import_is_a_failed_reload_not_the_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: str, said: str
) -> None:
    # SystemExit is no Exception: it ended `dev` and `serve --reload` with a
    # 70-line traceback, the tools gone.
    served, lines = _failed_reload(tmp_path, monkeypatch, code)
    line = code.count("\n")  # the served line that exits, not argparse's
    assert lines == [
        f"reload failed: {served}:{line}: {said} (put a script's own code "
        'under `if __name__ == "__main__":`)'
    ]


def test_a_keyboard_interrupt_raised_at_import_on_the_reload_thread_fails_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    served, _server, reloader, _lines = _reloading(tmp_path, monkeypatch)
    _write(served, "raise KeyboardInterrupt\n")
    assert reloader._load_on_thread() == (  # pyright: ignore[reportPrivateUsage]
        f"reload failed: {served}: it raises KeyboardInterrupt when imported"
    )


def test_serving_a_file_that_exits_at_import_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    served = tmp_path / "script.py"
    served.write_text("import sys\nsys.exit(3)\n")
    from bridge.cli.commands import main

    assert main(["serve", str(served)]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"yieldmcp: error: cannot load {served} (script.py, line 2): it calls "
        "sys.exit(3) when imported (put a script's own code under "
        '`if __name__ == "__main__":`)'
    ]


@pytest.mark.parametrize(
    ("code", "said"),
    [
        ("raise GeneratorExit('bye')\n", "GeneratorExit: bye"),
        (
            "class Boom(BaseException):\n    pass\nraise Boom('custom')\n",
            "Boom: custom",
        ),
        (  # the served code's own text, cut: not a 200 KB "line"
            "raise SystemExit('x' * 200_000)\n",
            f"it calls sys.exit('{'x' * 199}... (200,002 characters)) when imported",
        ),
        (
            "class R:\n    def __repr__(self):\n        raise RuntimeError\n"
            "raise SystemExit(R())\n",
            "it calls sys.exit(<R, whose RuntimeError hid it>) when imported",
        ),
    ],
)
def test_any_exception_at_import_is_one_line_of_the_served_codes(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    code: str,
    said: str,
) -> None:
    # A BaseException that is neither (GeneratorExit, the author's own) ended
    # `dev` and `serve --reload` with a 95-line traceback.
    served, lines = _failed_reload(tmp_path, monkeypatch, code)
    (line,) = lines
    assert said in line
    assert len(line) < 500
    from bridge.cli.commands import main

    assert main(["serve", str(served)]) == 1
    (error,) = capsys.readouterr().err.splitlines()
    assert said in error

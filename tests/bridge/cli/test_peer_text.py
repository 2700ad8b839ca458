"""Text from peers reaches the terminal without its control sequences.

A hostile server (``tests/fixtures/hostile_server.py``, written by hand) puts
CSI, OSC, DCS and C1 sequences, C0 controls and a lone ESC in everything it
controls: tool descriptions, results, errors, logs, progress, form messages
and field titles, a question's method. ``yieldmcp call`` runs in this process
(the server is a real subprocess) and what it printed is read back: none of
it may carry a control character other than newline and tab, and the words
around the sequences are still there. ``--json`` stays exact.
"""

from __future__ import annotations

import http.server
import io
import json
import re
import subprocess
import sys
import threading

import pytest
import trio

from bridge.cli.commands import main
from bridge.elicit import TerminalForm, line_reader, printable
from decoders import mcp as mcp_decode
from tests.bridge.cli.terminal import YIELDMCP, Terminal
from tests.fixtures import hostile_server
from tests.fixtures.hostile_server import HOSTILE
from tests.helpers import ROOT

SERVER = f"{sys.executable} tests/fixtures/hostile_server.py"
CLEAN = "plain red  é ✓ end"  # what a terminal should show of HOSTILE
ERROR = "yieldmcp: error: "
CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def call(capfd: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["call", SERVER, *args])
    out, err = capfd.readouterr()
    return code, out, err


def assert_clean(*texts: str) -> None:
    for text in texts:
        found = CONTROLS.search(text)
        assert found is None, f"{found.group()!r} in {text!r}"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (HOSTILE, CLEAN),
        ("a\tb\nc", "a\tb\nc"),  # tabs and newlines stay
        ("\x1b[38;2;1;2;3mrgb\x1b[m", "rgb"),  # CSI with many parameters
        ("\x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\", "link"),  # OSC 8 with ST
        ("\x1bPq#0;2;0;0;0\x1b\\", ""),  # DCS (sixel)
        ("\x1b_apc\x1b\\\x1b^pm\x1b\\\x1bXsos\x1b\\", ""),  # APC, PM, SOS
        ("\x1bc\x1b7\x1b(0x", "x"),  # reset, save cursor, charset
        ("\x9b2J\x9d0;t\x07\x90q\x9c", ""),  # C1 CSI, OSC, DCS
        ("tail \x1b[12", "tail 12"),  # an unfinished CSI loses its ESC
        ("tail \x1b]0;title", "tail 0;title"),  # an unterminated OSC too
        ("lone \x1b", "lone "),
        ("del\x7f nul\x00 bs\x08 cr\r", "del nul bs cr"),
        ("日本語 \u200b emoji 🎉 \u2028", "日本語 \u200b emoji 🎉 \u2028"),
        ("invoice\u202egnp.exe", "invoicegnp.exe"),  # a right-to-left override
        (
            "\u202a\u202b\u202c\u202d x \u2066\u2067\u2068\u2069",
            " x ",
        ),  # embeds, isolates
        ("שלום\u200f \u200eabc \u061c", "שלום\u200f \u200eabc \u061c"),  # marks stay
    ],
)
def test_printable_strips_sequences_and_keeps_unicode(text: str, shown: str) -> None:
    assert printable(text) == shown


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
def test_results_logs_and_progress_are_shown_clean(
    capfd: pytest.CaptureFixture[str], era: str
) -> None:
    code, out, err = call(capfd, "result", "--era", era)
    assert code == 0, err
    assert_clean(out, err)
    lines = out.splitlines()
    assert f"[info] {CLEAN}" in lines  # a log
    assert f"[{CLEAN}] " + '{"k": ' in out  # a log's level and data
    # Only the notice the spec's types allow (the server sends others first:
    # a string, a list, 10**400 as progress, ...; each was a traceback).
    progress = [line for line in lines if line.startswith("[progress")]
    assert progress == [f"[progress 1/2] {CLEAN}"]
    assert lines[-2:] == [CLEAN, f"second line {CLEAN}"]  # the result


def test_structured_content_is_shown_clean(capfd: pytest.CaptureFixture[str]) -> None:
    code, out, err = call(capfd, "result", "--arg", "structured=true")
    assert code == 0, err
    assert_clean(out, err)
    assert f"said: {CLEAN}" in out.splitlines()
    assert f"    {CLEAN}" in out.splitlines()  # a multi-line field


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
def test_the_servers_model_names_are_one_clean_line(
    capfd: pytest.CaptureFixture[str], era: str
) -> None:
    code, out, err = call(capfd, "result", "--arg", "models=true", "--era", era)
    assert code == 0, err
    assert_clean(out, err)
    named = [line for line in out.splitlines() if line.startswith("model: ")]
    assert named == [
        "model: red model: forged (the server's own model), invoicegnp.exe, "
        f"{CLEAN} (the server's own models)"
    ]
    assert "\u202e" not in out


def test_json_output_stays_exact(capfd: pytest.CaptureFixture[str]) -> None:
    code, out, err = call(capfd, "result", "--json")
    assert code == 0, err
    assert_clean(out)  # every control character is written as a JSON escape
    payload = json.loads(out)
    assert payload["content"][0]["text"] == f"{HOSTILE}\nsecond line {HOSTILE}"


@pytest.mark.parametrize(
    ("tool", "era", "shown"),
    [
        ("tool_error", "legacy", f"tool error: {CLEAN}"),
        ("error", "legacy", f"{ERROR}the server refused: {CLEAN} (-32603)"),
        ("error", "2026-07-28", f"{ERROR}the server refused: {CLEAN} (-32603)"),
        ("method", "2026-07-28", f"{ERROR}this client does not answer {CLEAN}"),
    ],
)
def test_errors_from_the_server_are_one_clean_line(
    capfd: pytest.CaptureFixture[str], tool: str, era: str, shown: str
) -> None:
    code, out, err = call(capfd, tool, "--era", era)
    assert code == 1
    assert_clean(out, err)
    assert err.splitlines() == [shown]


def test_the_listing_and_describe_are_clean(capfd: pytest.CaptureFixture[str]) -> None:
    code, out, err = call(capfd)
    assert code == 0, err
    assert_clean(out, err)
    assert f"result(): {CLEAN}" in out.splitlines()
    code, out, err = call(capfd, "result", "--describe")
    assert code == 0, err
    assert_clean(out, err)
    assert f"  {CLEAN}" in out.splitlines()


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
def test_scripted_forms_and_unused_keys_are_clean(
    capfd: pytest.CaptureFixture[str], era: str
) -> None:
    code, out, err = call(capfd, "form", "--era", era, "--answer", 'nope={"name": "x"}')
    assert code == 0, err
    assert_clean(out, err)


def test_log_records_quoting_a_peer_are_clean() -> None:
    """``-vv`` logs why ``server/discover`` failed: the server's own words."""
    done = subprocess.run(
        [YIELDMCP, "-vv", "call", f"{SERVER} --no-discover", "result"],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert_clean(done.stdout, done.stderr)
    assert f"server/discover failed (peer error -32601: {CLEAN})" in done.stderr


async def test_a_terminal_form_shows_the_servers_words_clean() -> None:
    shown: list[str] = []
    request = mcp_decode.elicitation_request(hostile_server.form_params())
    form = TerminalForm(
        read_line=line_reader(["", "x", "9", "1"], echo=shown.append),
        write=shown.append,
    )
    with trio.fail_after(5):
        reply = await form.handle(request)
    assert reply.action == "accept"
    assert reply.content == {"name": "x", "pick": "a"}
    assert_clean(*shown)
    assert CLEAN in shown  # the message
    assert f"[1/2] {CLEAN} (required)" in shown  # the field's title
    assert f"  1) {CLEAN} (a)" in shown  # a choice's title


def test_a_real_terminal_never_gets_the_servers_sequences() -> None:
    """The whole ``call`` at a pty: a form asked at the keyboard, then the result."""
    terminal = Terminal([YIELDMCP, "call", SERVER, "form", "--era", "legacy"])
    try:
        terminal.expect(f"{CLEAN}: ")
        terminal.type("x\n")
        terminal.expect("pick: ")
        terminal.type("2\n")
        assert terminal.wait() == 0, terminal.screen
    finally:
        terminal.close()
    screen = terminal.screen.replace("\r\x1b[K", "")  # our own line rewrite
    assert_clean(screen)
    assert CLEAN in screen
    assert "answered:" in screen


class _HostileAuthorizationServer(http.server.BaseHTTPRequestHandler):
    """An MCP endpoint that wants a token, and an authorization server whose
    registration endpoint refuses in hostile words (one server, both roles)."""

    def do_POST(self) -> None:
        origin = f"http://127.0.0.1:{self.server.server_address[1]}"
        if self.path == "/mcp":
            challenge = f'Bearer resource_metadata="{origin}/prm"'
            self._answer(401, b"{}", {"WWW-Authenticate": challenge})
        else:  # /register: raw text, not JSON (which would escape it)
            self._answer(400, HOSTILE.encode(), {"Content-Type": "text/plain"})

    def do_GET(self) -> None:
        origin = f"http://127.0.0.1:{self.server.server_address[1]}"
        if self.path == "/prm":
            document = {"resource": f"{origin}/mcp", "authorization_servers": [origin]}
        else:  # the authorization server's metadata
            document = {
                "issuer": origin,
                "authorization_endpoint": f"{origin}/authorize",
                "token_endpoint": f"{origin}/token",
                "registration_endpoint": f"{origin}/register",
                "code_challenge_methods_supported": ["S256"],
            }
        self._answer(200, json.dumps(document).encode())

    def _answer(
        self, status: int, payload: bytes, headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        sent = {"Content-Type": "application/json", **(headers or {})}
        for name, value in sent.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_an_authorization_servers_error_is_one_clean_line() -> None:
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), _HostileAuthorizationServer
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/mcp"
        done = subprocess.run(
            [YIELDMCP, "call", url, "whoami", "--oauth-no-browser"],
            capture_output=True, text=True, cwd=ROOT, timeout=120,
        )  # fmt: skip
    finally:
        server.shutdown()
        server.server_close()
    assert done.returncode == 1
    assert_clean(done.stdout, done.stderr)
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"{ERROR}authorization failed: registration at ")
    assert line.endswith(f"was refused: HTTP 400 {CLEAN}")


def test_a_warning_naming_the_servers_arguments_is_one_short_clean_line(
    capfd: pytest.CaptureFixture[str],
) -> None:
    code, out, err = call(capfd, "form", "--arg", "nope=1", "--answer", '*="decline"')
    assert code == 0, err
    assert_clean(out, err)
    [warning] = [line for line in err.splitlines() if "has no argument nope" in line]
    assert warning.endswith(" and 29 more")  # 12 of the 41 names, each cut
    assert len(warning) < 1000


@pytest.mark.parametrize(
    "pages", [["--endless-pages"], ["--endless-pages", "--new-cursors"]]
)
async def test_a_list_with_endless_pages_is_read_a_bounded_number_of_times(
    pages: list[str],
) -> None:
    # A server whose tools/list always names a next page, looping or with a
    # new cursor each time: the list ends (a loop read once round, new
    # cursors for at most 100 pages).
    from bridge.client import connect

    with trio.fail_after(60):
        async with connect(
            [sys.executable, str(hostile_server.__file__), *pages]
        ) as client:
            tools = await client.list_tools()
    assert len(tools) == (2 if len(pages) == 1 else 100)


async def test_a_list_in_pages_is_bounded_in_all_not_only_per_page(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Each page is one message (16 MiB at most), and 100 pages of them would
    # be held whole: max_listing bounds the list, and the page that would
    # pass it is left out.
    from bridge.client import connect

    pages = ["--endless-pages", "--new-cursors", "--big-pages"]
    with trio.fail_after(60):
        async with connect(
            [sys.executable, str(hostile_server.__file__), *pages],
            max_listing=3 * (1 << 20) + 1000,
        ) as client:
            tools = await client.list_tools()
    assert len(tools) == 3
    [warning] = [r.getMessage() for r in caplog.records if "max_listing" in r.message]
    assert warning == (
        "tools/list: its pages take more than 3146728 characters (the client's "
        "max_listing); read the first 3"
    )


def test_max_listing_is_a_flag_of_call(
    capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    pages = f"{SERVER} --endless-pages --new-cursors --big-pages"
    code = main(["call", pages, "--max-listing", str(2 * (1 << 20) + 1000)])
    out, err = capfd.readouterr()
    assert code == 0, err
    assert any("max_listing); read the first 2" in r.message for r in caplog.records)
    assert out.count("result") == 2


async def test_a_server_that_asks_and_never_reads_ends_the_session() -> None:
    # Its pings were answered, and each answer waited for it to read, a task
    # apiece: 860 MB in 20 s, and no end. More than max_message bytes of
    # answers waiting for the server now end the session, saying why.
    from bridge.client import connect
    from runtime.errors import RemoteProtocolError

    with trio.fail_after(60):
        async with connect(
            [sys.executable, str(hostile_server.__file__)], era="legacy"
        ) as client:
            with pytest.raises(RemoteProtocolError) as caught:
                await client.call_tool("unread")
    assert "the server does not read what it asks for" in str(caught.value)


async def test_a_round_of_a_thousand_questions_is_refused_unanswered() -> None:
    # Each question may be a model call the user pays for: a server asking
    # more than max_questions in one round gets none answered.
    from bridge.client import connect
    from runtime.errors import RemoteProtocolError

    class Counting:
        supports_tools = False
        asked = 0

        async def complete(self, request: object) -> object:
            Counting.asked += 1
            raise AssertionError("no question of the round may be answered")

    with trio.fail_after(60):
        async with connect(
            [sys.executable, str(hostile_server.__file__)],
            era="2026-07-28",
            sampler=Counting(),
        ) as client:
            with pytest.raises(RemoteProtocolError) as caught:
                await client.call_tool("flood")
    assert str(caught.value) == (
        "the server asked 1000 questions in one round; the client answers at most "
        "64 (--max-questions, or connect(max_questions=))"
    )
    assert Counting.asked == 0


async def test_a_task_asking_without_end_gets_max_rounds_rounds_answered() -> None:
    # A call answered with a task was followed with no bound on its rounds:
    # 64 model calls a round, forever (1.36 GB in 30 s with long keys).
    from bridge.client import connect
    from runtime.errors import RemoteProtocolError
    from runtime.testing import text

    class Counting:
        supports_tools = False
        asked = 0

        async def complete(self, request: object) -> object:
            Counting.asked += 1
            return text("fine")

    with trio.fail_after(60):
        async with connect(
            [sys.executable, str(hostile_server.__file__)],
            era="2026-07-28",
            sampler=Counting(),
            max_rounds=5,
        ) as client:
            with pytest.raises(RemoteProtocolError) as caught:
                await client.call_tool("endless_task")
    assert str(caught.value) == (
        "task T still needed input after 5 rounds (the client's max_rounds)"
    )
    assert Counting.asked == 5 * 2


async def test_an_answer_nested_past_the_parser_fails_its_call_at_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Nested past the parser's depth: the client warned "not valid JSON" and
    # the call waited on for ever (--timeout bounded it). Its id is found
    # with Python's json, and the call fails saying why.
    from bridge.client import connect
    from runtime.errors import RemoteProtocolError

    with trio.fail_after(60):
        async with connect(
            [sys.executable, str(hostile_server.__file__)],
            era="legacy",
            validate_output=False,
        ) as client:
            with pytest.raises(RemoteProtocolError) as caught:
                await client.call_tool("deep")
    assert str(caught.value) == (
        "the reply cannot be read: a response nested deeper than 200 levels, "
        "the most a message may"
    )
    assert not [r for r in caplog.records if "not valid JSON" in r.getMessage()]


async def test_live_questions_past_max_questions_at_once_are_refused() -> None:
    # 2025-11-25: the server sends a hundred samples without waiting.
    from bridge.client import connect
    from runtime import Text
    from runtime.lowlevel import SampleReply

    class Slow:
        supports_tools = False

        async def complete(self, request: object) -> SampleReply:
            await trio.sleep(0.5)  # all hundred arrive while these are open
            return SampleReply(content=(Text("ok"),), model="slow")

    with trio.fail_after(60):
        async with connect(
            [sys.executable, str(hostile_server.__file__)], era="legacy", sampler=Slow()
        ) as client:
            result = await client.call_tool("flood")
    assert result.text == "answered 64, refused 36"


@pytest.mark.parametrize("data", ["x" * 1_000_000, {"rows": ["y" * 100] * 10_000}])
def test_a_huge_log_notice_is_shown_in_part(data: object) -> None:
    # A server's log notice is not the result: a megabyte of it reaches the
    # terminal as its first 4096 characters and a count of the rest.
    from bridge.cli.console import MAX_LOG_SHOWN, Display

    out = io.StringIO()
    Display(out, quiet=False).log("info", data, None)
    shown = out.getvalue()
    assert len(shown) < MAX_LOG_SHOWN + 100
    assert shown.rstrip().endswith(" more characters)")
    assert shown.startswith("[info] ")


def test_lists_of_the_wrong_shapes_are_shown_as_far_as_they_go(
    capfd: pytest.CaptureFixture[str],
) -> None:
    # Each item below was a traceback (AttributeError, TypeError).
    odd = f"{sys.executable} tests/fixtures/odd_listing.py"
    assert main(["call", odd, "--era", "legacy"]) == 0
    out, err = capfd.readouterr()
    assert out.splitlines() == [
        "listy()",
        "loose(a?: Any, b?: list)",  # "required" must be a list
        "",
        "prompts:",
        "  p()",
    ]
    for tool in ("listy", "loose"):
        assert main(["call", odd, tool, "--describe", "--era", "legacy"]) == 0
        out, err = capfd.readouterr()
        assert out.startswith(f"{tool}\n"), err
    assert main(["call", odd, "loose", "--arg", "a=1", "--era", "legacy"]) == 0
    assert capfd.readouterr().out.strip() == "ok"

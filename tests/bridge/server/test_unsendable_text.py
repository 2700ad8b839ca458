"""Text UTF-8 cannot carry, and log data JSON cannot, from a served tool.

A lone surrogate (bytes decoded with ``errors="surrogateescape"``: a file
name, a subprocess's output) fits in a Python ``str`` but not in UTF-8, and
an exception is not JSON. Both used to fail the server's write of the reply
or notice: a traceback in the server's log and ``Internal error (-32603)``
for the caller. A result, a sampling prompt and a form's message say what is
wrong as the tool's error (they are data: not changed silently); an error
message, a log and a progress message are sent with the escape, and a log of
an object as its ``repr``: logging never fails a call.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
import trio

from bridge.client import connect
from runtime.errors import PeerError
from tests.bridge.cli.inprocess import yieldmcp
from tests.helpers import ROOT

SERVED = "yieldmcp serve tests/fixtures/undecodable.py"
ERAS = ["legacy", "2026-07-28"]


def _call(tool: str, era: str) -> tuple[int, str, str]:
    done = yieldmcp("call", SERVED, tool, "--era", era, "--connect-timeout", "60")
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize(("tool", "index"), [("name", 3), ("listing", 14)])
def test_a_result_utf8_cannot_carry_is_the_tools_error(
    tool: str, index: int, era: str
) -> None:
    code, out, err = _call(tool, era)
    assert code == 1
    assert out == ""
    assert err == (
        f"tool error: Tool {tool!r} returned text that is not valid Unicode: "
        f"'\\udce9' at index {index} is a lone surrogate (left by decoding bytes "
        f"with errors='surrogateescape'); decode with errors='replace', or send "
        f"the bytes in base64\n"
    )


@pytest.mark.parametrize("era", ERAS)
def test_an_error_message_keeps_the_name_as_its_escape(era: str) -> None:
    code, out, err = _call("refuses", era)
    assert (code, out) == (1, "")
    assert err == "tool error: cannot open caf\\udce9.txt\n"


@pytest.mark.parametrize("era", ERAS)
def test_logs_and_progress_never_fail_the_call(era: str) -> None:
    code, out, err = _call("chatty", era)
    assert code == 0, err
    assert out.splitlines() == [
        "[info] opening caf\\udce9.txt",
        "[error] ValueError('bad header')",
        "[progress 1/2] caf\\udce9.txt",
        "done",
    ]


def _strict(text: str) -> Any:
    """JSON as a strict parser reads it (JavaScript's JSON.parse, the
    TypeScript SDK's): NaN and Infinity are not JSON."""

    def refuse(constant: str) -> Any:
        raise ValueError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


def test_a_log_of_numbers_json_has_no_form_for_is_json() -> None:
    # {"ratio": NaN} went out as it is: not JSON, so a strict client could
    # not read the notification (or the stream it came on).
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "strict", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel",
         "params": {"level": "info"}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
         "params": {"name": "measures", "arguments": {}}},
    ]  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "bridge.cli", "serve", "tests/fixtures/undecodable.py"],
        input="".join(json.dumps(r) + "\n" for r in requests),
        capture_output=True, text=True, cwd=ROOT, timeout=60,
    )  # fmt: skip
    messages = [_strict(line) for line in done.stdout.splitlines()]
    (log,) = [m for m in messages if m.get("method") == "notifications/message"]
    assert log["params"]["data"] == {"ratio": "nan", "top": ["inf"]}
    assert messages[-1]["result"]["content"][0]["text"] == "measured"


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize(
    ("tool", "what", "index"),
    [
        ("summarizes", "The sampling request's message 1", 13),
        ("deletes", "The elicitation's message", 10),
    ],
)
def test_a_question_utf8_cannot_carry_is_the_tools_error(
    tool: str, what: str, index: int, era: str
) -> None:
    # Before it is sent: its digest (replay's identity) is made all the same.
    code, out, err = _call(tool, era)
    assert (code, out) == (1, "")
    assert err == (
        f"tool error: {what} is not valid Unicode: '\\udce9' at index {index} is "
        f"a lone surrogate (left by decoding bytes with errors='surrogateescape'); "
        f"decode with errors='replace', or send the bytes in base64\n"
    )


@pytest.mark.parametrize("era", ERAS)
async def test_a_reply_that_cannot_be_written_is_an_error_not_the_servers_end(
    era: str,
) -> None:
    # A resource's text is the handler's own: the reply cannot be written, so
    # the request is answered -32603 (it ended the 2025-11-25 stdio server's
    # process, and every session with it), and the server goes on.
    command = [
        sys.executable,
        "-m",
        "bridge.cli",
        "serve",
        "tests/fixtures/undecodable.py",
    ]
    with trio.fail_after(60):
        async with connect(command, era=era) as client:  # type: ignore[arg-type]
            with pytest.raises(PeerError) as refused:
                await client.request("resources/read", {"uri": "notes://undecodable"})
            assert refused.value.code == -32603
            assert "the reply could not be written" in str(refused.value)
            assert (await client.call_tool("refuses")).is_error  # still serving


@pytest.mark.parametrize("where", ["resource", "template", "instructions"])
def test_a_definition_utf8_cannot_carry_is_refused_when_made(where: str) -> None:
    # resources/list (or resources/templates/list) answered -32603 for every
    # resource, with a logged traceback; instructions made initialize fail,
    # so no client could connect. Tools and prompts were refused already.
    from bridge.server import Server, resource, resource_template
    from runtime.errors import InvalidTool

    bad = b"caf\xe9".decode("utf-8", "surrogateescape")

    def define() -> object:
        if where == "resource":
            return resource("notes://today", description=bad)(lambda: "notes")
        if where == "template":
            return resource_template("notes://{day}", title=bad)(lambda day: "")
        return Server([], instructions=f"Use {bad} first")

    with pytest.raises(InvalidTool, match="lone surrogate") as refused:
        define()
    assert "\n" not in str(refused.value)

"""A server's words can print no line of their own, nor an endless one, nor
``--json`` that is not JSON.

A small hostile stdio server (:data:`SERVER`, written to a file by each test)
puts a line break followed by ``yieldmcp: error: FORGED`` in every word it
controls: names, titles, URIs, MIME types, a log's level, a progress
message, a structured field's name, a tool error. ``yieldmcp call`` runs in
this process (the server is a real subprocess): no line it prints may start
as one of ours with the server's words, what is one line stays one line, and
what keeps its lines has them indented. A megabyte in a one-line field is
cut, and ``NaN`` under ``--json`` is refused in one line.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from bridge.cli.console import MAX_LOG_SHOWN
from bridge.elicit import MAX_LINE_SHOWN
from tests.bridge.cli.inprocess import Done, yieldmcp

FORGED = "yieldmcp: error: FORGED"
EVIL = f"\x1b[31mred\x1b[0m\n{FORGED}\r\n{FORGED}\u2028{FORGED}"
ONE = f"red {FORGED} {FORGED} {FORGED}"  # EVIL, shown on one line
BIG = 1_000_000

SERVER = r"""
import json, sys

EVIL, BIG, MODE = json.loads(sys.argv[1]), int(sys.argv[2]), sys.argv[3]


def send(message=None, raw=None):
    sys.stdout.write((raw or json.dumps(message)) + "\n")
    sys.stdout.flush()


def tool():
    name = "t" * BIG if MODE == "long" else "t" + EVIL
    properties = {
        "k" + EVIL: {"type": "string" + EVIL, "default": "d" + EVIL},
        "n": {"type": "number", "default": float("nan")},
    }
    return {"name": name, "title": "T" + EVIL, "description": "D",
            "inputSchema": {"type": "object", "properties": properties}}


def call(id, kind, token):
    level = "L" * BIG if MODE == "long" else "warn\nyieldmcp: error: FORGED"
    message = "P" * BIG if MODE == "long" else "PROG" + EVIL
    send({"jsonrpc": "2.0", "method": "notifications/message",
          "params": {"level": level, "data": "LOG"}})
    send({"jsonrpc": "2.0", "method": "notifications/progress",
          "params": {"progressToken": token, "progress": 1, "total": 2,
                     "message": message}})
    if kind == "nan":
        send(raw='{"jsonrpc": "2.0", "id": %d, "result": {"content": [], '
                 '"structuredContent": {"a": NaN, "b": -Infinity}}}' % id)
        return
    if kind == "error":
        content = [{"type": "text", "text": "TE" + EVIL}]
        send({"jsonrpc": "2.0", "id": id,
              "result": {"content": content, "isError": True}})
        return
    content = [
        {"type": "text", "text": "x"},
        {"type": "resource_link", "uri": "file:///l" + EVIL, "name": "n" + EVIL},
        {"type": "resource",
         "resource": {"uri": "file:///u" + EVIL, "blob": "aGk=",
                      "mimeType": "m/b" + EVIL}},
        {"type": "image", "data": "aGk=", "mimeType": "image/png" + EVIL},
    ]
    structured = {"k" + EVIL: "v" + EVIL, "s": "one\ntwo"}
    send({"jsonrpc": "2.0", "id": id,
          "result": {"content": content, "structuredContent": structured}})


for line in sys.stdin:
    message = json.loads(line)
    method, id = message.get("method"), message.get("id")
    params = message.get("params") or {}
    if id is None:
        continue
    if method == "initialize":
        result = {"protocolVersion": "2025-11-25", "serverInfo":
                  {"name": "n", "version": "1"}, "capabilities":
                  {"tools": {}, "logging": {}, "resources": {}, "prompts": {}}}
    elif method == "tools/list":
        result = {"tools": [tool()]}
    elif method == "resources/list":
        result = {"resources": [{"uri": "file:///r" + EVIL, "name": "r" + EVIL}]}
    elif method == "resources/templates/list":
        result = {"resourceTemplates": [
            {"uriTemplate": "file:///{x}" + EVIL, "name": "rt" + EVIL}]}
    elif method == "prompts/list":
        result = {"prompts": [{"name": "p" + EVIL,
                               "arguments": [{"name": "a" + EVIL}]}]}
    elif method == "tools/call":
        token = params.get("_meta", {}).get("progressToken")
        call(id, params.get("name"), token)
        continue
    else:
        result = {}
    send({"jsonrpc": "2.0", "id": id, "result": result})
"""


def server(tmp_path: Path, mode: str = "evil") -> str:
    script = tmp_path / "forging_server.py"
    script.write_text(SERVER)
    words = json.dumps(EVIL)
    return f"{sys.executable} {script} '{words}' {BIG} {mode}"


def call(*args: str) -> Done:
    return yieldmcp("call", *args, "--era", "legacy")


def forged(done: Done) -> list[str]:
    """The lines the server wrote as if they were ours."""
    lines = done.stdout.splitlines() + done.stderr.splitlines()
    return [line for line in lines if line.startswith(FORGED)]


def test_the_listing_shows_each_servers_word_on_one_line(tmp_path: Path) -> None:
    done = call(server(tmp_path))
    assert done.returncode == 0, done.stderr
    assert forged(done) == []
    default = json.dumps("d" + EVIL, ensure_ascii=False).replace("\u2028", " ")
    assert done.stdout.splitlines() == [
        f"t{ONE}(k{ONE}: string{ONE} = {default}, n: float = nan): D",
        "",
        "resources:",
        f"  r{ONE} <file:///r{ONE}>",
        "",
        "resource templates:",
        f"  rt{ONE} <file:///{{x}}{ONE}>",
        "",
        "prompts:",
        f"  p{ONE}(a{ONE}?)",
    ]


def test_describe_shows_each_servers_word_on_one_line(tmp_path: Path) -> None:
    done = call(server(tmp_path), f"t{EVIL}", "--describe")
    assert done.returncode == 0, done.stderr
    assert forged(done) == []
    assert done.stdout.splitlines()[:5] == [
        f"t{ONE}",
        "  D",
        "",
        "inputs (--arg NAME=VALUE):",
        f"  k{ONE}: k{ONE} (optional) [default d{ONE}]",
    ]


def test_notices_and_the_result_show_each_servers_word_on_one_line(
    tmp_path: Path,
) -> None:
    done = call(server(tmp_path), f"t{EVIL}")
    assert done.returncode == 0, done.stderr
    assert forged(done) == []
    assert done.stdout.splitlines() == [
        f"[warn {FORGED}] LOG",
        f"[progress 1/2] PROG{ONE}",
        f"k{ONE}:",  # a value of many lines: under its name, indented
        "    vred",
        f"    {FORGED}",
        f"    {FORGED}",
        f"    {FORGED}",
        "s:",
        "    one",
        "    two",
        f"n{ONE} <file:///l{ONE}>",
        f"[resource file:///u{ONE}, m/b{ONE}, 3 B]",
        f"[image image/png{ONE}, 2 B]",
    ]


def test_a_tool_errors_lines_after_the_first_are_indented(tmp_path: Path) -> None:
    done = call(server(tmp_path), "error")
    assert done.returncode == 1
    assert forged(done) == []
    assert done.stderr.splitlines() == [
        "tool error: TEred",
        f"    {FORGED}",
        f"    {FORGED}",
        f"    {FORGED}",
    ]


def test_a_notices_one_line_words_are_cut(tmp_path: Path) -> None:
    # A megabyte as a log's level and as a progress message: each notice one
    # line, cut and counted (the log's data was already, at MAX_LOG_SHOWN).
    done = call(server(tmp_path, "long"), "t" * BIG)
    assert done.returncode == 0, done.stderr
    level, progress, *_ = done.stdout.splitlines()  # each, one line
    assert level.startswith("[LLL")
    assert len(level) < 120
    assert level.endswith(f"… ({BIG - 64:,} more characters)] LOG")
    assert progress.startswith("[progress 1/2] PPP")
    assert len(progress) < MAX_LOG_SHOWN + 100
    assert progress.endswith(f"… ({BIG - MAX_LOG_SHOWN:,} more characters)")


def test_a_name_in_the_listing_is_cut(tmp_path: Path) -> None:
    done = call(server(tmp_path, "long"))
    assert done.returncode == 0, done.stderr
    line = done.stdout.splitlines()[0]
    assert len(line) < MAX_LINE_SHOWN + 500
    assert line.startswith("ttt")
    assert f"… ({BIG - MAX_LINE_SHOWN:,} more characters)(k" in line


def test_json_output_refuses_nan_in_one_line(tmp_path: Path) -> None:
    done = call(server(tmp_path), "nan", "--json")
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        "yieldmcp: error: the server broke the protocol: its answer holds NaN "
        "or Infinity, which JSON has not (without --json it is shown)"
    ]
    # Without --json the result is shown.
    done = call(server(tmp_path), "nan")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-2:] == ["a: nan", "b: -inf"]


def test_a_listing_holding_nan_is_refused_under_json(tmp_path: Path) -> None:
    done = call(server(tmp_path), "--json")
    assert done.returncode == 1
    assert done.stdout == ""
    assert "holds NaN or Infinity, which JSON has not" in done.stderr
